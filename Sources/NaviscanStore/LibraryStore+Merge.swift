import Foundation
import GRDB
import NaviscanCore

/// What `naviscan merge` reads from shard stores and writes into its output: a track's rows of
/// every per-track table, copied as they are (columns by name), the change sequence renumbered.
extension LibraryStore {
    /// A per-track table and its columns, in this store's order.
    public struct TrackTable: Sendable {
        public let name: String
        public let columns: [String]
        var list: String { columns.map { "\"\($0)\"" }.joined(separator: ", ") }

        public func position(of column: String) -> Int? { columns.firstIndex(of: column) }
    }

    /// One track's rows in each per-track table (outer: table; then rows; then values in column order).
    /// Read and changed by column name only: the values stay the database's own.
    public struct TrackRows: Sendable, Equatable {
        public var relativePath: String
        var tables: [[[DatabaseValue]]]

        /// A text column of the track's own row (the track table's); nil when absent or not text.
        public func trackText(_ column: String, in tables: [TrackTable]) -> String? {
            tables[0].position(of: column).flatMap { String.fromDatabaseValue(self.tables[0][0][$0]) }
        }

        /// Sets a text column of the track's own row, when this store has the column.
        public mutating func setTrackText(_ column: String, _ value: String, in tables: [TrackTable]) {
            guard let position = tables[0].position(of: column) else { return }
            self.tables[0][0][position] = value.databaseValue
        }

        /// The same rows as `other` in every table, the track's own row compared without the columns `apart`.
        public func same(as other: TrackRows, apart: Set<String>, in tables: [TrackTable]) -> Bool {
            let compared = tables[0].columns.indices.filter { !apart.contains(tables[0].columns[$0]) }
            return compared.allSatisfy { self.tables[0][0][$0] == other.tables[0][0][$0] }
                && self.tables.indices.dropFirst().allSatisfy { self.tables[$0] == other.tables[$0] }
        }
    }

    /// The per-track tables (the track table first) with this store's columns.
    public func trackTables() throws -> [TrackTable] {
        try read { db in try Self.perTrackTables.map { TrackTable(name: $0, columns: try db.columns(in: $0).map(\.name)) } }
    }

    /// Every track's rows, `size` tracks at a time, with the columns of `tables` (another store's).
    public func forEachTrackBatch(tables: [TrackTable], size: Int, _ body: ([TrackRows]) throws -> Void) throws {
        try read { db in
            let cursor = try Row.fetchCursor(db, sql: "SELECT \(tables[0].list) FROM \(tables[0].name)")
            var batch: [Row] = []
            func flush() throws {
                guard !batch.isEmpty else { return }
                let rows = try Self.trackRows(batch, tables: tables, db)
                try body(batch.compactMap { rows[$0["relative_path"] as String] })
                batch.removeAll(keepingCapacity: true)
            }
            while let row = try cursor.next() {
                batch.append(row.copy())
                if batch.count == size { try flush() }
            }
            try flush()
        }
    }

    /// The rows of the tracks at `paths` that this store holds.
    public func trackRows(tables: [TrackTable], paths: [String]) throws -> [String: TrackRows] {
        try read { db in
            let rows = try paths.chunked(500).flatMap { chunk in
                try Row.fetchAll(db, sql: "SELECT \(tables[0].list) FROM \(tables[0].name) WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                                 arguments: StatementArguments(Array(chunk)))
            }
            return try Self.trackRows(rows, tables: tables, db)
        }
    }

    private static func trackRows(_ trackRows: [Row], tables: [TrackTable], _ db: Database) throws -> [String: TrackRows] {
        let paths = trackRows.map { $0["relative_path"] as String }
        var result: [String: TrackRows] = [:]
        for (path, row) in zip(paths, trackRows) {
            result[path] = TrackRows(relativePath: path, tables: [[Array(row.databaseValues)]] + tables.dropFirst().map { _ in [] })
        }
        for (index, table) in tables.enumerated().dropFirst() {
            for chunk in paths.chunked(500) {
                let rows = try Row.fetchAll(db, sql: "SELECT \(table.list) FROM \(table.name) WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                                            arguments: StatementArguments(Array(chunk)))
                for row in rows { result[row["relative_path"] as String]?.tables[index].append(Array(row.databaseValues)) }
            }
        }
        return result
    }

    /// Replaces each track's rows in every per-track table with `tracks`' in one transaction; each
    /// track row takes the next change sequence.
    public func replaceTracks(_ tracks: [TrackRows], tables: [TrackTable]) throws {
        guard !tracks.isEmpty else { return }
        try write { db in
            var seq = try Self.sequence(db)
            let seqPosition = tables[0].position(of: "seq")
            let statusPosition = tables[0].position(of: "status"), errorPosition = tables[0].position(of: "error_message")
            for track in tracks {
                for table in tables.reversed() {
                    try db.execute(sql: "DELETE FROM \(table.name) WHERE relative_path = ?", arguments: [track.relativePath])
                }
                for (index, (table, rows)) in zip(tables, track.tables).enumerated() {
                    for var values in rows {
                        if index == 0, let seqPosition {
                            seq += 1
                            values[seqPosition] = seq.databaseValue
                            let failed = statusPosition.map { String.fromDatabaseValue(values[$0]) == TrackRecord.Status.failed.rawValue } ?? false
                            try Self.recordEvent(failed ? .trackFailed : .trackAnalyzed, seq: seq, relativePath: track.relativePath,
                                                 detail: failed ? errorPosition.flatMap { String.fromDatabaseValue(values[$0]) } : nil, db)
                        }
                        try db.execute(sql: "INSERT INTO \(table.name) (\(table.list)) VALUES (\(databaseQuestionMarks(count: values.count)))",
                                       arguments: StatementArguments(values))
                    }
                }
            }
            try Self.storeSequence(seq, db)
            try Self.trimEvents(through: seq, db)
        }
    }

    /// Removes the tracks at `paths` from every per-track table; returns their output keys.
    public func removeTracks(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else { return [] }
        return try write { db in
            var keys: [String] = []
            var seq = try Self.sequence(db)
            for path in paths {
                let key = try String.fetchOne(db, sql: "SELECT key FROM track WHERE relative_path = ?", arguments: [path])
                for table in Self.perTrackTables.reversed() {
                    try db.execute(sql: "DELETE FROM \(table) WHERE relative_path = ?", arguments: [path])
                }
                guard let key else { continue }
                keys.append(key)
                seq += 1
                try Self.recordEvent(.trackRemoved, seq: seq, relativePath: path, db)
            }
            try Self.storeSequence(seq, db)
            return keys
        }
    }

    /// Every track's path and the stage versions its results came from (`TrackRecord.stageVersions`,
    /// read and written again so that equal versions compare equal); "unknown" for rows of releases
    /// before 0.5.9. The features' version is left out: the next scan measures stale ones alone.
    public func stageVersionsByPath() throws -> [String: String] {
        try read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT relative_path, stage_versions FROM track").map { row in
                (row["relative_path"] as String, (row["stage_versions"] as String?).map { StageVersions(stored: $0).description } ?? "unknown")
            })
        }
    }
}
