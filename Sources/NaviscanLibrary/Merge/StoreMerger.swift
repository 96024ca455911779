import Foundation
import Logging
import NaviscanCore
import NaviscanStore

/// `naviscan merge OUT SHARD_OUT...`: joins the stores of shard scans into one normal store.
///
/// Merging shard K makes OUT's part of shard K equal to that shard's store: its rows in every
/// per-track table (`LibraryStore.perTrackTables`, change sequence renumbered) and its files of every
/// output kind (`OutputLayout.trackOutputs`, hard-linked or copied under temporary names and renamed,
/// the file system flushed before the rows that name them are committed); OUT's tracks of shard K that
/// the shard no longer has are removed. Tracks already as the shard has them are not touched, so
/// merging again changes nothing, and a shard scanned again is merged again on its own. Then
/// `finishMerge` records what OUT holds and recomputes what spans tracks of several shards.
///
/// Shard stores are read, never written. Stores made with other analysis parameters, another
/// analyser version or another schema are refused before anything is written.
public final class StoreMerger {
    public let output: String
    public let sources: [String]
    private let layout: OutputLayout
    private let logger: Logger
    private var temporaryCounter = 0

    public init(output: String, sources: [String], logger: Logger) {
        self.output = output
        self.sources = sources
        layout = OutputLayout(root: output)
        self.logger = logger
    }

    public func run() throws -> MergeSummary {
        let shards = try sources.map(ShardStore.init(directory:))
        try checkCompatible(shards)
        try OutputLayout.createWritableDirectory(output)
        let lock = try ScanLock(path: layout.lockPath, outputDirectory: output, owner: .merge)
        defer { withExtendedLifetime(lock) {} }
        let store = try LibraryStore(path: layout.databasePath)
        layout.removeTemporaryFiles()
        let coverage = try mergedCoverage(store: store, shards: shards)

        var summary = MergeSummary()
        for shard in shards {
            let before = summary
            try merge(shard, into: store, summary: &summary)
            logger.debug("shard merged", metadata: ["store": "\(shard.directory)", "shard": "\(shard.coverage)",
                                                    "written": "\(summary.written - before.written)", "removed": "\(summary.removed - before.removed)"])
        }
        try finishMerge(store: store, shards: shards, coverage: coverage)
        // Albums may span shards: measure them again over the merged tracks, from the store alone.
        _ = try AlbumGain.recompute(store: store, layout: layout, albumPerDisc: try store.analysisParameters()?.albumPerDisc ?? false,
                                   jobs: ProcessInfo.processInfo.activeProcessorCount)
        try store.refreshSimilarityIndex()
        summary.coverage = coverage?.description
        summary.tracks = try store.count()
        try store.checkpoint()
        return summary
    }

    // MARK: checks, before anything is written

    private func checkCompatible(_ shards: [ShardStore]) throws {
        guard let first = shards.first else { throw LibraryError.mergeRefused(reason: "no shard stores to merge") }
        var seen: [Int: String] = [:]
        var library: (root: String, shard: String)?
        for shard in shards {
            if shard.directory == output {
                throw LibraryError.mergeRefused(reason: "\(output) is both the output and a shard store; merge into another folder")
            }
            if shard.coverage.count != first.coverage.count {
                throw LibraryError.mergeRefused(reason: "\(first.directory) is a shard of \(first.coverage.count) but \(shard.directory) one of \(shard.coverage.count); merge shards of one split (the same split into N)")
            }
            for index in shard.coverage.indices {
                if let other = seen[index] {
                    throw LibraryError.mergeRefused(reason: "shard \(index)/\(shard.coverage.count) is in both \(other) and \(shard.directory); give each shard once")
                }
                seen[index] = shard.directory
            }
            // By the library's path alone: shards run on several machines, whose device numbers for
            // one shared mount differ. A shard whose scan recorded no library is not compared.
            if let root = shard.library.root {
                if let known = library, known.root != root {
                    throw LibraryError.mergeRefused(reason: "\(known.shard) is a shard of the library \(known.root) but \(shard.directory) one of \(root); merge the shards of one library")
                }
                library = library ?? (root, shard.directory)
            }
            if shard.parameters != first.parameters {
                throw LibraryError.mergeRefused(reason: "\(first.directory) and \(shard.directory) were made with different analysis parameters ("
                    + Self.differences(first.parameters, shard.parameters).joined(separator: ", ") + "); scan every shard with the same settings, then merge")
            }
            if shard.stageVersions.union(first.stageVersions).count > 1 {
                throw LibraryError.mergeRefused(reason: "\(first.directory) and \(shard.directory) hold tracks analysed by different versions of naviscan's analysers ("
                    + shard.stageVersions.union(first.stageVersions).sorted().joined(separator: "; ") + "); scan every shard again with this naviscan, then merge")
            }
        }
    }

    /// What OUT holds after the merge (nil: the whole library), and the refusals OUT itself calls
    /// for: tracks it keeps from before that were made another way, or shards of another split.
    private func mergedCoverage(store: LibraryStore, shards: [ShardStore]) throws -> ShardSet? {
        if try store.count() > 0, let held = try store.libraryIdentity().root,
           let other = shards.compactMap(\.library.root).first, other != held {
            throw LibraryError.mergeRefused(reason: "\(output) holds the library \(held), but the shards are of \(other); merge them into a new folder")
        }
        var merged = shards[0].coverage
        for shard in shards { merged.indices.formUnion(shard.coverage.indices) }
        let recorded = try store.shardCoverage()
        let heldWholeLibrary = try recorded == nil && store.count() > 0
        let kept = try store.stageVersionsByPath().filter { !merged.contains(relativePath: $0.key) }.map(\.value)
        if !kept.isEmpty {
            if let recorded, recorded.count != merged.count {
                throw LibraryError.mergeRefused(reason: "\(output) holds shards of a split into \(recorded.count), not \(merged.count); merge into a new folder")
            }
            let parameters = try store.analysisParameters()
            if parameters != shards[0].parameters {
                throw LibraryError.mergeRefused(reason: "\(output) holds tracks made with other analysis parameters ("
                    + Self.differences(parameters, shards[0].parameters).joined(separator: ", ") + "); merge into a new folder, or merge every shard again")
            }
            let versions = Set(kept).union(shards[0].stageVersions)
            if versions.count > 1 {
                throw LibraryError.mergeRefused(reason: "\(output) holds tracks analysed by other versions of naviscan's analysers (\(versions.sorted().joined(separator: "; "))); merge into a new folder, or merge every shard again")
            }
        }
        if heldWholeLibrary { return nil }
        if let recorded, recorded.count == merged.count { merged.indices.formUnion(recorded.indices) }
        return merged.isComplete ? nil : merged
    }

    /// "fps 30 vs 60": the recorded parameters that differ.
    static func differences(_ a: AnalysisParameters?, _ b: AnalysisParameters?) -> [String] {
        (a ?? AnalysisParameters()).differences(from: b ?? AnalysisParameters())
    }

    // MARK: one shard

    private func merge(_ shard: ShardStore, into store: LibraryStore, summary: inout MergeSummary) throws {
        let tables = try store.trackTables()
        var present: Set<String> = []
        let sourceLayout = OutputLayout(root: shard.directory)
        try shard.read {
            try shard.store.forEachTrackBatch(tables: tables, size: 256) { batch in
                present.formUnion(batch.map(\.relativePath))
                try mergeBatch(batch, tables: tables, from: sourceLayout, into: store, summary: &summary)
            }
        }
        // OUT's tracks of this shard that the shard store no longer has: rows first, files after.
        let gone = try store.stageVersionsByPath().keys.filter { shard.coverage.contains(relativePath: $0) && !present.contains($0) }
        guard !gone.isEmpty else { return }
        for key in try store.removeTracks(gone.sorted()) where !key.isEmpty { layout.removeOutputs(key: key) }
        summary.removed += gone.count
    }

    /// Copies the tracks of `batch` (the shard's rows) that OUT does not hold as they are: their
    /// files first, then, after one flush, their rows in one transaction.
    private func mergeBatch(_ batch: [LibraryStore.TrackRows], tables: [LibraryStore.TrackTable], from sourceLayout: OutputLayout,
                            into store: LibraryStore, summary: inout MergeSummary) throws {
        guard !batch.isEmpty else { return }
        let outRows = try store.trackRows(tables: tables, paths: batch.map(\.relativePath))
        // Compared apart: the change sequence is OUT's own, the stamps are checked against the files;
        // the profile and its change time differ by the album values OUT measured over every shard.
        let apart = Set(["seq", "profile_json", "changed_at"] + OutputLayout.trackOutputs.compactMap(\.stampColumn))

        var changed: [LibraryStore.TrackRows] = []
        for var entry in batch {
            guard let key = entry.trackText("key", in: tables) else { continue }
            if let existing = outRows[entry.relativePath], existing.same(as: entry, apart: apart, in: tables),
               outputsInPlace(existing, tables: tables, key: key, from: sourceLayout) {
                summary.unchanged += 1
                continue
            }
            for output in OutputLayout.trackOutputs {
                if let stamp = try place(output, key: key, from: sourceLayout, summary: &summary), let column = output.stampColumn {
                    entry.setTrackText(column, stamp, in: tables)
                }
            }
            changed.append(entry)
        }
        guard !changed.isEmpty else { return }
        if FileSystemSync.isAvailable {
            do { try FileSystemSync.flush(containing: output) } catch { throw LibraryError.fault(error) ?? error }
        }
        try store.replaceTracks(changed, tables: tables)
        summary.written += changed.count
    }

    /// OUT's files of a track are the shard's: for each kind, both absent, or OUT's present and
    /// matching the stamp OUT's row recorded.
    private func outputsInPlace(_ rows: LibraryStore.TrackRows, tables: [LibraryStore.TrackTable], key: String, from sourceLayout: OutputLayout) -> Bool {
        OutputLayout.trackOutputs.allSatisfy { output in
            let inShard = OutputStamp.of(path: sourceLayout.path(of: output, key: key)) != nil
            let here = OutputStamp.of(path: layout.path(of: output, key: key))
            guard inShard else { return here == nil }
            guard let here else { return false }
            guard let column = output.stampColumn, tables[0].position(of: column) != nil else { return true }
            return rows.trackText(column, in: tables) == here
        }
    }

    /// Puts the shard's file of `output` in place in OUT (or removes OUT's when the shard has none).
    /// Returns the file's stamp in OUT when it differs from the shard's (a copy on a file system that
    /// keeps coarser times), for the row to record.
    private func place(_ output: OutputLayout.TrackOutput, key: String, from sourceLayout: OutputLayout,
                       summary: inout MergeSummary) throws -> String? {
        let from = sourceLayout.path(of: output, key: key), to = layout.path(of: output, key: key)
        var st = stat()
        guard SystemPath.withCString(from, { stat($0, &st) }) == 0 else {
            OutputLayout.removeFile(to)
            return nil
        }
        let directory = String(to[..<to.lastIndex(of: "/")!])
        try OutputLayout.createWritableDirectory(directory)
        temporaryCounter += 1
        let temporary = "\(directory)/.\(key).\(output.fileExtension).tmp-merge-\(getpid())-\(temporaryCounter)"
        do {
            if SystemPath.withCString(from, { f in SystemPath.withCString(temporary) { link(f, $0) } }) == 0 {
                guard SystemPath.withCString(temporary, { t in SystemPath.withCString(to) { rename(t, $0) } }) == 0 else {
                    let code = errno
                    OutputLayout.removeFile(temporary)
                    throw OutputFileError(path: to, code: code, action: "rename failed")
                }
                if !FileSystemSync.isAvailable { try AtomicFile.syncDirectory(directory, for: to) }
                summary.filesLinked += 1
            } else if [EXDEV, EPERM, EMLINK, ENOTSUP].contains(errno) {
                try copy(from, to: to, modified: st)
                summary.filesCopied += 1
            } else {
                throw OutputFileError(path: to, code: errno, action: "cannot link \(from)")
            }
        } catch {
            throw LibraryError.fault(error) ?? error
        }
        let shardStamp = OutputStamp.stamp(st), stamp = OutputStamp.of(path: to)
        return stamp == shardStamp ? nil : stamp
    }

    /// A copy under a temporary name, renamed into place, keeping the shard file's modification time
    /// (so the stamp the row records still matches).
    private func copy(_ from: String, to: String, modified st: stat) throws {
        guard let data = FileManager.default.contents(atPath: from) else {
            throw OutputFileError(path: from, code: errno, action: "cannot read it to copy it")
        }
        let file = try AtomicFile(destination: to, durability: .deferred)
        try data.withUnsafeBytes { try file.write($0) }
        try file.commit()
        let (seconds, nanoseconds) = LibraryWalker.modificationTimespec(st)
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds)), timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))]
        _ = SystemPath.withCString(to) { utimensat(AT_FDCWD, $0, &times, 0) }
    }

    // MARK: after every shard

    /// The step after every shard's tracks are in: records what OUT holds (its shards, the shards'
    /// parameters and library, the files that failed) so a later `naviscan scan` or `serve` on OUT
    /// treats it as a normal store. Data computed across tracks that may sit in different shards
    /// (album gains) is recomputed here, from the merged rows, after the meta below.
    private func finishMerge(store: LibraryStore, shards: [ShardStore], coverage: ShardSet?) throws {
        let identities = Set(shards.map(\.library))
        let merged = shards.reduce(into: Set<Int>()) { $0.formUnion($1.coverage.indices) }
        let count = shards[0].coverage.count
        try store.recordMerge(coverage: coverage, parameters: shards[0].parameters,
                              library: identities.count == 1 ? identities.first : nil,
                              failures: shards.reduce(into: Set<String>()) { $0.formUnion($1.failedPaths) },
                              replacingFailuresOf: { merged.contains(Shard.index(ofRelativePath: $0, count: count)) })
    }
}

/// A shard store, opened read-only, with what the merge checks.
private struct ShardStore {
    let directory: String
    let store: LibraryStore
    let coverage: ShardSet
    let parameters: AnalysisParameters
    /// The distinct stage versions of its rows (`stageVersionsByPath`).
    let stageVersions: Set<String>
    let library: LibraryIdentity
    let failedPaths: Set<String>

    init(directory: String) throws {
        self.directory = directory
        let layout = OutputLayout(root: directory)
        let path = layout.databasePath
        guard FileManager.default.fileExists(atPath: path) else {
            throw LibraryError.mergeRefused(reason: "\(directory) holds no naviscan store (no \(OutputLayout.databaseFileName)); give the output folders of the shard scans")
        }
        if let holder = ScanLock.currentHolder(path: layout.lockPath) {
            throw LibraryError.mergeRefused(reason: "\(directory) is being written by another naviscan (\(holder)); merge it once that has finished")
        }
        let recordedCoverage: ShardSet?, recordedParameters: AnalysisParameters?, paths: [String: String]
        do {
            store = try LibraryStore.readOnly(path: path)
            // Before any row is read: a damaged page the merge never reads would otherwise pass unseen.
            let problems: [String]
            do { problems = try store.structuralProblems() } catch LibraryError.storeDamaged(_, let reason) { problems = [reason] }
            if !problems.isEmpty {
                throw LibraryError.mergeSourceUnreadable(path: path, reason: "it is damaged (SQLite's check: \(problems.joined(separator: "; ")))")
            }
            paths = try store.stageVersionsByPath()
            recordedCoverage = try store.shardCoverage()
            recordedParameters = try store.analysisParameters()
            library = try store.libraryIdentity()
            failedPaths = try store.failedPaths()
        } catch LibraryError.mergeSourceUnreadable(let path, let reason) {
            throw LibraryError.mergeSourceUnreadable(path: path, reason: reason)
        } catch LibraryError.storeSchemaDiffers {
            throw LibraryError.mergeRefused(reason: "\(directory) was written by another naviscan version (its store schema differs); scan that shard again with this naviscan")
        } catch {
            throw LibraryError.mergeSourceUnreadable(path: path, reason: "\(error)")
        }
        stageVersions = Set(paths.values)
        guard let coverage = recordedCoverage else {
            throw LibraryError.mergeRefused(reason: "\(directory) is not a shard's store (it was scanned as a whole library); merge the output folders of shard scans")
        }
        self.coverage = coverage
        if let stray = paths.keys.sorted().first(where: { !coverage.contains(relativePath: $0) }) {
            throw LibraryError.mergeRefused(reason: "\(directory) holds \(stray), which is not in its shard \(coverage); scan that shard again into an empty folder")
        }
        guard let parameters = recordedParameters else {
            throw LibraryError.mergeRefused(reason: "\(directory) records no analysis parameters: its scan did not finish; run that shard's scan again, then merge")
        }
        self.parameters = parameters
    }

    /// Runs `body` reading this store; its own read errors are a fault of the merge's source.
    func read<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as LibraryError where error.storePath == store.path {
            throw LibraryError.mergeSourceUnreadable(path: store.path, reason: "\(error)")
        }
    }
}
