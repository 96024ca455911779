import Foundation
import GRDB
import NaviscanCore

/// Album loudness and ReplayGain album gain, measured from the store alone: each member's gating
/// histogram (kept when it was analysed) is gated together with the others', as libebur128's
/// `ebur128_loudness_global_multiple` gates several tracks' blocks, so nothing is decoded again.
///
/// `recompute` is the one entry point: run after every scan (and after anything else that changes
/// tracks, such as merging shards). It groups the stored tracks into albums, finds the albums whose
/// members changed since it last ran (by a digest of their paths and change sequences), measures
/// those, and rewrites their members' profiles (file and stored copy) with the album values.
public enum AlbumGain {
    public struct Outcome: Sendable, Equatable {
        /// Albums measured again because a member was added, changed or removed.
        public var albumsMeasured = 0
        /// Member profiles rewritten with new album values.
        public var profilesRewritten = 0
        /// Albums with no member left, forgotten.
        public var albumsRemoved = 0
    }

    /// The album a track belongs to: album artist (else artist) and album tag, plus the disc number
    /// when `perDisc`; without an album tag, the folder the file is in.
    public static func albumKey(tags: TrackTags?, relativePath: String, perDisc: Bool) -> String {
        if let album = tags?.album, !album.isEmpty {
            let artist = tags?.albumArtist ?? tags?.artist ?? ""
            let disc = perDisc ? tags?.discNumber.map { " — disc \($0)" } ?? "" : ""
            return "album: \(artist) — \(album)\(disc)"
        }
        let folder = relativePath.lastIndex(of: "/").map { String(relativePath[..<$0]) } ?? "."
        return "folder: \(folder)"
    }

    private struct Member {
        var relativePath: String
        var seq: Int64
    }

    public static func recompute(store: TrackStore, layout: OutputLayout, albumPerDisc: Bool) throws -> Outcome {
        // Every change to a row raises the change sequence, and a deleted row lowers the count: when
        // neither moved since albums were last measured under the same rule, none can have changed
        // (a no-change re-scan of 100,000 tracks skips reading them all again).
        if try store.read({ try state($0, albumPerDisc: albumPerDisc) }) == store.meta(MetaKey.albumsMeasured) { return Outcome() }
        let outcome = try measureChangedAlbums(store: store, layout: layout, albumPerDisc: albumPerDisc)
        try store.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                           arguments: [MetaKey.albumsMeasured, try state(db, albumPerDisc: albumPerDisc)])
        }
        return outcome
    }

    /// What `MetaKey.albumsMeasured` records: the change sequence, the track count and the album rule.
    private static func state(_ db: Database, albumPerDisc: Bool) throws -> String {
        let seq = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'change_seq'") ?? "0"
        return "\(seq) \(try TrackRecord.fetchCount(db)) \(albumPerDisc ? "per-disc" : "per-album")"
    }

    private static func measureChangedAlbums(store: TrackStore, layout: OutputLayout, albumPerDisc: Bool) throws -> Outcome {
        let albums = try store.read { db in
            var albums: [String: [Member]] = [:]
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
                let path: String = row["relative_path"]
                albums[albumKey(tags: tags, relativePath: path, perDisc: albumPerDisc), default: []]
                    .append(Member(relativePath: path, seq: row["seq"]))
            }
            return albums
        }
        let stored = try store.read { db in
            Dictionary(uniqueKeysWithValues: try AlbumRecord.fetchAll(db).map { ($0.key, $0.membersDigest) })
        }
        var outcome = Outcome()
        let removed = stored.keys.filter { albums[$0] == nil }
        outcome.albumsRemoved = removed.count
        let changed = albums.filter { stored[$0.key] != digest($0.value) }
        if !removed.isEmpty { try store.write { db in for key in removed { _ = try AlbumRecord.deleteOne(db, key: key) } } }
        for (key, members) in changed.sorted(by: { $0.key < $1.key }) {
            outcome.albumsMeasured += 1
            outcome.profilesRewritten += try measure(album: key, members: members.map(\.relativePath), store: store, layout: layout)
        }
        return outcome
    }

    private static func digest(_ members: [Member]) -> String {
        var hasher = FNV1a64()
        for member in members.sorted(by: { $0.relativePath < $1.relativePath }) {
            hasher.add("\(member.relativePath)\u{0}\(member.seq)\n")
        }
        return String(format: "%016llx", hasher.value)
    }

    /// Measures one album and rewrites the members whose profile changes; returns how many.
    private static func measure(album key: String, members: [String], store: TrackStore, layout: OutputLayout) throws -> Int {
        struct Loaded { var relativePath: String; var fileKey: String; var profile: TrackProfile; var histogram: LoudnessHistogram? }
        let loaded: [Loaded] = try store.read { db in
            try members.compactMap { path in
                guard let row = try Row.fetchOne(db, sql: "SELECT key, profile_json, gating_histogram FROM track WHERE relative_path = ?", arguments: [path]),
                      let json: String = row["profile_json"],
                      let profile = try? StoredProfile.read(Data(json.utf8)) else { return nil }
                // A histogram this version cannot read leaves the track out of its album's loudness.
                let histogram = (row["gating_histogram"] as Data?).flatMap { try? LoudnessHistogram(encoded: $0) }
                return Loaded(relativePath: path, fileKey: row["key"], profile: profile, histogram: histogram)
            }
        }
        let measured = loaded.filter { !$0.profile.silent && $0.histogram != nil }
        let lufs = LoudnessHistogram.integratedLoudness(of: measured.compactMap(\.histogram)).map { ($0 * 1000).rounded() / 1000 }
        let peak = measured.compactMap { $0.profile.replayGain?.trackPeak }.max()
        let album = TrackProfile.Album(key: key, lufs: lufs, tracks: measured.count, silentTracks: loaded.filter(\.profile.silent).count)

        var rewrites: [(relativePath: String, json: String, stamp: String?)] = []
        for member in loaded {
            var profile = member.profile
            var gain = profile.replayGain ?? TrackProfile.ReplayGain()
            gain.albumGain = lufs.map { ((profile.referenceLUFS - $0) * 100).rounded() / 100 }
            gain.albumPeak = peak
            profile.replayGain = gain
            profile.album = album
            guard profile != member.profile else { continue }
            let data = try profile.jsonData()
            let path = layout.profilePath(key: member.fileKey)
            do {
                let out = try AtomicFile(destination: path, durability: .deferred)
                try data.withUnsafeBytes { try out.write($0) }
                try out.commit()
            } catch {
                throw TrackProcessor.fault(error) ?? error
            }
            rewrites.append((member.relativePath, String(decoding: data, as: UTF8.self), OutputStamp.of(path: path)))
        }
        if !rewrites.isEmpty, FileSystemSync.isAvailable {
            do { try FileSystemSync.flush(containing: layout.root) } catch { throw TrackProcessor.fault(error) ?? error }
        }
        try store.write { db in
            var seq = try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE name = 'change_seq'") ?? 0
            let now = Date().timeIntervalSince1970
            for rewrite in rewrites {
                seq += 1
                try db.execute(sql: "UPDATE track SET profile_json = ?, profile_stamp = ?, seq = ?, changed_at = ? WHERE relative_path = ?",
                               arguments: [rewrite.json, rewrite.stamp, seq, now, rewrite.relativePath])
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (name, value) VALUES ('change_seq', ?)", arguments: ["\(seq)"])
            let current = try Row.fetchAll(db, sql: "SELECT relative_path, seq FROM track WHERE relative_path IN (\(databaseQuestionMarks(count: members.count)))",
                                           arguments: StatementArguments(members))
                .map { Member(relativePath: $0["relative_path"], seq: $0["seq"]) }
            try AlbumRecord(key: key, membersDigest: digest(current), lufs: lufs, peak: peak,
                            tracks: album.tracks, silentTracks: album.silentTracks).save(db)
        }
        return rewrites.count
    }
}

/// One row per album in `album` (schema step "v5: replay gain and albums"): the album's measured
/// values and the digest of the members they were measured from.
struct AlbumRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "album"

    var key: String
    var membersDigest: String
    var lufs: Double?
    var peak: Double?
    var tracks: Int
    var silentTracks: Int

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
