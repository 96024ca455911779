import Foundation
import GRDB
import NaviscanCore

/// One change the writer commits: a row written (stamped with the next change sequence) or removed.
public enum StoreChange: Sendable {
    case save(TrackRecord)
    case delete(relativePath: String)
    /// A track's profile rewritten with its album's new values (the file is written already).
    case updateProfile(relativePath: String, json: String, stamp: String?)
    /// An album's new values, recorded with the digest of its members' rows as committed.
    case saveAlbum(AlbumUpdate)
}

/// The SQLite store (GRDB), schema versioned by migrations, in WAL mode through a `DatabasePool`: a
/// server reads while a scan writes. Writes are batched by the caller (`StoreWriter`); every saved row
/// gets the next value of the store's change sequence inside the committing transaction.
public final class TrackStore: @unchecked Sendable {
    public let path: String
    private let pool: DatabasePool

    public init(path: String) throws {
        self.path = path
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            pool = try Self.open(path: path, configuration: configuration)
            // A store written by a newer naviscan may have migrations this one does not know.
            let known = Set(Self.migrator.migrations)
            let applied = try pool.read { try Self.migrator.appliedIdentifiers($0) }
            if let unknown = applied.first(where: { !known.contains($0) }) {
                throw LibraryError.storeFromNewerVersion(path: path, step: unknown)
            }
        } catch {
            throw Self.libraryError(error, path: path)
        }
    }

    /// A meta value read without opening the store for writing (no migration, nothing created): nil
    /// when there is no store, no such value, or the store cannot be read. For looking before a scan.
    public static func peekMeta(_ name: String, path: String) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        return try? queue.read { try String.fetchOne($0, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name]) }
    }

    /// Opens the pool (switching a new file to WAL) and applies the migrations. Each migration is its
    /// own transaction, but which ones are applied is read before it: two processes opening a new store
    /// at once (a scan and `serve`) can both try to apply the same step, and the later one fails
    /// ("already exists"), or finds the file busy while the other switches it to WAL (SQLite answers
    /// that at once, without waiting). Its transaction rolled back, so it opens again and goes on.
    /// Any other error is final.
    private static func open(path: String, configuration: Configuration) throws -> DatabasePool {
        var attempt = 0
        while true {
            do {
                let pool = try DatabasePool(path: path, configuration: configuration)
                try migrator.migrate(pool)
                return pool
            } catch let error as DatabaseError where attempt < 20 && isRaceWithAnotherOpener(error) {
                attempt += 1
                usleep(UInt32(10_000 * attempt))
            }
        }
    }

    private static func isRaceWithAnotherOpener(_ error: DatabaseError) -> Bool {
        switch error.resultCode.primaryResultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return true
        case .SQLITE_ERROR: return ["already exists", "duplicate column"].contains { (error.message ?? "").contains($0) }
        default: return false
        }
    }

    /// The tables with one row per track, keyed by `relative_path`, parent first: `naviscan merge`
    /// copies a track's rows of each. A new per-track table is added here with its migration.
    static let perTrackTables = [TrackRecord.databaseTableName, TrackTagsRecord.databaseTableName]

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
        migrator.registerMigration("v3: change sequence, failure kind, output stamps, content hash, missing") { db in
            try db.alter(table: TrackRecord.databaseTableName) { t in
                t.add(column: "seq", .integer).notNull().defaults(to: 0)
                t.add(column: "failure_kind", .text)
                t.add(column: "vis_stamp", .text)
                t.add(column: "profile_stamp", .text)
                t.add(column: "content_hash", .text)
                t.add(column: "missing_since", .double)
            }
            try db.create(index: "track_seq", on: TrackRecord.databaseTableName, columns: ["seq"])
            try db.create(index: "track_size", on: TrackRecord.databaseTableName, columns: ["size"])
            // Rows from before the sequence existed count as already seen.
            try db.execute(sql: "UPDATE track SET seq = rowid")
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('change_seq', (SELECT COALESCE(MAX(seq), 0) FROM track))")
        }
        migrator.registerMigration("v4: tags") { db in
            try TrackTagsRecord.createTable(db)
        }
        migrator.registerMigration("v5: replay gain and albums") { db in
            try db.alter(table: TrackRecord.databaseTableName) { t in
                t.add(column: "gating_histogram", .blob)
            }
            try AlbumRecord.createTable(db)
        }
        return migrator
    }

    // MARK: writes (one transaction per batch)

    /// Commits `changes` in one transaction; returns the last change sequence assigned.
    @discardableResult
    public func commit(_ changes: [StoreChange]) throws -> Int64 {
        do {
            return try pool.write { db in
                var seq = try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE name = 'change_seq'") ?? 0
                for change in changes {
                    switch change {
                    case .save(var record):
                        seq += 1
                        record.seq = seq
                        try Self.upsert(record, db)
                        if let tags = record.tags {
                            try Self.upsert(TrackTagsRecord(relativePath: record.relativePath, tags: tags), db)
                        }
                    case .delete(let relativePath):
                        _ = try TrackRecord.deleteOne(db, key: relativePath)
                    case .updateProfile(let relativePath, let json, let stamp):
                        seq += 1
                        try db.execute(sql: "UPDATE track SET profile_json = ?, profile_stamp = ?, seq = ?, changed_at = ? WHERE relative_path = ?",
                                       arguments: [json, stamp, seq, Date().timeIntervalSince1970, relativePath])
                    case .saveAlbum(let album):
                        try album.save(db)
                    }
                }
                try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('change_seq', ?)", arguments: ["\(seq)"])
                return seq
            }
        } catch {
            throw Self.libraryError(error, path: path)
        }
    }

    /// Inserts the row, or updates it when one with its primary key exists. GRDB's `save` tries the
    /// update first; a scan mostly adds rows, so the insert goes first here (one encoding, not two).
    private static func upsert<Record: PersistableRecord>(_ record: Record, _ db: Database) throws {
        try record.insert(db, onConflict: .ignore)
        if db.changesCount == 0 { try record.update(db) }
    }

    public func save(_ record: TrackRecord) throws { try commit([.save(record)]) }

    public func delete(relativePath: String) throws { try commit([.delete(relativePath: relativePath)]) }

    /// Marks `relativePaths` as absent but kept (`missing_since`), or present again when `at` is nil.
    public func setMissing(_ relativePaths: [String], since at: Double?) throws {
        guard !relativePaths.isEmpty else { return }
        try write { db in
            for chunk in relativePaths.chunked(500) {
                try db.execute(sql: "UPDATE track SET missing_since = ? WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                               arguments: StatementArguments([at] + chunk.map { $0 as DatabaseValueConvertible? }))
            }
        }
    }

    public func setMeta(_ name: String, _ value: String) throws {
        try write { try $0.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", arguments: [name, value]) }
    }

    // MARK: reads

    /// Every row, with only what a scan plans from (see `TrackRecord.planningColumns`).
    public func planningTracks() throws -> [TrackRecord] {
        try read { db in
            var records: [TrackRecord] = []
            records.reserveCapacity(try TrackRecord.fetchCount(db))
            let rows = try Row.fetchCursor(db, sql: "SELECT \(TrackRecord.planningColumns.joined(separator: ", ")) FROM track")
            while let row = try rows.next() { records.append(TrackRecord(planningRow: row)) }
            return records
        }
    }

    public func allTracks() throws -> [TrackRecord] {
        try read { try TrackRecord.fetchAll($0) }
    }

    public func track(relativePath: String) throws -> TrackRecord? {
        try read { try TrackRecord.fetchOne($0, key: relativePath) }
    }

    /// The tags stored with a track (nil when it has no row or was recorded before tags were read).
    public func tags(relativePath: String) throws -> TrackTags? {
        try read { try TrackTagsRecord.fetchOne($0, key: relativePath)?.tags }
    }

    public func count() throws -> Int {
        try read { try TrackRecord.fetchCount($0) }
    }

    public func meta(_ name: String) throws -> String? {
        try read { try String.fetchOne($0, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name]) }
    }

    /// The library this store describes, as the last trusted scan recorded it.
    public func libraryRoot() throws -> String? { try meta(MetaKey.libraryRoot) }

    public func setLibraryRoot(_ path: String) throws { try setMeta(MetaKey.libraryRoot, path) }

    /// The shards this store holds; nil for the whole library (or a new store).
    public func shardCoverage() throws -> ShardSet? {
        try meta(MetaKey.shard).flatMap(ShardSet.init(recorded:))
    }

    /// Records the shards this store holds; nil for the whole library.
    public func setShardCoverage(_ coverage: ShardSet?) throws {
        if let coverage { try setMeta(MetaKey.shard, coverage.description) } else { try removeMeta(MetaKey.shard) }
    }

    public func removeMeta(_ name: String) throws {
        try write { try $0.execute(sql: "DELETE FROM meta WHERE name = ?", arguments: [name]) }
    }

    // Async reads run on GRDB's reader pool, never on the caller's thread (the server's event loops).

    public func track(relativePath: String) async throws -> TrackRecord? {
        try await asyncRead { try TrackRecord.fetchOne($0, key: relativePath) }
    }

    /// Every track with its tags, ordered by path (the web page's library table).
    public func tracksWithTags() async throws -> [TrackRecord] {
        try await asyncRead { db in
            var tags: [String: TrackTags] = [:]
            for record in try TrackTagsRecord.fetchAll(db) { tags[record.relativePath] = record.tags }
            var tracks = try TrackRecord.order(Column("relative_path")).fetchAll(db)
            for i in tracks.indices { tracks[i].tags = tags[tracks[i].relativePath] }
            return tracks
        }
    }

    /// The stored profile JSON of each path that has one.
    public func profiles(relativePaths: [String]) async throws -> [String: String] {
        try await asyncRead { db in
            var found: [String: String] = [:]
            for chunk in relativePaths.chunked(500) {
                let rows = try Row.fetchAll(db, sql: "SELECT relative_path, profile_json FROM track WHERE status = 'ok' AND profile_json IS NOT NULL AND relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                                            arguments: StatementArguments(chunk))
                for row in rows { found[row["relative_path"]] = row["profile_json"] }
            }
            return found
        }
    }

    /// A stored output a reader found damaged.
    public enum DamagedOutput: String, Sendable {
        case visualizerFrames = "visualizer frames", profile, waveform
    }

    /// Forgets the fingerprint of a damaged output (and a damaged profile's JSON), so nothing serves
    /// it any more and the next scan's incremental rule analyses the track again. Only that output:
    /// a damaged waveform leaves the profile served and clears the row's analyser version instead
    /// (the waveform has no fingerprint of its own), which the same rule reads as "analyse again".
    public func markDamaged(relativePath: String, output: DamagedOutput) async throws {
        let columns: String
        switch output {
        case .visualizerFrames: columns = "vis_fingerprint = NULL"
        case .profile: columns = "profile_fingerprint = NULL, profile_json = NULL"
        case .waveform: columns = "analyzer_version = ''"
        }
        do {
            try await pool.write { try $0.execute(sql: "UPDATE track SET \(columns) WHERE relative_path = ?", arguments: [relativePath]) }
        } catch { throw Self.libraryError(error, path: path) }
    }

    public struct Counts: Sendable { public var profiles: Int; public var vis: Int; public var failed: Int }

    public func counts() async throws -> Counts {
        try await asyncRead { db in
            Counts(profiles: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND profile_fingerprint IS NOT NULL") ?? 0,
                   vis: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND vis_fingerprint IS NOT NULL") ?? 0,
                   failed: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'failed'") ?? 0)
        }
    }

    /// The last change sequence committed.
    public func latestSequence() async throws -> Int64 {
        try await asyncRead { try Int64.fetchOne($0, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE name = 'change_seq'") ?? 0 }
    }

    /// Rows written after sequence `after`, in commit order (at most `limit`).
    public func changes(after: Int64, limit: Int = 1000) async throws -> [(relativePath: String, seq: Int64, status: TrackRecord.Status, error: String?)] {
        try await asyncRead { db in
            try Row.fetchAll(db, sql: "SELECT relative_path, seq, status, error_message FROM track WHERE seq > ? ORDER BY seq LIMIT ?",
                             arguments: [after, limit])
                .map { ($0["relative_path"], $0["seq"], TrackRecord.Status(rawValue: $0["status"]) ?? .failed, $0["error_message"]) }
        }
    }

    // MARK: damage and the way out

    /// Moves a damaged store (and its WAL files) aside as `naviscan.db.damaged-TIME`; returns that name.
    public static func setAside(path: String) throws -> String {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let aside = "\(path).damaged-\(stamp)"
        let fm = FileManager.default
        if fm.fileExists(atPath: path) {
            do { try fm.moveItem(atPath: path, toPath: aside) } catch {
                throw LibraryError.storeFault(path: path, reason: "cannot move it aside (\(plainReason(error)))")
            }
        }
        for suffix in ["-wal", "-shm"] where fm.fileExists(atPath: path + suffix) {
            try? fm.moveItem(atPath: path + suffix, toPath: aside + suffix)
        }
        return aside
    }

    /// A GRDB/SQLite error as what it means for a self-hoster.
    static func libraryError(_ error: Error, path: String) -> Error {
        guard let error = error as? DatabaseError else { return error }
        let message = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return LibraryError.storeDamaged(path: path, reason: message)
        case .SQLITE_FULL:
            return LibraryError.storeFault(path: path, reason: "the disk is full")
        case .SQLITE_IOERR:
            return LibraryError.storeFault(path: path, reason: "an I/O error (\(message)); check the disk")
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN, .SQLITE_AUTH:
            return LibraryError.storeFault(path: path, reason: "it cannot be written (\(message)); check the permissions of its folder, or use another --out")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return LibraryError.storeFault(path: path, reason: "it stayed locked by another program for 10 s")
        default:
            return LibraryError.store(path: path, reason: message)
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try pool.read(body) } catch { throw Self.libraryError(error, path: path) }
    }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try pool.write(body) } catch { throw Self.libraryError(error, path: path) }
    }

    private func asyncRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await pool.read(body) } catch { throw Self.libraryError(error, path: path) }
    }
}

/// The names of the store's `meta` rows.
public enum MetaKey {
    public static let libraryRoot = "library_root"
    /// The device number of the library root at the last trusted scan (a mount that is down differs).
    public static let libraryDevice = "library_device"
    /// The shards the store holds (`ShardSet`), absent for the whole library.
    public static let shard = "shard"
    /// The analysis parameters of the last scan (JSON, written by the CLI).
    public static let analysisParameters = "analysis_parameters"
    /// The files that failed in the last scan (JSON array of relative paths).
    public static let failedPaths = "failed_paths"
    /// The change sequence, track count and album rule when albums were last measured (`AlbumGain`).
    public static let albumsMeasured = "albums_measured"
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// The system's reason inside a Foundation error, without its domain and code.
public func plainReason(_ error: Error) -> String {
    let ns = error as NSError
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return String(cString: strerror(Int32(underlying.code)))
    }
    if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
    // Foundation's own sentences ("The operation could not be completed. The volume is read only.").
    if ns.domain == NSCocoaErrorDomain {
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileWriteVolumeReadOnly: return "read-only file system"
        case .fileWriteNoPermission, .fileReadNoPermission: return "permission denied"
        case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file or directory"
        case .fileWriteOutOfSpace: return "no space left on device"
        default: break
        }
    }
    return ns.localizedDescription
}
