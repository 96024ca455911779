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
