import Foundation
import GRDB

/// One change of the library as a client of `/ws/push` sees it, numbered with the store's change
/// sequence. Written in the transaction that makes the change, so a client that remembers the last
/// number it saw asks for exactly what came after it (`events(after:)`), one event per change.
public struct LibraryEvent: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A track's analysis was stored (new, changed, or moved here).
        case trackAnalyzed = "track_analyzed"
        /// A track's analysis failed; `detail` says why.
        case trackFailed = "track_failed"
        /// A track left the library: its file is gone (kept as missing) or its row was removed.
        case trackRemoved = "track_removed"
        /// A track that had gone missing is back, with the analysis stored before.
        case trackRestored = "track_restored"
        /// An album's gain and peak changed; `relativePaths` are the members whose profiles were rewritten.
        case albumUpdated = "album_updated"
    }

    public var seq: Int64
    public var kind: Kind
    /// The track (empty for `albumUpdated`).
    public var relativePath: String
    /// `albumUpdated`'s members.
    public var relativePaths: [String]
    /// `trackFailed`'s reason.
    public var detail: String?
}

extension LibraryStore {
    /// How many events the store keeps: a client that was away for more is told to reload.
    public static let keptEvents: Int64 = 10_000

    /// Events after `after`, in order (at most `limit`).
    public func events(after: Int64, limit: Int = 1000) async throws -> [LibraryEvent] {
        try await asyncRead { db in
            try Row.fetchAll(db, sql: "SELECT seq, kind, relative_path, detail FROM change_event WHERE seq > ? ORDER BY seq LIMIT ?",
                             arguments: [after, limit]).compactMap(Self.event)
        }
    }

    /// The first event still kept (nil when none is): a client whose last seen number is below
    /// `first - 1` has missed events that are gone.
    public func firstKeptEvent() async throws -> Int64? {
        try await asyncRead { try Int64.fetchOne($0, sql: "SELECT MIN(seq) FROM change_event") }
    }

    private static func event(_ row: Row) -> LibraryEvent? {
        guard let kind = LibraryEvent.Kind(rawValue: row["kind"]) else { return nil }
        let detail: String? = row["detail"]
        var paths: [String] = []
        if kind == .albumUpdated, let data = detail?.data(using: .utf8) {
            paths = (try? JSONDecoder().decode([String].self, from: data)) ?? []
        }
        return LibraryEvent(seq: row["seq"], kind: kind, relativePath: row["relative_path"], relativePaths: paths,
                            detail: kind == .albumUpdated ? nil : detail)
    }

    /// Records one event under `seq` (the change sequence the caller assigned to the change).
    static func recordEvent(_ kind: LibraryEvent.Kind, seq: Int64, relativePath: String, detail: String? = nil, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO change_event (seq, kind, relative_path, detail, at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [seq, kind.rawValue, relativePath, detail, Date().timeIntervalSince1970])
    }

    static func recordAlbumEvent(seq: Int64, members: [String], _ db: Database) throws {
        let detail = String(decoding: try JSONEncoder().encode(members), as: UTF8.self)
        try recordEvent(.albumUpdated, seq: seq, relativePath: "", detail: detail, db)
    }

    /// Forgets events older than the last `keptEvents`.
    static func trimEvents(through seq: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM change_event WHERE seq <= ?", arguments: [seq - keptEvents])
    }

    static func createEventTable(_ db: Database) throws {
        try db.create(table: "change_event") { t in
            t.primaryKey("seq", .integer)
            t.column("kind", .text).notNull()
            t.column("relative_path", .text).notNull()
            t.column("detail", .text)
            t.column("at", .double).notNull()
        }
    }
}
