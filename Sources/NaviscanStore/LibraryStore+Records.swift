import Foundation
import GRDB

/// What the store records about the library and the scans of it (its `meta` rows), as typed values.
extension LibraryStore {
    // MARK: reads

    /// The library this store describes, as the last trusted scan recorded it.
    public func libraryIdentity() throws -> LibraryIdentity {
        try read { db in
            LibraryIdentity(root: try Self.meta(MetaKey.libraryRoot, db),
                            device: try Self.meta(MetaKey.libraryDevice, db).flatMap { UInt64($0) })
        }
    }

    /// The shards this store holds; nil for the whole library (or a new store).
    public func shardCoverage() throws -> ShardSet? {
        try read { try Self.meta(MetaKey.shard, $0) }.flatMap(ShardSet.init(recorded:))
    }

    /// The parameters of the last scan; nil before the first one finished.
    public func analysisParameters() throws -> AnalysisParameters? {
        try read { try Self.meta(MetaKey.analysisParameters, $0) }.flatMap { Self.decode(AnalysisParameters.self, $0) }
    }

    public func lastScan() throws -> ScanRecord? {
        try read { try Self.meta(MetaKey.lastScan, $0) }.flatMap { Self.decode(ScanRecord.self, $0) }
    }

    /// The files that failed in the last scan, including those the store has no row for (a file
    /// that cannot be opened at all): a failure among them is not new.
    public func failedPaths() throws -> Set<String> {
        Self.decodePaths(try read { try Self.meta(MetaKey.failedPaths, $0) })
    }

    /// What a command reads before it opens the store for writing (no migration, nothing created):
    /// nil when there is no store or it cannot be read.
    public struct Peek: Sendable {
        public var parameters: AnalysisParameters?
        public var failedPaths: Set<String>
    }

    public static func peek(path: String) -> Peek? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration),
              let (parameters, failed) = try? queue.read({ db in
                  (try meta(MetaKey.analysisParameters, db), try meta(MetaKey.failedPaths, db))
              }) else { return nil }
        return Peek(parameters: parameters.flatMap { Self.decode(AnalysisParameters.self, $0) }, failedPaths: decodePaths(failed))
    }

    // MARK: named transactions

    /// A scan has run: its parameters, its record and the files that failed in it, in one
    /// transaction. An interrupted scan did not look at every file, so what failed before stays known.
    public func recordScan(_ record: ScanRecord, parameters: AnalysisParameters?, failures: [String], interrupted: Bool) throws {
        try write { db in
            var failed = Set(failures)
            if interrupted { failed.formUnion(Self.decodePaths(try Self.meta(MetaKey.failedPaths, db))) }
            if let parameters { try Self.setMeta(MetaKey.analysisParameters, Self.json(parameters), db) }
            try Self.setMeta(MetaKey.lastScan, Self.json(record), db)
            try Self.setMeta(MetaKey.failedPaths, Self.json(failed.sorted()), db)
        }
    }

    /// A track analysed outside a scan (a precompute): its failure is known to the next scan, and a
    /// success takes it off the list.
    public func updateFailedPaths(adding added: [String], removing removed: [String]) throws {
        guard !added.isEmpty || !removed.isEmpty else { return }
        try write { db in
            var failed = Self.decodePaths(try Self.meta(MetaKey.failedPaths, db))
            failed.formUnion(added)
            failed.subtract(removed)
            try Self.setMeta(MetaKey.failedPaths, Self.json(failed.sorted()), db)
        }
    }

    /// The walk saw the library this store describes: where it is and on which device.
    public func recordLibraryIdentity(root: String, device: UInt64) throws {
        try write { db in
            try Self.setMeta(MetaKey.libraryRoot, root, db)
            try Self.setMeta(MetaKey.libraryDevice, String(device), db)
        }
    }

    /// Records the shards this store holds; nil for the whole library.
    public func recordShardCoverage(_ coverage: ShardSet?) throws {
        try write { try Self.setMeta(MetaKey.shard, coverage?.description, $0) }
    }

    /// After a merge: what the output holds now, the shards' parameters, their library when they
    /// agree on it, and the failures of the merged shards in place of the output's own for them.
    public func recordMerge(coverage: ShardSet?, parameters: AnalysisParameters?, library: LibraryIdentity?,
                            failures: Set<String>, replacingFailuresOf merged: (String) -> Bool) throws {
        try write { db in
            try Self.setMeta(MetaKey.shard, coverage?.description, db)
            if let parameters { try Self.setMeta(MetaKey.analysisParameters, Self.json(parameters), db) }
            if let root = library?.root { try Self.setMeta(MetaKey.libraryRoot, root, db) }
            if let device = library?.device { try Self.setMeta(MetaKey.libraryDevice, String(device), db) }
            let kept = Self.decodePaths(try Self.meta(MetaKey.failedPaths, db)).filter { !merged($0) }
            try Self.setMeta(MetaKey.failedPaths, Self.json(kept.union(failures).sorted()), db)
        }
    }

    private static func decodePaths(_ json: String?) -> Set<String> {
        Set(json.flatMap { decode([String].self, $0) } ?? [])
    }

    /// A meta value's JSON as `type`; nil when it is not (a value this version cannot read is absent).
    private static func decode<T: Decodable>(_ type: T.Type, _ json: String) -> T? {
        try? JSONDecoder().decode(type, from: Data(json.utf8))
    }

    /// A meta value as JSON, keys sorted (equal values are equal text).
    private static func json<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }
}
