import Foundation
import GRDB
import NaviscanCore

/// The store: the one type that touches the database (GRDB's `AppDatabase` pattern). It owns the
/// schema (its migrator), every SQL statement, the `meta` keys and the change sequence; everything
/// else asks it through named reads and named write transactions:
///
/// - tracks: `commitTracks` (scan, precompute and album rows, each saved row stamped with the next
///   change sequence and recorded as a `LibraryEvent`), `markMissing`, `markNeedsAnalysis` (a reader
///   found an output damaged);
/// - records: `recordScan` (parameters, last scan, failed paths: every scan records itself here),
///   `recordLibraryIdentity`, `recordShardCoverage`, `recordMerge`, `updateFailedPaths`;
/// - albums (`LibraryStore+Albums`) and shard rows for `naviscan merge` (`LibraryStore+Merge`).
///
/// On disk it is SQLite in WAL mode through a `DatabasePool` (a server reads while a scan writes);
/// `inMemory()` gives the same store in memory for unit tests, `readOnly(path:)` one that never
/// writes (a shard store being merged).
public final class LibraryStore: @unchecked Sendable {
    /// The store file (":memory:" for an in-memory store).
    public let path: String
    let database: any DatabaseWriter

    /// Opens (or creates) the store at `path` and applies its migrations.
    public init(path: String) throws {
        self.path = path
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            database = try Self.open(path: path, configuration: configuration)
            try Self.refuseUnknownSteps(database, path: path)
        } catch {
            throw Self.libraryError(error, path: path)
        }
    }

    /// A store on `database` (migrated here): `inMemory()` and tests.
    public init(database: any DatabaseWriter, path: String = ":memory:") throws {
        self.path = path
        self.database = database
        do { try Self.migrator.migrate(database) } catch { throw Self.libraryError(error, path: path) }
    }

    /// An empty store in memory, with the same schema.
    public static func inMemory() throws -> LibraryStore {
        try LibraryStore(database: try DatabaseQueue())
    }

    /// The store at `path`, opened read-only: nothing is created or migrated, and a store whose
    /// schema is not exactly this naviscan's is refused (`LibraryError.storeSchemaDiffers`).
    ///
    /// A store whose write-ahead log is empty or gone (every naviscan command checkpoints before it
    /// ends) is opened immutable: SQLite then makes no side files, so a shard folder on a read-only
    /// mount can be merged. A log with frames in it is read the ordinary way, which needs its
    /// shared-memory file beside it, and names that when the folder cannot be written.
    /// A store for commands that read it (the similarity queries): writable when it can be, so that
    /// what they measure is recorded for the next one, and read-only when it cannot (a read-only
    /// mount, a folder of another user's), where they answer all the same.
    public static func forQueries(path: String) throws -> LibraryStore {
        do { return try LibraryStore(path: path) } catch LibraryError.storeUnwritable { return try readOnly(path: path) }
    }

    public static func readOnly(path: String) throws -> LibraryStore {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        let walHasFrames = ((try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0) > 0
        do {
            let queue: DatabaseQueue
            if !walHasFrames, let immutable = try? DatabaseQueue(path: immutableURI(path), configuration: configuration),
               (try? immutable.read { try $0.tableExists(MetaKey.table) }) == true {
                queue = immutable
            } else {
                queue = try DatabaseQueue(path: path, configuration: configuration)
            }
            let applied = try queue.read { try migrator.appliedIdentifiers($0) }
            guard applied == Set(migrator.migrations) else { throw LibraryError.storeSchemaDiffers(path: path) }
            return LibraryStore(readOnly: queue, path: path)
        } catch let error as LibraryError {
            throw error
        } catch {
            if walHasFrames, !FileManager.default.isWritableFile(atPath: (path as NSString).deletingLastPathComponent) {
                throw LibraryError.storeFault(path: path, reason: "its write-ahead log (\(path)-wal) still holds changes and its folder cannot be written, so SQLite cannot read them; open that folder read-write once (any naviscan command on it finishes the log)")
            }
            throw libraryError(error, path: path)
        }
    }

    /// An SQLite URI for `path` opened immutable (no locks, no side files). SQLite on Debian takes
    /// URIs as file names; where it does not, the open fails and the ordinary one is used.
    private static func immutableURI(_ path: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "/-._~"))
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    private init(readOnly queue: DatabaseQueue, path: String) {
        self.path = path
        database = queue
    }

    /// A store written by a newer naviscan may have migrations this one does not know.
    private static func refuseUnknownSteps(_ database: any DatabaseWriter, path: String) throws {
        let known = Set(migrator.migrations)
        let applied = try database.read { try migrator.appliedIdentifiers($0) }
        if let unknown = applied.first(where: { !known.contains($0) }) {
            throw LibraryError.storeFromNewerVersion(path: path, step: unknown)
        }
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
    static let perTrackTables = [TrackRecord.databaseTableName, TrackTagsRecord.databaseTableName, TrackFeatures.table]

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
            try db.create(table: MetaKey.table) { t in
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
            try storeSequence(try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(seq), 0) FROM track") ?? 0, db)
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
        migrator.registerMigration("v6: change events") { db in
            try createEventTable(db)
        }
        migrator.registerMigration("v7: similarity features") { db in
            try db.alter(table: TrackRecord.databaseTableName) { t in
                t.add(column: "features", .blob)
                t.add(column: "features_version", .integer)
            }
        }
        migrator.registerMigration("v8: stage versions") { db in
            try db.alter(table: TrackRecord.databaseTableName) { t in t.add(column: "stage_versions", .text) }
            // 0.5.9 analysed with version 1 of every stage: its rows stay current. Rows of earlier
            // releases keep no versions, so every stage of theirs is stale.
            try db.execute(sql: "UPDATE track SET stage_versions = ? WHERE analyzer_version = '0.5.9'",
                           arguments: [StageVersions.release059.description])
        }
        migrator.registerMigration("v9: feature vectors apart from the track rows") { db in
            // The similarity queries read every vector: in their own table (and the filter's columns
            // in an index) they read a few megabytes, not every row's profile and histogram.
            try TrackFeatures.createTable(db)
            try db.execute(sql: "INSERT INTO \(TrackFeatures.table) (relative_path, vector) SELECT relative_path, features FROM track WHERE features IS NOT NULL")
            try db.alter(table: TrackRecord.databaseTableName) { t in t.drop(column: "features") }
            try TrackFeatures.createIndex(db)
        }
        migrator.registerMigration("v10: similarity snapshot") { db in
            try SimilaritySnapshot.createTable(db)
        }
        return migrator
    }

    // MARK: the change sequence and meta rows (only here)

    /// The last change sequence assigned. Every saved row takes the next one inside its transaction,
    /// so a reader that remembers a sequence asks for what came after it (`events(after:)`).
    static func sequence(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE name = ?", arguments: [MetaKey.changeSequence]) ?? 0
    }

    static func storeSequence(_ seq: Int64, _ db: Database) throws {
        try setMeta(MetaKey.changeSequence, "\(seq)", db)
    }

    static func meta(_ name: String, _ db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name])
    }

    static func setMeta(_ name: String, _ value: String?, _ db: Database) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", arguments: [name, value])
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE name = ?", arguments: [name])
        }
    }

    // MARK: the file on disk

    /// Copies the write-ahead log into the main file and empties the log, so `naviscan.db` alone is
    /// the whole store (what a backup, an rsync or a copy of one file takes). Every command that
    /// writes the store calls it before it ends. A reader that holds the log (a server reading
    /// beside a scan) can keep it from being emptied; the frames are then copied as far as it allows.
    public func checkpoint() throws {
        guard database is DatabasePool else { return }
        do {
            try database.writeWithoutTransaction { db in
                do { try db.checkpoint(.truncate) } catch { try db.checkpoint(.passive) }
            }
        } catch {
            throw Self.libraryError(error, path: path)
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
            return LibraryError.storeUnwritable(path: path, reason: message)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return LibraryError.storeFault(path: path, reason: "it stayed locked by another program for 10 s")
        default:
            return LibraryError.store(path: path, reason: message)
        }
    }

    /// SQLite's check of the file's structure (`PRAGMA quick_check`: every page, b-tree and record;
    /// not whether each index matches its table, which costs a sort per index): the first problems
    /// it names, empty when it finds none. A page too damaged to check throws `storeDamaged`.
    public func structuralProblems() throws -> [String] {
        // One row may hold several lines, headed by "*** in database main ***".
        try read { try String.fetchAll($0, sql: "PRAGMA quick_check(3)") }
            .flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0 != "ok" && !$0.hasPrefix("***") }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try database.read(body) } catch { throw Self.libraryError(error, path: path) }
    }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try database.write(body) } catch { throw Self.libraryError(error, path: path) }
    }

    // Async reads and writes run on GRDB's own threads, never on the caller's (the server's event loops).

    func asyncRead<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await database.read(body) } catch { throw Self.libraryError(error, path: path) }
    }

    func asyncWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do { return try await database.write(body) } catch { throw Self.libraryError(error, path: path) }
    }
}

/// The names of the store's `meta` rows: written and read only by `LibraryStore`.
enum MetaKey {
    static let table = "meta"
    /// The last change sequence assigned.
    static let changeSequence = "change_seq"
    static let libraryRoot = "library_root"
    /// The device number of the library root at the last trusted scan (a mount that is down differs).
    static let libraryDevice = "library_device"
    /// The shards the store holds (`ShardSet`), absent for the whole library.
    static let shard = "shard"
    /// The analysis parameters of the last scan (`AnalysisParameters` as JSON).
    static let analysisParameters = "analysis_parameters"
    /// The last scan (`ScanRecord` as JSON).
    static let lastScan = "last_scan"
    /// The files that failed in the last scan (JSON array of relative paths).
    static let failedPaths = "failed_paths"
    /// The change sequence, track count and album rule when albums were last measured (`AlbumGain`).
    static let albumsMeasured = "albums_measured"
    /// The library's feature normalisation (`SimilarityNormalisation` as JSON).
    static let similarityNormalisation = "similarity_normalisation"
    /// What the similarity snapshot's blocks hold (`SimilaritySnapshot.Description` as JSON).
    static let similaritySnapshot = "similarity_snapshot"
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
        case .fileWriteFileExists: return "a file of that name is in the way, not a folder"
        case .fileWriteOutOfSpace: return "no space left on device"
        default: break
        }
    }
    return ns.localizedDescription
}
