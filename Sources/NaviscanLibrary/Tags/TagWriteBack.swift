import Foundation
import Logging
import NaviscanCore
import NaviscanStore

/// `naviscan tag`: writes each analysed track's ReplayGain, BPM (and Opus R128) fields into the
/// file's own tag, so that players that never call naviscan's API read them. Opt-in, never part of
/// a scan.
///
/// Safe: each file is a `TagTransaction` (a verified copy, committed under a lock only while the
/// file is still the one first seen), reached only through folders the scan itself follows, and a
/// symbolic link only when asked. Idempotent: fields already equal to the tag's precision are not
/// written, a file with nothing to change is not touched, and the store takes the new size, time and
/// content hash, so the next scan re-analyses nothing. Files changed since their analysis are left
/// alone; copies left by an interrupted run are removed first.
public struct TagWriteBack {
    public struct Options: Sendable {
        public var library: String
        public var output: String
        public var dryRun = false
        /// Also MPD's MixRamp fields (MIXRAMP_START, MIXRAMP_END).
        public var mixRamp = false
        /// Also the key, in this notation (nil: not written).
        public var keyNotation: KeyNotation?
        /// Write through a file that is a symbolic link, to its target (only one inside the library).
        public var followSymlinks = false
        /// Folders reached through links that leave the library are followed (as the scan's
        /// `follow-external-links`); else a file there is refused.
        public var followExternalLinks = false
        public var hooks = TestHooks.fromEnvironment()

        public init(library: String, output: String) {
            self.library = library
            self.output = output
        }
    }

    /// What the tests reach into, from the environment: `NAVISCAN_TEST_TAG_COMMIT_FIFO` (a FIFO the
    /// write-back signals on before each commit, then waits on, so a test can change the file at
    /// exactly that moment) and `NAVISCAN_TEST_TAG_IGNORE_FREE_SPACE` (let a write that will not fit
    /// start, to prove the copy's check catches it).
    public struct TestHooks: Sendable {
        var beforeCommit: (@Sendable (String) throws -> Void)?
        var ignoreFreeSpace = false

        static func fromEnvironment() -> TestHooks {
            let environment = ProcessInfo.processInfo.environment
            var hooks = TestHooks()
            hooks.ignoreFreeSpace = environment["NAVISCAN_TEST_TAG_IGNORE_FREE_SPACE"] == "1"
            if let fifo = environment["NAVISCAN_TEST_TAG_COMMIT_FIFO"] {
                hooks.beforeCommit = { path in
                    let out = SystemPath.withCString(fifo) { open($0, O_WRONLY) }
                    guard out >= 0 else { return }
                    let line = Array((path + "\n").utf8)
                    _ = line.withUnsafeBytes { Foundation.write(out, $0.baseAddress, $0.count) }
                    close(out)
                    let back = SystemPath.withCString(fifo) { open($0, O_RDONLY) }
                    guard back >= 0 else { return }
                    var byte: UInt8 = 0
                    while read(back, &byte, 1) > 0 {}
                    close(back)
                }
            }
            return hooks
        }
    }

    public struct FieldChange: Encodable, Sendable, Equatable {
        public let key: String
        public let old: String?
        public let new: String
    }

    public struct FileResult: Encodable, Sendable {
        public let relativePath: String
        public let changes: [FieldChange]
        enum CodingKeys: String, CodingKey { case relativePath = "relative_path", changes }
    }

    /// Why a track was not tagged. The descriptions name no command-line flag: the CLI words the
    /// ones a setting would change (`followExternalLinksOff`, `symlinkNotFollowed`, `noProfile`).
    public enum Reason: Hashable, Sendable, CustomStringConvertible {
        case analysisFailed
        case noProfile
        case changedSinceAnalysis
        case formatWithoutTags
        /// The track's folder leads outside the library through a link; following it is off.
        case folderOutsideLibrary(realFolder: String)
        /// The file is a symbolic link; following file links is off.
        case symlinkNotFollowed
        case symlinkOutsideLibrary(target: String)
        /// The file, its folder or its link target could not be reached or read (the system's words).
        case unreadable(String)
        /// Writing or verifying the tags failed (TagLib's or the transaction's words).
        case writeFailed(String)

        /// A stable name for scripts (`--json`).
        public var code: String {
            switch self {
            case .analysisFailed: "analysis_failed"
            case .noProfile: "no_profile"
            case .changedSinceAnalysis: "changed_since_analysis"
            case .formatWithoutTags: "format_without_tags"
            case .folderOutsideLibrary: "folder_outside_library"
            case .symlinkNotFollowed: "symlink_not_followed"
            case .symlinkOutsideLibrary: "symlink_outside_library"
            case .unreadable: "unreadable"
            case .writeFailed: "write_failed"
            }
        }

        public var description: String {
            switch self {
            case .analysisFailed: "its analysis failed (the store's status says why)"
            case .noProfile: "no DJ profile; scan with the DJ analysis on first"
            case .changedSinceAnalysis: "changed since its analysis; scan the library first"
            case .formatWithoutTags: "no tag naviscan writes in this format"
            case .folderOutsideLibrary(let folder):
                "its folder now leads outside the library (\(folder)) through a symbolic link, which the scan does not follow; not written"
            case .symlinkNotFollowed: "a symbolic link, not followed"
            case .symlinkOutsideLibrary(let target): "a symbolic link to a file outside the library (\(target)); not written"
            case .unreadable(let reason), .writeFailed(let reason): reason
            }
        }
    }

    public struct Failure: Encodable, Sendable {
        public let relativePath: String
        public let reason: Reason
        enum CodingKeys: String, CodingKey { case relativePath = "relative_path", reason, code }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(relativePath, forKey: .relativePath)
            try container.encode(reason.description, forKey: .reason)
            try container.encode(reason.code, forKey: .code)
        }
    }

    public struct Summary: Encodable, Sendable {
        /// Files whose tags were written (with --dry-run: would be written).
        public var tagged: [FileResult] = []
        /// Files whose tags already hold these values.
        public var unchanged = 0
        /// Tracks not tagged, and why: not analysed, changed since, a format without a tag naviscan writes.
        public var skipped: [Failure] = []
        public var failed: [Failure] = []
        public var dryRun = false
        /// Copies left beside files by an interrupted run, removed before this one.
        public var removedLeftovers = 0
        enum CodingKeys: String, CodingKey { case tagged, unchanged, skipped, failed, dryRun = "dry_run", removedLeftovers = "removed_leftovers" }
    }

    let options: Options
    let logger: Logger

    public init(options: Options, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    public func run() throws -> Summary {
        let layout = OutputLayout(root: options.output)
        guard FileManager.default.fileExists(atPath: layout.databasePath) else {
            throw LibraryError.store(path: layout.databasePath, reason: "no store here; scan the library first")
        }
        // A scan must not analyse a file while its tags are rewritten, nor record the old size after.
        let lock = options.dryRun ? nil : try ScanLock(path: layout.lockPath, outputDirectory: options.output, owner: .tag)
        defer { withExtendedLifetime(lock) {} }
        let store = try LibraryStore(path: layout.databasePath)
        var summary = Summary()
        summary.dryRun = options.dryRun
        let tracks = try store.allTracks().filter { $0.missingSince == nil }.sorted { $0.relativePath < $1.relativePath }
        if !options.dryRun { summary.removedLeftovers = removeLeftovers(in: Set(tracks.map { ($0.relativePath as NSString).deletingLastPathComponent })) }
        let libraryRoot = Self.realPath(options.library) ?? options.library
        for track in tracks {
            guard track.status == .ok else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: .analysisFailed))
                continue
            }
            guard let json = track.profileJSON, let profile = try? StoredProfile.read(Data(json.utf8)) else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: .noProfile))
                continue
            }
            let path: String
            switch resolve(track.relativePath, libraryRoot: libraryRoot) {
            case .file(let real): path = real
            case .skip(let reason):
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: reason))
                continue
            case .fail(let reason):
                summary.failed.append(Failure(relativePath: track.relativePath, reason: reason))
                continue
            }
            var info = stat()
            guard SystemPath.withCString(path, { stat($0, &info) }) == 0 else {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: .unreadable("cannot read the file: \(String(cString: strerror(errno)))")))
                continue
            }
            guard Int64(info.st_size) == track.size, LibraryWalker.modificationTime(info) == track.mtime else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: .changedSinceAnalysis))
                continue
            }
            let kind = TagFile.kind(path: path)
            guard kind != .none else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: .formatWithoutTags))
                continue
            }
            let wanted = ReplayGainTags(profile: profile, opus: track.codec?.lowercased() == "opus", mixRamp: options.mixRamp, keyNotation: options.keyNotation).fields
            do {
                let existing = try TagFile.read(path: path, keys: wanted.map(\.key))
                let changes = wanted.compactMap { field -> FieldChange? in
                    if let old = existing[field.key], ReplayGainTags.same(key: field.key, existing: old, wanted: field.value) { return nil }
                    return FieldChange(key: field.key, old: existing[field.key], new: field.value)
                }
                guard !changes.isEmpty else { summary.unchanged += 1; continue }
                if !options.dryRun {
                    let after = try TagTransaction(path: path, kind: kind, fields: changes.map { ($0.key, Optional($0.new)) }, hooks: options.hooks).run()
                    try store.recordTagWrite(relativePath: track.relativePath, size: Int64(after.st_size),
                                             mtime: LibraryWalker.modificationTime(after),
                                             contentHash: ContentHash.of(path: path, size: Int64(after.st_size)))
                }
                summary.tagged.append(FileResult(relativePath: track.relativePath, changes: changes))
            } catch let error as TagFile.Failure {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: .writeFailed(error.reason)))
            } catch let error as LibraryError where error.isFault {
                throw error
            } catch {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: .writeFailed("\(error)")))
            }
        }
        if !options.dryRun { try? store.checkpoint() }
        return summary
    }

    /// Where a track's tags go, if anywhere.
    enum Resolution: Equatable {
        case file(String)
        case skip(Reason)
        case fail(Reason)
    }

    /// The real file behind a track, by the scan's rules: folders linked from inside the library
    /// are followed, folders leading outside it only with `followExternalLinks`; a file that is
    /// itself a symbolic link only with `followSymlinks`, and only to a target inside the library.
    func resolve(_ relativePath: String, libraryRoot: String) -> Resolution {
        let path = options.library + "/" + relativePath
        let folder = (path as NSString).deletingLastPathComponent
        guard let realFolder = Self.realPath(folder) else { return .fail(.unreadable("cannot reach its folder: \(String(cString: strerror(errno)))")) }
        if !Self.isInside(realFolder, libraryRoot), !options.followExternalLinks {
            return .fail(.folderOutsideLibrary(realFolder: realFolder))
        }
        var info = stat()
        guard SystemPath.withCString(path, { lstat($0, &info) }) == 0 else { return .fail(.unreadable("cannot read the file: \(String(cString: strerror(errno)))")) }
        guard info.st_mode & S_IFMT == S_IFLNK else { return .file(realFolder + "/" + (path as NSString).lastPathComponent) }
        guard options.followSymlinks else { return .skip(.symlinkNotFollowed) }
        guard let target = Self.realPath(path) else { return .fail(.unreadable("a symbolic link whose target cannot be reached: \(String(cString: strerror(errno)))")) }
        guard Self.isInside(target, libraryRoot) else { return .skip(.symlinkOutsideLibrary(target: target)) }
        return .file(target)
    }

    /// Copies an interrupted run left in these folders (library-relative), removed; how many.
    private func removeLeftovers(in folders: Set<String>) -> Int {
        var removed = 0
        for folder in folders {
            let directory = folder.isEmpty ? options.library : options.library + "/" + folder
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where TagTransaction.isLeftover(name) {
                var info = stat()
                let path = directory + "/" + name
                guard SystemPath.withCString(path, { lstat($0, &info) }) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                if SystemPath.withCString(path, { unlink($0) }) == 0 {
                    removed += 1
                    logger.info("removed a copy left by an interrupted naviscan tag", metadata: ["path": "\(path)"])
                }
            }
        }
        return removed
    }

    static func realPath(_ path: String) -> String? {
        SystemPath.withCString(path) { cPath in
            guard let resolved = realpath(cPath, nil) else { return nil }
            defer { free(resolved) }
            return SystemPath.string(fromCString: resolved)
        }
    }

    static func isInside(_ path: String, _ root: String) -> Bool {
        path == root || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
