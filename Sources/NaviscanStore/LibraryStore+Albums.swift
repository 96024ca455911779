import Foundation
import GRDB
import NaviscanCore

/// What the album pass (`AlbumGain`) reads and records.
extension LibraryStore {
    /// A track that can belong to an album: analysed with a profile.
    package struct AlbumMember: Sendable {
        package var relativePath: String
        package var seq: Int64
        package var tags: TrackTags
    }

    /// What one member contributes to its album's measurement.
    package struct AlbumInput: Sendable {
        package var relativePath: String
        package var key: String
        package var profileJSON: String
        package var profileFileWritten: Bool
        package var gatingHistogram: Data?
    }

    /// Neither the change sequence nor the track count moved since albums were last measured under
    /// `rule`: no album can have changed (a no-change re-scan of 100,000 tracks skips reading them).
    package func albumsMeasured(rule: String) throws -> Bool {
        try read { try Self.albumState($0, rule: rule) == Self.meta(MetaKey.albumsMeasured, $0) }
    }

    package func recordAlbumsMeasured(rule: String) throws {
        try write { try Self.setMeta(MetaKey.albumsMeasured, try Self.albumState($0, rule: rule), $0) }
    }

    private static func albumState(_ db: Database, rule: String) throws -> String {
        "\(try sequence(db)) \(try TrackRecord.fetchCount(db)) \(rule)"
    }

    package func albumMembers() throws -> [AlbumMember] {
        try read { db in
            var members: [AlbumMember] = []
            let rows = try Row.fetchCursor(db, sql: """
                SELECT t.relative_path, t.seq, g.artist, g.album_artist, g.album, g.disc_number
                FROM track t LEFT JOIN track_tags g ON g.relative_path = t.relative_path
                WHERE t.status = 'ok' AND t.profile_json IS NOT NULL
                """)
            while let row = try rows.next() {
                var tags = TrackTags()
                tags.artist = row["artist"]
                tags.albumArtist = row["album_artist"]
                tags.album = row["album"]
                tags.discNumber = row["disc_number"]
                members.append(AlbumMember(relativePath: row["relative_path"], seq: row["seq"], tags: tags))
            }
            return members
        }
    }

    /// Each recorded album's key and the digest of the members it was measured from.
    package func albumDigests() throws -> [String: String] {
        try read { db in Dictionary(uniqueKeysWithValues: try AlbumRecord.fetchAll(db).map { ($0.key, $0.membersDigest) }) }
    }

    package func removeAlbums(_ keys: [String]) throws {
        guard !keys.isEmpty else { return }
        try write { db in for key in keys { _ = try AlbumRecord.deleteOne(db, key: key) } }
    }

    package func albumInputs(_ relativePaths: [String]) throws -> [AlbumInput] {
        try read { db in
            try relativePaths.chunked(500).flatMap { chunk in
                try Row.fetchAll(db, sql: """
                    SELECT relative_path, key, profile_json, profile_stamp, gating_histogram FROM track
                    WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count))) AND profile_json IS NOT NULL
                    """, arguments: StatementArguments(Array(chunk)))
            }.map { row in
                AlbumInput(relativePath: row["relative_path"], key: row["key"], profileJSON: row["profile_json"],
                           profileFileWritten: row["profile_stamp"] as String? != nil, gatingHistogram: row["gating_histogram"])
            }
        }
    }

    /// The album row, with the digest of its members' rows as this transaction sees them.
    static func saveAlbum(_ album: AlbumUpdate, _ db: Database) throws {
        let members = try album.members.chunked(500).flatMap { chunk in
            try Row.fetchAll(db, sql: "SELECT relative_path, seq FROM track WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                             arguments: StatementArguments(Array(chunk)))
        }.map { (relativePath: $0["relative_path"] as String, seq: $0["seq"] as Int64) }
        var record = album.record
        record.membersDigest = album.digest(members)
        try record.save(db)
    }
}
