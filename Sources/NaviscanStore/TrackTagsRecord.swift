import GRDB
import NaviscanCore

/// One row per track in `track_tags` (schema step "v4: tags"): the file's own tags, replaced
/// whenever the track is analysed again, removed with its track row.
struct TrackTagsRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "track_tags"

    var relativePath: String
    var tags: TrackTags

    init(relativePath: String, tags: TrackTags) {
        self.relativePath = relativePath
        self.tags = tags
    }

    init(row: Row) throws {
        relativePath = row["relative_path"]
        var tags = TrackTags()
        tags.title = row["title"]
        tags.artist = row["artist"]
        tags.album = row["album"]
        tags.albumArtist = row["album_artist"]
        tags.discNumber = row["disc_number"]
        tags.discTotal = row["disc_total"]
        tags.trackNumber = row["track_number"]
        tags.trackTotal = row["track_total"]
        tags.year = row["year"]
        tags.genre = row["genre"]
        tags.musicBrainzTrackID = row["musicbrainz_track_id"]
        tags.musicBrainzAlbumID = row["musicbrainz_album_id"]
        tags.replayGainTrackGain = row["replaygain_track_gain"]
        tags.replayGainTrackPeak = row["replaygain_track_peak"]
        tags.replayGainAlbumGain = row["replaygain_album_gain"]
        tags.replayGainAlbumPeak = row["replaygain_album_peak"]
        tags.bpm = row["bpm"]
        self.tags = tags
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["relative_path"] = relativePath
        container["title"] = tags.title
        container["artist"] = tags.artist
        container["album"] = tags.album
        container["album_artist"] = tags.albumArtist
        container["disc_number"] = tags.discNumber
        container["disc_total"] = tags.discTotal
        container["track_number"] = tags.trackNumber
        container["track_total"] = tags.trackTotal
        container["year"] = tags.year
        container["genre"] = tags.genre
        container["musicbrainz_track_id"] = tags.musicBrainzTrackID
        container["musicbrainz_album_id"] = tags.musicBrainzAlbumID
        container["replaygain_track_gain"] = tags.replayGainTrackGain
        container["replaygain_track_peak"] = tags.replayGainTrackPeak
        container["replaygain_album_gain"] = tags.replayGainAlbumGain
        container["replaygain_album_peak"] = tags.replayGainAlbumPeak
        container["bpm"] = tags.bpm
    }

    static func createTable(_ db: Database) throws {
        try db.create(table: databaseTableName) { t in
            t.primaryKey("relative_path", .text)
                .references(TrackRecord.databaseTableName, column: "relative_path", onDelete: .cascade)
            for column in ["title", "artist", "album", "album_artist", "genre", "musicbrainz_track_id", "musicbrainz_album_id"] {
                t.column(column, .text)
            }
            for column in ["disc_number", "disc_total", "track_number", "track_total", "year"] {
                t.column(column, .integer)
            }
            for column in ["replaygain_track_gain", "replaygain_track_peak", "replaygain_album_gain", "replaygain_album_peak", "bpm"] {
                t.column(column, .double)
            }
        }
        try db.create(index: "track_tags_album", on: databaseTableName, columns: ["album_artist", "album"])
    }
}
