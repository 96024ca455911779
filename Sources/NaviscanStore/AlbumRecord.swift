import GRDB

/// One row per album in `album` (schema step "v5: replay gain and albums"): the album's measured
/// values and the digest of the members they were measured from.
package struct AlbumRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
    package static let databaseTableName = "album"

    var key: String
    var membersDigest: String
    var lufs: Double?
    var peak: Double?
    var tracks: Int
    var silentTracks: Int

    package init(key: String, membersDigest: String, lufs: Double?, peak: Double?, tracks: Int, silentTracks: Int) {
        self.key = key
        self.membersDigest = membersDigest
        self.lufs = lufs
        self.peak = peak
        self.tracks = tracks
        self.silentTracks = silentTracks
    }

    enum CodingKeys: String, CodingKey {
        case key, membersDigest = "members_digest", lufs, peak, tracks, silentTracks = "silent_tracks"
    }

    static func createTable(_ db: Database) throws {
        try db.create(table: databaseTableName) { t in
            t.primaryKey("key", .text)
            t.column("members_digest", .text).notNull()
            t.column("lufs", .double)
            t.column("peak", .double)
            t.column("tracks", .integer).notNull()
            t.column("silent_tracks", .integer).notNull()
        }
    }
}
