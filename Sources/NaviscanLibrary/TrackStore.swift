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
            try Self.migrate(queue)
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

    /// Each migration is its own transaction, but which ones are applied is read before it: two
    /// processes opening a new store at once (a scan and `serve`) can both try to apply the same
    /// step, and the later one fails ("table already exists"). Its transaction rolled back, so it
    /// reads the applied steps again and goes on.
    private static func migrate(_ queue: DatabaseQueue) throws {
        var attempt = 0
        while true {
            do {
                return try migrator.migrate(queue)
            } catch is DatabaseError where attempt < 20 {
                attempt += 1
                usleep(UInt32(10_000 * attempt))
            }
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
        migrator.registerMigration("v2: changed_at, meta") { db in
            try db.alter(table: TrackRecord.databaseTableName) { t in
                t.add(column: "changed_at", .double).notNull().defaults(to: 0)
            }
            try db.create(index: "track_changed_at", on: TrackRecord.databaseTableName, columns: ["changed_at"])
            try db.create(table: "meta") { t in
                t.primaryKey("name", .text)
                t.column("value", .text).notNull()
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

    /// The library this store describes, as the last scan recorded it.
    public func setLibraryRoot(_ path: String) throws {
        try queue.write { try $0.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('library_root', ?)", arguments: [path]) }
    }

    public func libraryRoot() throws -> String? {
        try queue.read { try String.fetchOne($0, sql: "SELECT value FROM meta WHERE name = 'library_root'") }
    }

    // Async reads run on GRDB's own queue, never on the caller's thread (the server's event loops).

    public func track(relativePath: String) async throws -> TrackRecord? {
        try await queue.read { try TrackRecord.fetchOne($0, key: relativePath) }
    }

    /// The stored profile JSON of each path that has one.
    public func profiles(relativePaths: [String]) async throws -> [String: String] {
        try await queue.read { db in
            var found: [String: String] = [:]
            for chunk in stride(from: 0, to: relativePaths.count, by: 500).map({ Array(relativePaths[$0..<min($0 + 500, relativePaths.count)]) }) {
                let rows = try Row.fetchAll(db, sql: "SELECT relative_path, profile_json FROM track WHERE status = 'ok' AND profile_json IS NOT NULL AND relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                                            arguments: StatementArguments(chunk))
                for row in rows { found[row["relative_path"]] = row["profile_json"] }
            }
            return found
        }
    }

    public struct Counts: Sendable { public var profiles: Int; public var vis: Int }

    public func counts() async throws -> Counts {
        try await queue.read { db in
            Counts(profiles: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND profile_fingerprint IS NOT NULL") ?? 0,
                   vis: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND vis_fingerprint IS NOT NULL") ?? 0)
        }
    }

    /// Tracks analysed successfully after `time`, oldest first.
    public func analysedSince(_ time: Double) async throws -> [(relativePath: String, changedAt: Double)] {
        try await queue.read { db in
            try Row.fetchAll(db, sql: "SELECT relative_path, changed_at FROM track WHERE changed_at > ? AND status = 'ok' ORDER BY changed_at", arguments: [time])
                .map { ($0["relative_path"], $0["changed_at"]) }
        }
    }
}
