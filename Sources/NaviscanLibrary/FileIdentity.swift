#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NaviscanCore

/// What identifies a file's audio without decoding it: a hash of three 16 kB blocks at a quarter, a
/// half and three quarters of the file, with its size. Tags sit at either end of a file (ID3v2, FLAC
/// pictures, ID3v1, APEv2), so they are never read; a moved or copied file hashes the same, a
/// re-encoded one does not (and its size differs anyway).
public enum ContentHash {
    static let blockSize = 16 * 1024

    /// The hash of `path`, or nil when it cannot be read.
    public static func of(path: String, size: Int64) -> String? {
        let fd = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var hasher = FNV1a64()
        hasher.add(String(size))
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 16)
        defer { block.deallocate() }
        for quarter in 1...3 {
            let offset = max(0, min(size * Int64(quarter) / 4, size - Int64(blockSize)))
            let n = pread(fd, block.baseAddress, blockSize, off_t(offset))
            guard n >= 0 else { return nil }
            hasher.add(bytes: UnsafeRawBufferPointer(rebasing: block[0..<n]))
        }
        let hex = String(hasher.value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Size and modification time of an output file as written: `"SIZE:MTIME_NS"`. A frame file or
/// profile replaced, truncated or touched since no longer matches its row's stamp.
public enum OutputStamp {
    public static func of(path: String) -> String? {
        var st = stat()
        guard SystemPath.withCString(path, { stat($0, &st) }) == 0 else { return nil }
        return stamp(st)
    }

    static func stamp(_ st: stat) -> String {
        let (seconds, nanoseconds) = LibraryWalker.modificationTimespec(st)
        return "\(st.st_size):\(seconds * 1_000_000_000 + nanoseconds)"
    }
}

/// Output stamps of many files in few folders (a scan checks two per track, in 512 folders): each
/// folder is opened once and its files are stat'ed relative to it, not walked from the root. Safe to
/// share between threads.
final class OutputStampCache: @unchecked Sendable {
    private let lock = NSLock()
    private var folders: [String: Int32] = [:]

    deinit { for fd in folders.values where fd >= 0 { close(fd) } }

    func stamp(of path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return OutputStamp.of(path: path) }
        let folder = String(path[..<slash])
        lock.lock()
        let fd: Int32
        if let open = folders[folder] {
            fd = open
        } else {
            fd = SystemPath.withCString(folder) { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            folders[folder] = fd
        }
        lock.unlock()
        guard fd >= 0 else { return nil }
        var st = stat()
        let name = String(path[path.index(after: slash)...])
        guard SystemPath.withCString(name, { fstatat(fd, $0, &st, 0) }) == 0 else { return nil }
        return OutputStamp.stamp(st)
    }
}
