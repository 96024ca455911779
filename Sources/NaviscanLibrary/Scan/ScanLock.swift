import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NaviscanStore

/// An exclusive lock on OUT/naviscan.lock (flock): whoever writes the store and its files holds it.
/// A scan holds it for its whole run, so a second scan on the same output refuses to start; the
/// server holds it for each precompute it analyses, briefly, and a scan starting meanwhile waits
/// for it. The kernel drops it if the process dies.
public final class ScanLock {
    public enum Owner: String, Sendable {
        case scan = "naviscan scan"
        case precompute = "naviscan serve (precompute)"
        case merge = "naviscan merge"
        case watch = "naviscan serve (keeping the library analysed)"
        case tag = "naviscan tag"
    }

    private let fd: Int32

    /// Takes the lock, or throws `alreadyRunning` naming the holder. A scan or merge (and the
    /// server's own background scan) waits up to `serverWait` seconds for a server's precompute to
    /// finish; anything else is refused at once.
    public init(path: String, outputDirectory: String, owner: Owner, serverWait: Double = 120) throws {
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw LibraryError.outputUnwritable(path: outputDirectory, reason: String(cString: strerror(errno)))
        }
        let deadline = Date(timeIntervalSinceNow: owner == .precompute ? 0 : serverWait)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = Self.holder(fd)
            if holder.contains(Owner.precompute.rawValue) && Date() < deadline {
                usleep(100_000)
                continue
            }
            close(fd)
            throw LibraryError.alreadyRunning(path: outputDirectory, holder: holder)
        }
        let text = "pid \(getpid()) \(owner.rawValue)\n"
        _ = ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
    }

    /// Takes the lock if it is free; nil when another process holds it.
    public static func attempt(path: String, outputDirectory: String, owner: Owner) -> ScanLock? {
        try? ScanLock(path: path, outputDirectory: outputDirectory, owner: owner, serverWait: 0)
    }

    /// Who holds the lock at `path` now; nil when nobody does or there is no lock file. It only
    /// looks (the file is opened read-only: a shard store being merged may be on a read-only mount).
    public static func currentHolder(path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return holder(fd)
    }

    private static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = pread(fd, &buffer, 127, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : "unknown"
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
