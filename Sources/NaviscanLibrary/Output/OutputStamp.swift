#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NaviscanCore

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

/// Output stamps for the planner, which checks every track's outputs on each scan (200,000 files for
/// 100,000 tracks): the 256 folders of each output kind are opened once, up front, and a file is
/// stat'ed relative to its folder by a name built on the stack, so a check costs its syscall and
/// little else. Safe to share between threads.
final class OutputStampReader: @unchecked Sendable {
    private static let foldersPerOutput = 256
    /// Folder descriptors by output kind and the key's first byte; -1 where the folder is absent.
    private let folders: [Int32]

    init(layout: OutputLayout) {
        var folders: [Int32] = []
        folders.reserveCapacity(OutputLayout.trackOutputs.count * Self.foldersPerOutput)
        for output in OutputLayout.trackOutputs {
            let directory = layout.root + "/" + output.directory
            for prefix in 0..<Self.foldersPerOutput {
                let hex = String(prefix, radix: 16)
                let folder = directory + "/" + (hex.count == 1 ? "0" + hex : hex)
                folders.append(open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
            }
        }
        self.folders = folders
    }

    deinit { for fd in folders where fd >= 0 { close(fd) } }

    /// The stamp of `key`'s output of kind `output`, or nil when there is none.
    func stamp(_ output: OutputLayout.TrackOutput, key: String) -> String? {
        let utf8 = key.utf8
        guard utf8.count == 16, let prefix = Self.hexByte(utf8),
              let kind = OutputLayout.trackOutputs.firstIndex(of: output) else { return nil }
        let fd = folders[kind * Self.foldersPerOutput + prefix]
        guard fd >= 0 else { return nil }
        var st = stat()
        let found = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { name -> Bool in
            var n = 0
            for byte in utf8 { name[n] = CChar(bitPattern: byte); n += 1 }
            name[n] = CChar(bitPattern: UInt8(ascii: "."))
            n += 1
            for byte in output.fileExtension.utf8 { name[n] = CChar(bitPattern: byte); n += 1 }
            name[n] = 0
            return fstatat(fd, name.baseAddress!, &st, 0) == 0
        }
        return found ? OutputStamp.stamp(st) : nil
    }

    /// The value of the first two hex digits (the key's folder), or nil when they are not hex.
    private static func hexByte(_ utf8: String.UTF8View) -> Int? {
        var value = 0
        for byte in utf8.prefix(2) {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value * 16 + Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value * 16 + Int(byte - UInt8(ascii: "a")) + 10
            default: return nil
            }
        }
        return value
    }
}
