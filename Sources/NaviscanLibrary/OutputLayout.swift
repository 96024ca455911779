import Foundation
import NaviscanCore

/// Where a track's results live under the output directory:
///
///     OUT/naviscan.db                      the SQLite store
///     OUT/profiles/ab/ab12cd34ef56ab78.json  the DJ profile
///     OUT/vis/ab/ab12cd34ef56ab78.vis        the visualizer frames
///
/// The key is the 64-bit FNV-1a hash of the UTF-8 relative path, as 16 hex digits; its first two digits
/// pick one of 256 subdirectories, so 100,000 tracks put about 400 files in each.
public struct OutputLayout: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    public var databasePath: String { root + "/naviscan.db" }
    public var lockPath: String { root + "/naviscan.lock" }
    public var profilesDirectory: String { root + "/profiles" }
    public var visDirectory: String { root + "/vis" }

    public static func key(forRelativePath path: String) -> String {
        var hasher = FNV1a64()
        hasher.add(path)
        let hex = String(hasher.value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Creates `path` (and its parents) and checks it is writable; the error names --out.
    static func createWritableDirectory(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw LibraryError.outputUnwritable(path: path, reason: plainReason(error))
        }
        guard access(path, W_OK) == 0 else {
            throw LibraryError.outputUnwritable(path: path, reason: String(cString: strerror(errno)))
        }
    }

    public func profilePath(key: String) -> String { "\(profilesDirectory)/\(key.prefix(2))/\(key).json" }
    public func visPath(key: String) -> String { "\(visDirectory)/\(key.prefix(2))/\(key).vis" }
}
