import Foundation
import GRDB
import NaviscanCore

/// What the similarity index reads, and its normalisation (a `meta` row).
extension LibraryStore {
    /// A present, analysed track with features of the current version.
    public struct FeatureRow: Sendable {
        public var relativePath: String
        public var features: SonicFeatures
        public var duration: Double
    }

    /// Every present, analysed track with features of the current version, in path order, as
    /// columns: what the similarity index is built from.
    public struct FeatureTable: Sendable {
        public var paths = SortedPaths()
        public var features = FeatureMatrix()
        public var durations: [Double] = []
        /// Per track, the mean and spread of its distances to the library's sample (mutual
        /// proximity, `SimilarityIndex.proximity`), as the snapshot keeps them; empty when read
        /// from the tables.
        public var proximity: [Float] = []
    }

    /// Every present track with current features (tracks without them are never neighbours): the
    /// snapshot when it is current (`SimilaritySnapshot`), else read from the tables.
    public func featureTable() throws -> FeatureTable {
        try read { db in try SimilaritySnapshot.read(db) ?? Self.scanFeatureTable(db) }
    }

    /// Two scans in path order merged here, never a join: the vectors table, and `track_similarity`
    /// (an index that covers what the filter needs, so no track row is read). SQLite would look each
    /// vector's track up in the index instead, which for 100,000 tracks cost five times both scans.
    static func scanFeatureTable(_ db: Database) throws -> FeatureTable {
        var table = FeatureTable()
        let eligible = try Row.fetchCursor(db, sql: """
            SELECT relative_path, duration FROM track INDEXED BY \(TrackFeatures.index)
            WHERE \(TrackFeatures.eligible) ORDER BY relative_path
            """, arguments: [SonicFeatures.version])
        let vectors = try Row.fetchCursor(db, sql: "SELECT relative_path, vector FROM \(TrackFeatures.table) ORDER BY relative_path")
        var vector = try vectors.next()
        while let track = try eligible.next() {
            let duration: Double = track[1] ?? 0
            try track.withUnsafeData(atIndex: 0) { path in
                guard let path else { return }
                // Both in SQLite's BINARY order, the UTF-8 bytes' order (Swift's `<` and `==` on
                // Strings are not: `==` holds "ö" equal to "o" + U+0308, two names on disk).
                var order = -1
                while let current = vector {
                    order = try current.withUnsafeData(atIndex: 0) { name in
                        (name ?? Data()).withUnsafeBytes { name in path.withUnsafeBytes { SortedPaths.compare(name, $0) } }
                    }
                    if order >= 0 { break }
                    vector = try vectors.next()
                }
                guard let current = vector, order == 0 else { return }
                let stored = try current.withUnsafeData(atIndex: 1) { data in
                    data.map { data in data.withUnsafeBytes { table.features.append(stored: $0) } } ?? false
                }
                if stored {
                    path.withUnsafeBytes { _ = table.paths.append(utf8: $0) }
                    table.durations.append(duration)
                }
                vector = try vectors.next()
            }
        }
        return table
    }

    /// The same tracks as `featureTable()`, one value per track.
    public func featureRows() throws -> [FeatureRow] {
        let table = try featureTable()
        return (0..<table.paths.count).map { FeatureRow(relativePath: table.paths[$0], features: table.features[$0], duration: table.durations[$0]) }
    }

    /// The first and last tracks with current features in path order (nil when none has them):
    /// ends for timing the similarity commands, found without reading every vector.
    public func similarityQueryTracks() throws -> (first: String, last: String)? {
        try read { db in
            func end(_ order: String) throws -> String? {
                try String.fetchOne(db, sql: """
                    SELECT relative_path FROM track INDEXED BY \(TrackFeatures.index)
                    WHERE \(TrackFeatures.eligible) AND relative_path IN (SELECT relative_path FROM \(TrackFeatures.table))
                    ORDER BY relative_path \(order) LIMIT 1
                    """, arguments: [SonicFeatures.version])
            }
            guard let first = try end("ASC"), let last = try end("DESC") else { return nil }
            return (first, last)
        }
    }

    /// The tags of `paths` (those stored), for the few tracks a query answers with.
    public func tags(of paths: some Collection<String>) throws -> [String: TrackTags] {
        if paths.isEmpty { return [:] }
        return try read { db in
            var tags: [String: TrackTags] = [:]
            for chunk in Array(paths).chunked(500) {
                let records = try TrackTagsRecord.filter(keys: chunk).fetchAll(db)
                for record in records { tags[record.relativePath] = record.tags }
            }
            return tags
        }
    }

    /// The keys of `paths` as their profiles give them (Camelot, read by SQLite's JSON functions
    /// without decoding the profiles); a track without a key is absent.
    public func keys(of paths: some Collection<String>) throws -> [String: MusicalKey] {
        if paths.isEmpty { return [:] }
        return try read { db in
            var keys: [String: MusicalKey] = [:]
            for chunk in Array(paths).chunked(500) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let rows = try Row.fetchAll(db, sql: "SELECT relative_path, json_extract(profile_json, '$.key.camelot') AS camelot FROM track WHERE relative_path IN (\(marks)) AND json_valid(profile_json)",
                                            arguments: StatementArguments(chunk))
                for row in rows {
                    if let camelot: String = row["camelot"], let key = MusicalKey(camelot) { keys[row["relative_path"]] = key }
                }
            }
            return keys
        }
    }

    /// The paths of every present track (with features or not).
    public func allTrackPaths() throws -> [String] {
        try read { try String.fetchAll($0, sql: "SELECT relative_path FROM track INDEXED BY \(TrackFeatures.index) WHERE missing_since IS NULL") }
    }

    /// The normalisation recorded for the library's features now, when it is current.
    public func similarityNormalisation() throws -> SimilarityNormalisation? {
        try read { try Self.normalisation($0) }
    }

    static func normalisation(_ db: Database) throws -> SimilarityNormalisation? {
        guard let json = try meta(MetaKey.similarityNormalisation, db),
              let stored = try? JSONDecoder().decode(SimilarityNormalisation.self, from: Data(json.utf8)),
              stored.featuresVersion == SonicFeatures.version, stored.changeSequence == (try sequence(db)) else { return nil }
        return stored
    }

    /// What the similarity index is built from: the features and their normalisation (nil for
    /// fewer than two tracks).
    public struct SimilarityInput: Sendable {
        public var features: FeatureTable
        public var normalisation: SimilarityNormalisation?
    }

    /// Measures the library's feature normalisation again and rewrites the similarity snapshot
    /// when tracks changed since they were recorded (after every scan and merge, like the album
    /// pass). Both are recorded only if no track changed meanwhile.
    @discardableResult
    public func refreshSimilarityIndex() throws -> SimilarityInput {
        try similarityInput(recording: true)
    }

    /// The features and normalisation for an index, from one read; what is stale is measured here,
    /// and recorded when `recording` (a failure to record then throws) or else when the store can be
    /// written (a read-only store is measured, not written).
    public func similarityInput(recording: Bool = false) throws -> SimilarityInput {
        let (stored, sequence, current, snapshotCurrent) = try read { db in
            let sequence = try Self.sequence(db)
            let snapshot = try SimilaritySnapshot.read(db)
            return (try snapshot ?? Self.scanFeatureTable(db), sequence, try Self.normalisation(db), snapshot != nil)
        }
        var table = stored
        let normalisation = current ?? SimilarityNormalisation(measuring: table.features, changeSequence: sequence)
        if current == nil || !snapshotCurrent {
            // The tracks' distance statistics depend on the normalisation: measured with it, and kept
            // in the snapshot so that a command or a server start does not measure them again.
            table.proximity = SimilarityIndex(keys: table.paths, features: table.features,
                                              normalisation: normalisation ?? .identity(changeSequence: sequence)).proximity
            let written = table
            let record = {
                try self.write { db in
                    guard try Self.sequence(db) == sequence else { return }
                    if let normalisation {
                        try Self.setMeta(MetaKey.similarityNormalisation, String(decoding: try JSONEncoder().encode(normalisation), as: UTF8.self), db)
                    }
                    try SimilaritySnapshot.write(written, sequence: sequence, db)
                }
            }
            if recording { try record() } else { try? record() }
        }
        return SimilarityInput(features: table, normalisation: normalisation)
    }
}
