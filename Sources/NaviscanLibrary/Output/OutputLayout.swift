#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NaviscanCore
import NaviscanStore

/// Where a track's results live under the output directory:
///
///     OUT/naviscan.db                      the SQLite store
///     OUT/profiles/ab/ab12cd34ef56ab78.json  the DJ profile
///     OUT/vis/ab/ab12cd34ef56ab78.vis        the visualizer frames
///     OUT/waveforms/ab/ab12cd34ef56ab78.dat  the seek-bar waveform (audiowaveform .dat v2)
///     OUT/waveforms/ab/ab12cd34ef56ab78.rms  its RMS sidecar
///
/// The key is the 64-bit FNV-1a hash of the UTF-8 relative path, as 16 hex digits; its first two digits
/// pick one of 256 subdirectories, so 100,000 tracks put about 400 files in each.
public struct OutputLayout: Sendable {
    public let root: String

    public init(root: String) { self.root = root }

    /// The output folder inside the library when none is given.
    public static let defaultDirectoryName = ".naviscan"
    public static let databaseFileName = "naviscan.db"
    static let lockFileName = "naviscan.lock"

    /// The default output folder of `library`.
    public static func defaultRoot(library: String) -> String { library + "/" + defaultDirectoryName }

    public var databasePath: String { root + "/" + Self.databaseFileName }
    public var lockPath: String { root + "/" + Self.lockFileName }
    /// The access token `naviscan serve` makes at its first start off loopback (mode 600).
    public var tokenPath: String { root + "/token" }
    public var profilesDirectory: String { root + "/" + Self.profile.directory }
    public var visDirectory: String { root + "/" + Self.visualizerFrames.directory }

    /// A kind of per-track output file: `OUT/<directory>/ab/<key>.<fileExtension>`.
    public struct TrackOutput: Sendable, Equatable {
        public let directory: String
        public let fileExtension: String
        /// The track column holding the file's `OutputStamp` (nil: the row records none).
        public let stampColumn: String?
    }

    public static let visualizerFrames = TrackOutput(directory: "vis", fileExtension: "vis", stampColumn: "vis_stamp")
    public static let profile = TrackOutput(directory: "profiles", fileExtension: "json", stampColumn: "profile_stamp")
    /// The seek-bar waveform (audiowaveform .dat v2) and its RMS sidecar, written with the profile.
    public static let waveform = TrackOutput(directory: "waveforms", fileExtension: "dat", stampColumn: nil)
    public static let waveformRMS = TrackOutput(directory: "waveforms", fileExtension: "rms", stampColumn: nil)

    /// Every per-track output file kind. Pruning, relinking's cleanup, temporary-file cleanup and
    /// `naviscan merge` go through this list: a new kind of output is one line here.
    public static let trackOutputs: [TrackOutput] = [visualizerFrames, profile, waveform, waveformRMS]

    public func path(of output: TrackOutput, key: String) -> String {
        "\(root)/\(output.directory)/\(key.prefix(2))/\(key).\(output.fileExtension)"
    }

    /// What the output folder holds, as a summary names it: the store, then each output kind's
    /// folder that exists (`profiles/`, `vis/`, `waveforms/`).
    public func presentEntries() -> [String] {
        var seen = Set<String>()
        let folders = Self.trackOutputs.map(\.directory).filter { seen.insert($0).inserted }
            .filter { FileManager.default.fileExists(atPath: root + "/" + $0) }
        return [Self.databaseFileName] + folders.map { $0 + "/" }
    }

    /// Bytes under each entry of the output folder: each folder's regular files, and the store's
    /// files (naviscan.db, its -wal and -shm) together as "database".
    public func diskUse() -> [String: Int64] {
        var use: [String: Int64] = [:]
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: root)) ?? [] {
            let path = root + "/" + name
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                var sum: Int64 = 0
                let enumerator = fm.enumerator(atPath: path)
                while let sub = enumerator?.nextObject() as? String {
                    guard let attributes = try? fm.attributesOfItem(atPath: path + "/" + sub),
                          attributes[.type] as? FileAttributeType == .typeRegular else { continue }
                    sum += (attributes[.size] as? NSNumber)?.int64Value ?? 0
                }
                use[name] = sum
            } else if name.hasPrefix(Self.databaseFileName) {
                use["database", default: 0] += (try? fm.attributesOfItem(atPath: path)[.size] as? NSNumber)??.int64Value ?? 0
            }
        }
        return use
    }

    /// The store a file belongs to by the default layout: the nearest folder above `file` that
    /// holds .naviscan/naviscan.db (that folder is the library), or nil.
    public static func enclosing(file: String) -> (library: String, layout: OutputLayout)? {
        var directory = (file as NSString).deletingLastPathComponent
        while !directory.isEmpty {
            let layout = OutputLayout(root: defaultRoot(library: directory))
            if FileManager.default.fileExists(atPath: layout.databasePath) { return (directory, layout) }
            if directory == "/" { break }
            directory = (directory as NSString).deletingLastPathComponent
        }
        return nil
    }

    /// The paths of every output kind of the track with `key` (whether they exist or not).
    public func outputPaths(key: String) -> [String] {
        Self.trackOutputs.map { path(of: $0, key: key) }
    }

    /// Removes every output file of the track with `key` (those that exist).
    public func removeOutputs(key: String) {
        for path in outputPaths(key: key) { Self.removeFile(path) }
    }

    static func removeFile(_ path: String) {
        _ = SystemPath.withCString(path) { unlink($0) }
    }

    public static func key(forRelativePath path: String) -> String {
        var hasher = FNV1a64()
        hasher.add(path)
        let hex = String(hasher.value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Creates `path` (and its parents) and checks it is writable.
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

    /// The folder a path is in.
    static func directory(of path: String) -> String {
        String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }

    /// Makes an output folder: one `mkdir` when its parent exists (the usual case), else the whole path.
    static func createDirectory(_ directory: String) throws {
        if SystemPath.withCString(directory, { mkdir($0, 0o755) }) == 0 || errno == EEXIST { return }
        try createWritableDirectory(directory)
    }

    public func profilePath(key: String) -> String { path(of: Self.profile, key: key) }
    public func visPath(key: String) -> String { path(of: Self.visualizerFrames, key: key) }
    public func waveformPath(key: String) -> String { path(of: Self.waveform, key: key) }
    public func waveformRMSPath(key: String) -> String { path(of: Self.waveformRMS, key: key) }

    /// Temporary files left by a run that was killed; call it holding the scan lock (none is in use).
    /// Each folder is read with `readdir`, and only hidden names become strings: a re-scan passes
    /// here over every output file of the library.
    func removeTemporaryFiles() {
        var seen: Set<String> = []
        for output in Self.trackOutputs where seen.insert(output.directory).inserted {
            let top = root + "/" + output.directory
            for sub in (try? FileManager.default.contentsOfDirectory(atPath: top)) ?? [] {
                let dir = top + "/" + sub
                guard let stream = opendir(dir) else { continue }
                var leftovers: [String] = []
                while let entry = readdir(stream) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                        guard raw.first == UInt8(ascii: ".") else { return nil }
                        return String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    if let name, name.contains(".tmp-") { leftovers.append(name) }
                }
                closedir(stream)
                for name in leftovers { unlink(dir + "/" + name) }
            }
        }
    }
}
