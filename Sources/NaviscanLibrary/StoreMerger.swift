import Foundation
import GRDB
import Logging
import NaviscanCore

/// What a merge did.
public struct MergeSummary: Encodable, Sendable {
    /// The shards the output holds now ("0,1,3/4"); nil when it holds the whole library.
    public var coverage: String?
    /// Tracks in the output store after the merge.
    public var tracks = 0
    /// Tracks whose rows and files were copied in (new, or changed since the last merge).
    public var written = 0
    /// Tracks the output already held exactly as their shard does.
    public var unchanged = 0
    /// Tracks of the merged shards gone from the shard stores, removed from the output.
    public var removed = 0
    /// Output files hard-linked (same file system) and copied (another one).
    public var filesLinked = 0
    public var filesCopied = 0

    enum CodingKeys: String, CodingKey {
        case coverage, tracks, written, unchanged, removed, filesLinked = "files_linked", filesCopied = "files_copied"
    }
}

/// `naviscan merge OUT SHARD_OUT...`: joins the stores of shard scans into one normal store.
///
/// Merging shard K makes OUT's part of shard K equal to that shard's store: its rows in every
/// per-track table (`TrackStore.perTrackTables`, change sequence renumbered) and its files of every
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
        let store = try TrackStore(path: layout.databasePath)
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
        let parameters = try store.meta("analysis_parameters").flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        _ = try AlbumGain.recompute(store: store, layout: layout, albumPerDisc: parameters?["album-per-disc"] as? Bool ?? false,
                                   jobs: ProcessInfo.processInfo.activeProcessorCount)
        summary.coverage = coverage?.description
        summary.tracks = try store.count()
        return summary
    }

    // MARK: checks, before anything is written

    private func checkCompatible(_ shards: [ShardStore]) throws {
        guard let first = shards.first else { throw LibraryError.mergeRefused(reason: "no shard stores to merge") }
        var seen: [Int: String] = [:]
        for shard in shards {
            if shard.directory == output {
                throw LibraryError.mergeRefused(reason: "\(output) is both the output and a shard store; merge into another folder")
            }
            if shard.coverage.count != first.coverage.count {
                throw LibraryError.mergeRefused(reason: "\(first.directory) is a shard of \(first.coverage.count) but \(shard.directory) one of \(shard.coverage.count); merge shards of one split (the same --shard …/N)")
            }
            for index in shard.coverage.indices {
                if let other = seen[index] {
                    throw LibraryError.mergeRefused(reason: "shard \(index)/\(shard.coverage.count) is in both \(other) and \(shard.directory); give each shard once")
                }
                seen[index] = shard.directory
            }
            if shard.parameters != first.parameters {
                throw LibraryError.mergeRefused(reason: "\(first.directory) and \(shard.directory) were made with different analysis parameters ("
                    + Self.differences(first.parameters, shard.parameters).joined(separator: ", ") + "); scan every shard with the same options, then merge")
            }
            if shard.analyzerVersions.union(first.analyzerVersions).count > 1 {
                throw LibraryError.mergeRefused(reason: "\(first.directory) and \(shard.directory) were analysed by different naviscan versions ("
                    + shard.analyzerVersions.union(first.analyzerVersions).sorted().joined(separator: ", ") + "); scan every shard with the same naviscan, then merge")
            }
        }
    }

    /// What OUT holds after the merge (nil: the whole library), and the refusals OUT itself calls
    /// for: tracks it keeps from before that were made another way, or shards of another split.
    private func mergedCoverage(store: TrackStore, shards: [ShardStore]) throws -> ShardSet? {
        var merged = shards[0].coverage
        for shard in shards { merged.indices.formUnion(shard.coverage.indices) }
        let recorded = try store.shardCoverage()
        let heldWholeLibrary = try recorded == nil && store.count() > 0
        let kept = try store.read { db in
            try Row.fetchAll(db, sql: "SELECT relative_path, analyzer_version FROM track")
                .filter { !merged.contains(relativePath: $0["relative_path"]) }
                .map { $0["analyzer_version"] as String }
        }
        if !kept.isEmpty {
            if let recorded, recorded.count != merged.count {
                throw LibraryError.mergeRefused(reason: "\(output) holds shards of a split into \(recorded.count), not \(merged.count); merge into a new folder")
            }
            let parameters = try store.meta(MetaKey.analysisParameters)
            if parameters != shards[0].parameters {
                throw LibraryError.mergeRefused(reason: "\(output) holds tracks made with other analysis parameters ("
                    + Self.differences(parameters, shards[0].parameters).joined(separator: ", ") + "); merge into a new folder, or merge every shard again")
            }
            let versions = Set(kept).union(shards[0].analyzerVersions)
            if versions.count > 1 {
                throw LibraryError.mergeRefused(reason: "\(output) holds tracks analysed by another naviscan version (\(versions.sorted().joined(separator: ", "))); merge into a new folder, or merge every shard again")
            }
        }
        if heldWholeLibrary { return nil }
        if let recorded, recorded.count == merged.count { merged.indices.formUnion(recorded.indices) }
        return merged.isComplete ? nil : merged
    }

    /// "fps 30 vs 60": the recorded parameters (JSON objects) that differ.
    static func differences(_ a: String?, _ b: String?) -> [String] {
        func object(_ text: String?) -> [String: Any] {
            text.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? [:]
        }
        let (left, right) = (object(a), object(b))
        func text(_ value: Any?) -> String { value.map { "\($0)" } ?? "unset" }
        return Set(left.keys).union(right.keys).sorted().compactMap { key in
            text(left[key]) == text(right[key]) ? nil : "\(key) \(text(left[key])) vs \(text(right[key]))"
        }
    }

    // MARK: one shard

    private func merge(_ shard: ShardStore, into store: TrackStore, summary: inout MergeSummary) throws {
        let tables = try store.read { db in try TrackStore.perTrackTables.map { try TableColumns(db, table: $0) } }
        var present: Set<String> = []
        let sourceLayout = OutputLayout(root: shard.directory)
        try shard.read { source in
            let columns = tables[0].list
            let rows = try Row.fetchCursor(source, sql: "SELECT \(columns) FROM track")
            var batch: [Row] = []
            func flush() throws {
                try mergeBatch(batch, tables: tables, source: source, from: sourceLayout, into: store, summary: &summary)
                batch.removeAll(keepingCapacity: true)
            }
            while let row = try rows.next() {
                present.insert(row["relative_path"])
                batch.append(row.copy())
                if batch.count == 256 { try flush() }
            }
            try flush()
        }
        // OUT's tracks of this shard that the shard store no longer has: rows first, files after.
        let gone = try store.read { db in
            try String.fetchAll(db, sql: "SELECT relative_path FROM track").filter { shard.coverage.contains(relativePath: $0) && !present.contains($0) }
        }
        guard !gone.isEmpty else { return }
        let keys = try store.read { db in try gone.map { try String.fetchOne(db, sql: "SELECT key FROM track WHERE relative_path = ?", arguments: [$0]) ?? "" } }
        try store.write { db in
            for path in gone {
                for table in tables.reversed() { try db.execute(sql: "DELETE FROM \(table.name) WHERE relative_path = ?", arguments: [path]) }
            }
        }
        for key in keys where !key.isEmpty { TrackProcessor.removeOutputs(key: key, layout: layout) }
        summary.removed += gone.count
    }

    /// Copies the tracks of `rows` (the shard's track rows) that OUT does not hold as they are:
    /// their files first, then, after one flush, their rows in one transaction.
    private func mergeBatch(_ rows: [Row], tables: [TableColumns], source: Database, from sourceLayout: OutputLayout,
                            into store: TrackStore, summary: inout MergeSummary) throws {
        guard !rows.isEmpty else { return }
        let paths = rows.map { $0["relative_path"] as String }
        var sourceRows: [[String: [[DatabaseValue]]]] = [TableColumns.byPath(rows)]
        for table in tables.dropFirst() { sourceRows.append(TableColumns.byPath(try table.rows(source, paths: paths))) }
        let outRows = try store.read { db in try tables.map { TableColumns.byPath(try $0.rows(db, paths: paths)) } }
        let track = tables[0]
        // Compared apart: the change sequence is OUT's own, the stamps are checked against the files;
        // the profile and its change time differ by the album values OUT measured over every shard.
        let apart = ["seq", "profile_json", "changed_at"] + OutputLayout.trackOutputs.compactMap(\.stampColumn)
        let compared = track.names.indices.filter { !apart.contains(track.names[$0]) }

        var changed: [(path: String, rows: [[[DatabaseValue]]])] = []
        for (path, row) in zip(paths, rows) {
            let key: String = row["key"]
            var values = Array(row.databaseValues)
            if let existing = outRows[0][path]?.first, compared.allSatisfy({ existing[$0] == values[$0] }),
               tables.indices.dropFirst().allSatisfy({ outRows[$0][path] ?? [] == sourceRows[$0][path] ?? [] }),
               outputsInPlace(existing, of: track, key: key, from: sourceLayout) {
                summary.unchanged += 1
                continue
            }
            for output in OutputLayout.trackOutputs {
                if let stamp = try place(output, key: key, from: sourceLayout, summary: &summary),
                   let position = output.stampColumn.flatMap(track.names.firstIndex(of:)) {
                    values[position] = stamp.databaseValue
                }
            }
            changed.append((path, [[values]] + tables.indices.dropFirst().map { sourceRows[$0][path] ?? [] }))
        }
        guard !changed.isEmpty else { return }
        if FileSystemSync.isAvailable {
            do { try FileSystemSync.flush(containing: output) } catch { throw TrackProcessor.fault(error) ?? error }
        }
        try store.write { db in
            var seq = try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE name = 'change_seq'") ?? 0
            let seqPosition = track.names.firstIndex(of: "seq")
            for entry in changed {
                for table in tables.reversed() { try db.execute(sql: "DELETE FROM \(table.name) WHERE relative_path = ?", arguments: [entry.path]) }
                for (table, rows) in zip(tables, entry.rows) {
                    for var values in rows {
                        if table.name == track.name, let seqPosition {
                            seq += 1
                            values[seqPosition] = seq.databaseValue
                        }
                        try db.execute(sql: "INSERT INTO \(table.name) (\(table.list)) VALUES (\(databaseQuestionMarks(count: values.count)))",
                                       arguments: StatementArguments(values))
                    }
                }
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('change_seq', ?)", arguments: ["\(seq)"])
        }
        summary.written += changed.count
    }

    /// OUT's files of a track are the shard's: for each kind, both absent, or OUT's present and
    /// matching the stamp OUT's row recorded.
    private func outputsInPlace(_ values: [DatabaseValue], of track: TableColumns, key: String, from sourceLayout: OutputLayout) -> Bool {
        OutputLayout.trackOutputs.allSatisfy { output in
            let inShard = OutputStamp.of(path: sourceLayout.path(of: output, key: key)) != nil
            let here = OutputStamp.of(path: layout.path(of: output, key: key))
            guard inShard else { return here == nil }
            guard let here else { return false }
            guard let position = output.stampColumn.flatMap(track.names.firstIndex(of:)) else { return true }
            return String.fromDatabaseValue(values[position]) == here
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
            TrackProcessor.removeFile(to)
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
                    TrackProcessor.removeFile(temporary)
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
            throw TrackProcessor.fault(error) ?? error
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
    private func finishMerge(store: TrackStore, shards: [ShardStore], coverage: ShardSet?) throws {
        try store.setShardCoverage(coverage)
        if let parameters = shards[0].parameters { try store.setMeta(MetaKey.analysisParameters, parameters) }
        for name in [MetaKey.libraryRoot, MetaKey.libraryDevice] {
            let values = Set(shards.map { $0.meta[name] })
            if values.count == 1, let value = values.first, let value { try store.setMeta(name, value) }
        }
        let merged = shards.reduce(into: Set<Int>()) { $0.formUnion($1.coverage.indices) }
        let count = shards[0].coverage.count
        var failed = Self.paths(try store.meta(MetaKey.failedPaths)).filter { !merged.contains(Shard.index(ofRelativePath: $0, count: count)) }
        for shard in shards { failed.formUnion(Self.paths(shard.meta[MetaKey.failedPaths])) }
        let data = try JSONEncoder().encode(failed.sorted())
        try store.setMeta(MetaKey.failedPaths, String(decoding: data, as: UTF8.self))
    }

    private static func paths(_ json: String?) -> Set<String> {
        Set(json.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? [])
    }
}

/// A shard store, opened read-only, with what the merge checks.
private struct ShardStore {
    let directory: String
    let queue: DatabaseQueue
    let coverage: ShardSet
    let parameters: String?
    let analyzerVersions: Set<String>
    let meta: [String: String]

    init(directory: String) throws {
        self.directory = directory
        let path = OutputLayout(root: directory).databasePath
        guard FileManager.default.fileExists(atPath: path) else {
            throw LibraryError.mergeRefused(reason: "\(directory) holds no naviscan store (no naviscan.db); give the --out folders of the shard scans")
        }
        if let holder = ScanLock.currentHolder(path: OutputLayout(root: directory).lockPath) {
            throw LibraryError.mergeRefused(reason: "\(directory) is being written by another naviscan (\(holder)); merge it once that has finished")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let paths: [String]
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            let applied: Set<String>, versions: Set<String>, meta: [String: String]
            (applied, versions, meta, paths) = try queue.read { db in
                (try TrackStore.migrator.appliedIdentifiers(db),
                 Set(try String.fetchAll(db, sql: "SELECT DISTINCT analyzer_version FROM track")),
                 Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT name, value FROM meta").map { ($0["name"] as String, $0["value"] as String) }),
                 try String.fetchAll(db, sql: "SELECT relative_path FROM track"))
            }
            let known = Set(TrackStore.migrator.migrations)
            guard applied == known else {
                throw LibraryError.mergeRefused(reason: "\(directory) was written by another naviscan version (its store schema differs); scan that shard again with this naviscan")
            }
            analyzerVersions = versions
            self.meta = meta
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError.mergeSourceUnreadable(path: path, reason: "\(TrackStore.libraryError(error, path: path))")
        }
        guard let recorded = meta[MetaKey.shard], let coverage = ShardSet(recorded: recorded) else {
            throw LibraryError.mergeRefused(reason: "\(directory) is not a shard's store (it was scanned without --shard); merge the --out folders of `naviscan scan --shard K/N` runs")
        }
        self.coverage = coverage
        if let stray = paths.first(where: { !coverage.contains(relativePath: $0) }) {
            throw LibraryError.mergeRefused(reason: "\(directory) holds \(stray), which is not in its shard \(coverage); scan that shard again into an empty folder")
        }
        guard let parameters = meta[MetaKey.analysisParameters] else {
            throw LibraryError.mergeRefused(reason: "\(directory) records no analysis parameters: its scan did not finish; run that shard's scan again, then merge")
        }
        self.parameters = parameters
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try queue.read(body) } catch let error as LibraryError { throw error } catch let error as OutputFileError {
            throw TrackProcessor.fault(error) ?? error
        } catch let error as DatabaseError {
            throw LibraryError.mergeSourceUnreadable(path: queue.path, reason: "\(TrackStore.libraryError(error, path: queue.path))")
        }
    }
}

/// A per-track table's columns, in the output store's order.
private struct TableColumns {
    let name: String
    let names: [String]
    var list: String { names.map { "\"\($0)\"" }.joined(separator: ", ") }

    init(_ db: Database, table: String) throws {
        name = table
        names = try db.columns(in: table).map(\.name)
    }

    func rows(_ db: Database, paths: [String]) throws -> [Row] {
        try Row.fetchAll(db, sql: "SELECT \(list) FROM \(name) WHERE relative_path IN (\(databaseQuestionMarks(count: paths.count)))",
                         arguments: StatementArguments(paths))
    }

    /// Each row's values, in column order, under its relative path.
    static func byPath(_ rows: [Row]) -> [String: [[DatabaseValue]]] {
        Dictionary(grouping: rows) { $0["relative_path"] as String }.mapValues { $0.map { Array($0.databaseValues) } }
    }
}
