import Foundation
import GRDB

/// A track's similarity features (`TrackRecord.features`), in a table of their own: the similarity
/// queries read every vector, and beside the path a vector is 172 bytes, where a track row with its
/// profile and gating histogram is kilobytes. What the queries filter on (present, analysed, the
/// features' version, and the duration they compare) is read from `track_similarity`, an index that
/// covers it, so they never read a track row.
enum TrackFeatures {
    static let table = "track_features"
    static let index = "track_similarity"
    /// The tracks the similarity queries read (present, analysed, features of this version), as the
    /// condition on `track` that `index` covers; its one argument is `SonicFeatures.version`.
    static let eligible = "status = 'ok' AND missing_since IS NULL AND features_version = ?"

    static func createTable(_ db: Database) throws {
        try db.create(table: table, options: .withoutRowID) { t in
            t.primaryKey("relative_path", .text)
                .references(TrackRecord.databaseTableName, column: "relative_path", onDelete: .cascade)
            t.column("vector", .blob).notNull()
        }
    }

    static func createIndex(_ db: Database) throws {
        try db.create(index: index, on: TrackRecord.databaseTableName,
                      columns: ["relative_path", "status", "missing_since", "features_version", "duration"])
    }

    /// Writes the row's vector, or removes it when the row has none.
    static func save(_ record: TrackRecord, _ db: Database) throws {
        if let vector = record.features {
            try db.execute(sql: "INSERT OR REPLACE INTO \(table) (relative_path, vector) VALUES (?, ?)", arguments: [record.relativePath, vector])
        } else {
            try db.execute(sql: "DELETE FROM \(table) WHERE relative_path = ?", arguments: [record.relativePath])
        }
    }

    /// `records` with their vectors filled in (rows read from `track` have none).
    static func fill(_ records: [TrackRecord], _ db: Database) throws -> [TrackRecord] {
        if records.isEmpty { return records }
        var vectors: [String: Data] = [:]
        if records.count == 1 {
            vectors[records[0].relativePath] = try Data.fetchOne(db, sql: "SELECT vector FROM \(table) WHERE relative_path = ?", arguments: [records[0].relativePath])
        } else {
            let rows = try Row.fetchCursor(db, sql: "SELECT relative_path, vector FROM \(table)")
            while let row = try rows.next() { vectors[row[0]] = row[1] }
        }
        return records.map { record in
            var filled = record
            filled.features = vectors[record.relativePath]
            return filled
        }
    }
}
