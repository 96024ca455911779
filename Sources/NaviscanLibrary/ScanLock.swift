import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on OUT/naviscan.lock (flock), held for the whole scan: a second naviscan on
/// the same output directory refuses to start. The kernel drops it if the process dies.
public final class ScanLock {
    private let fd: Int32

    public init(path: String, outputDirectory: String) throws {
        fd = open(path, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else {
            throw LibraryError.outputUnwritable(path: outputDirectory, reason: String(cString: strerror(errno)))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = pread(fd, &buffer, 63, 0)
            let holder = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
            close(fd)
            throw LibraryError.alreadyRunning(path: outputDirectory, holder: holder)
        }
        let text = "pid \(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
