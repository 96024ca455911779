import Foundation
import Logging
import NaviscanCore

/// `naviscan tag`: writes each analysed track's ReplayGain, BPM (and Opus R128) fields into the
/// file's own tag, so that players that never call naviscan's API read them. Opt-in, never part of
/// a scan.
///
/// Safe: the new file is a copy beside the original, tagged by TagLib, synced, given the original's
/// mode and owner, and renamed over it, so a crash at any moment leaves the old file or the new one
/// whole. Idempotent: fields already equal to the tag's precision are not written, a file with
/// nothing to change is not touched, and the store takes the new size, time and content hash, so
/// the next scan re-analyses nothing. Files changed since their analysis are left alone.
public struct TagWriteBack {
    public struct Options: Sendable {
        public var library: String
        public var output: String
        public var dryRun = false
        /// Also MPD's MixRamp fields (MIXRAMP_START, MIXRAMP_END).
        public var mixRamp = false

        public init(library: String, output: String) {
            self.library = library
            self.output = output
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

    public struct Failure: Encodable, Sendable {
        public let relativePath: String
        public let reason: String
        enum CodingKeys: String, CodingKey { case relativePath = "relative_path", reason }
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
        enum CodingKeys: String, CodingKey { case tagged, unchanged, skipped, failed, dryRun = "dry_run" }
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
        for track in try store.allTracks().sorted(by: { $0.relativePath < $1.relativePath }) where track.missingSince == nil {
            let path = options.library + "/" + track.relativePath
            guard track.status == .ok else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: "its analysis failed (`naviscan status` says why)"))
                continue
            }
            guard let json = track.profileJSON, let profile = try? StoredProfile.read(Data(json.utf8)) else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: "no DJ profile; scan with --dj first"))
                continue
            }
            var info = stat()
            guard SystemPath.withCString(path, { stat($0, &info) }) == 0 else {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: "cannot read the file: \(String(cString: strerror(errno)))"))
                continue
            }
            guard Int64(info.st_size) == track.size, LibraryWalker.modificationTime(info) == track.mtime else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: "changed since its analysis; scan the library first"))
                continue
            }
            let kind = TagFile.kind(path: path)
            guard kind != .none else {
                summary.skipped.append(Failure(relativePath: track.relativePath, reason: "no tag naviscan writes in this format"))
                continue
            }
            let wanted = ReplayGainTags(profile: profile, opus: track.codec?.lowercased() == "opus", mixRamp: options.mixRamp).fields
            do {
                let existing = try TagFile.read(path: path, keys: wanted.map(\.key))
                let changes = wanted.compactMap { field -> FieldChange? in
                    if let old = existing[field.key], ReplayGainTags.same(key: field.key, existing: old, wanted: field.value) { return nil }
                    return FieldChange(key: field.key, old: existing[field.key], new: field.value)
                }
                guard !changes.isEmpty else { summary.unchanged += 1; continue }
                if !options.dryRun {
                    try rewrite(path: path, original: info, fields: changes.map { ($0.key, Optional($0.new)) })
                    var after = stat()
                    guard SystemPath.withCString(path, { stat($0, &after) }) == 0 else { throw TagFile.Failure(path: path, reason: "vanished after tagging") }
                    try store.recordTagWrite(relativePath: track.relativePath, size: Int64(after.st_size),
                                             mtime: LibraryWalker.modificationTime(after),
                                             contentHash: ContentHash.of(path: path, size: Int64(after.st_size)))
                }
                summary.tagged.append(FileResult(relativePath: track.relativePath, changes: changes))
            } catch let error as TagFile.Failure {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: error.reason))
            } catch let error as LibraryError where error.isFault {
                throw error
            } catch {
                summary.failed.append(Failure(relativePath: track.relativePath, reason: "\(error)"))
            }
        }
        if !options.dryRun { try? store.checkpoint() }
        return summary
    }

    /// A tagged copy beside the file, then renamed over it; the original's mode and owner kept.
    private func rewrite(path: String, original: stat, fields: [(key: String, value: String?)]) throws {
        guard original.st_mode & 0o222 != 0 else {
            throw TagFile.Failure(path: path, reason: "the file is read-only (mode \(String(original.st_mode & 0o7777, radix: 8))); make it writable to tag it")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        var template = SystemPath.bytes(of: "\(directory)/.\(name).naviscan-tag-XXXXXX").map { CChar(bitPattern: $0) } + [0]
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw TagFile.Failure(path: path, reason: "cannot write beside the file (\(String(cString: strerror(errno)))); the folder must be writable")
        }
        let temporary = template.withUnsafeBufferPointer { SystemPath.string(fromCString: $0.baseAddress!) }
        var renamed = false
        defer {
            if !renamed { SystemPath.withCString(temporary) { _ = unlink($0) } }
        }
        do {
            try copy(from: path, to: fd)
            guard fchmod(fd, original.st_mode & 0o7777) == 0 else { throw posix("cannot set the copy's mode") }
            if fchown(fd, original.st_uid, original.st_gid) != 0 && (original.st_uid != geteuid() || original.st_gid != getegid()) {
                throw posix("cannot give the copy the file's owner")
            }
            close(fd)
        } catch {
            close(fd)
            throw error
        }
        try TagFile.write(path: temporary, fields: fields)
        let synced = SystemPath.withCString(temporary) { open($0, O_RDONLY) }
        guard synced >= 0, fsync(synced) == 0 else {
            if synced >= 0 { close(synced) }
            throw posix("cannot sync the tagged copy")
        }
        close(synced)
        guard SystemPath.withCString(temporary, { from in SystemPath.withCString(path) { rename(from, $0) } }) == 0 else {
            throw posix("cannot replace the file")
        }
        renamed = true
        try? AtomicFile.syncDirectory(directory, for: path)

        func posix(_ what: String) -> TagFile.Failure { TagFile.Failure(path: path, reason: "\(what): \(String(cString: strerror(errno)))") }
    }

    private func copy(from path: String, to out: Int32) throws {
        let input = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard input >= 0 else { throw TagFile.Failure(path: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(input, buffer.baseAddress, buffer.count)
            if n == 0 { return }
            guard n > 0 else { throw TagFile.Failure(path: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
            var written = 0
            while written < n {
                let w = write(out, buffer.baseAddress! + written, n - written)
                guard w > 0 else { throw TagFile.Failure(path: path, reason: "cannot write the copy: \(String(cString: strerror(errno)))") }
                written += w
            }
        }
    }
}
