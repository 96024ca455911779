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

    /// Every present track with current features (tracks without them are never neighbours): the
    /// vectors table and the covering index alone, no track row (`TrackFeatures`).
    public func featureRows() throws -> [FeatureRow] {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT f.relative_path, f.vector, t.duration
                FROM \(TrackFeatures.table) f JOIN track t INDEXED BY \(TrackFeatures.index) ON t.relative_path = f.relative_path
                WHERE t.status = 'ok' AND t.missing_since IS NULL AND t.features_version = ?
                ORDER BY f.relative_path
                """, arguments: [SonicFeatures.version])
            var out: [FeatureRow] = []
            while let row = try rows.next() {
                guard let data = row[1] as Data?, let features = SonicFeatures(data: data) else { continue }
                out.append(FeatureRow(relativePath: row[0], features: features, duration: row[2] ?? 0))
            }
            return out
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

    /// The paths of every present track (with features or not).
    public func allTrackPaths() throws -> [String] {
        try read { try String.fetchAll($0, sql: "SELECT relative_path FROM track INDEXED BY \(TrackFeatures.index) WHERE missing_since IS NULL") }
    }

    /// The normalisation recorded for the library's features now, when it is current.
    public func similarityNormalisation() throws -> SimilarityNormalisation? {
        try read { db in
            guard let json = try Self.meta(MetaKey.similarityNormalisation, db),
                  let stored = try? JSONDecoder().decode(SimilarityNormalisation.self, from: Data(json.utf8)),
                  stored.featuresVersion == SonicFeatures.version, stored.changeSequence == (try Self.sequence(db)) else { return nil }
            return stored
        }
    }

    private func recordSimilarityNormalisation(_ normalisation: SimilarityNormalisation) throws {
        let json = String(decoding: try JSONEncoder().encode(normalisation), as: UTF8.self)
        try write { try Self.setMeta(MetaKey.similarityNormalisation, json, $0) }
    }

    /// Measures the library's feature normalisation again when tracks changed since it was recorded
    /// (after every scan and merge, like the album pass).
    @discardableResult
    public func refreshSimilarityNormalisation() throws -> SimilarityNormalisation? {
        if let current = try similarityNormalisation() { return current }
        let sequence = try latestSequence()
        let rows = try featureRows()
        guard let normalisation = SimilarityNormalisation(measuring: rows.map(\.features), changeSequence: sequence) else { return nil }
        try recordSimilarityNormalisation(normalisation)
        return normalisation
    }
}
