import Foundation
import NaviscanCore

/// Where `naviscan mix` and `path` may write a playlist without `--force`: not inside the store's
/// output folder (the store, its outputs, its token), and not over a file that holds anything but a
/// playlist, so a mistyped `--out` cannot replace a song or the store.
public enum PlaylistTarget {
    public enum Refusal: Equatable, Sendable {
        /// `path` is inside `storeFolder`.
        case insideStore(path: String, storeFolder: String)
        /// `path` exists and its content is not a playlist (`isPlaylist`).
        case notAPlaylist(path: String)
    }

    /// Longer than any playlist of 1,000 entries naviscan writes; a longer file is not taken for one.
    static let largestPlaylist = 8 << 20

    /// Why `path` (absolute) may not be written without `--force`; nil when it may.
    public static func refusal(path: String, storeFolder: String) -> Refusal? {
        let target = resolved(path), store = resolved(storeFolder)
        if target == store || target.hasPrefix(store + "/") { return .insideStore(path: path, storeFolder: storeFolder) }
        var st = stat()
        guard SystemPath.withCString(path, { stat($0, &st) }) == 0 else { return nil }   // nothing there yet
        guard (st.st_mode & S_IFMT) == S_IFREG, let handle = FileHandle(forReadingAtPath: path) else { return .notAPlaylist(path: path) }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: largestPlaylist + 1)) ?? Data()
        return head.count <= largestPlaylist && isPlaylist(Array(head)) ? nil : .notAPlaylist(path: path)
    }

    /// A playlist, strictly: text (no NUL or other control byte but tab, CR and LF; audio, databases
    /// and images all have some in their first bytes) that starts with `#EXTM3U` (after an optional
    /// UTF-8 byte-order mark), or a plain M3U whose every line is blank, a `#` comment or a path
    /// ending in an audio extension. An empty file holds nothing to lose. Bytes, not UTF-8: paths
    /// in a playlist keep their names' own bytes.
    public static func isPlaylist(_ bytes: [UInt8]) -> Bool {
        if bytes.contains(where: { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }) { return false }
        let text = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        if text.starts(with: Array("#EXTM3U".utf8)) { return true }
        return text.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }).allSatisfy { line in
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 }
            return trimmed.isEmpty || trimmed.first == UInt8(ascii: "#")
                || AudioFormat.named(by: String(decoding: trimmed, as: UTF8.self).trimmingCharacters(in: .whitespaces)) != nil
        }
    }

    /// `path` with the symbolic links of its longest existing part resolved, so a link into the
    /// store's folder (or a store folder reached through one) is seen for what it is.
    static func resolved(_ path: String) -> String {
        var head = path, tail: [String] = []
        while head.count > 1 {
            if let real = SystemPath.withCString(head, { realpath($0, nil) }) {
                defer { free(real) }
                return ([SystemPath.string(fromCString: real)] + tail.reversed()).joined(separator: "/")
            }
            tail.append((head as NSString).lastPathComponent)
            head = (head as NSString).deletingLastPathComponent
        }
        return path
    }
}
