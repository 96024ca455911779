import Foundation
import GRDB

/// The SQLite store (GRDB), schema versioned by migrations. All access goes through one serial queue.
public final class TrackStore: @unchecked Sendable {
    public let path: String
    private let queue: DatabaseQueue

    public init(path: String) throws {
        self.path = path
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try Self.migrator.migrate(queue)
        } catch let error as DatabaseError {
            throw LibraryError.store(path: path, reason: error.message ?? "\(error)")
        }
        // A store written by a newer naviscan may have migrations this one does not know.
        let known = Set(Self.migrator.migrations)
        let applied = try queue.read { try Self.migrator.appliedIdentifiers($0) }
        if let unknown = applied.first(where: { !known.contains($0) }) {
            throw LibraryError.store(path: path, reason: "it was written by a newer naviscan (schema step '\(unknown)'); upgrade naviscan or use a different --out")
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: track") { db in
            try db.create(table: TrackRecord.databaseTableName) { t in
                t.primaryKey("relative_path", .text)
                t.column("key", .text).notNull().indexed()
                t.column("size", .integer).notNull()
                t.column("mtime", .double).notNull()
                t.column("status", .text).notNull()
                t.column("error_message", .text)
                t.column("duration", .double)
                t.column("codec", .text)
                t.column("sample_rate", .integer)
                t.column("channels", .integer)
                t.column("analyzer_version", .text).notNull()
                t.column("vis_fingerprint", .text)
                t.column("profile_fingerprint", .text)
                t.column("analyzed_at", .text).notNull()
                t.column("bpm", .double)
                t.column("bpm_confidence", .double)
                t.column("lufs", .double)
                t.column("gain_db", .double)
                t.column("silence_end", .double)
                t.column("silence_start", .double)
                t.column("silent", .boolean)
                t.column("profile_json", .text)
            }
        }
        return migrator
    }

    public func allTracks() throws -> [TrackRecord] {
        try queue.read { try TrackRecord.fetchAll($0) }
    }

    public func track(relativePath: String) throws -> TrackRecord? {
        try queue.read { try TrackRecord.fetchOne($0, key: relativePath) }
    }

    public func save(_ record: TrackRecord) throws {
        try queue.write { try record.save($0) }
    }

    public func delete(relativePath: String) throws {
        _ = try queue.write { try TrackRecord.deleteOne($0, key: relativePath) }
    }

    public func count() throws -> Int {
        try queue.read { try TrackRecord.fetchCount($0) }
    }
}
