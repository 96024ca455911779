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
/// those, and rewrites their members' profiles (file and stored copy) with the album values. It also
/// writes the profile files a scan left to it (rows without a profile stamp): a new track's profile
/// is written once, with its album's values.
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

    /// `jobs`: albums measured at once (each reads its members and rewrites their profiles).
    public static func recompute(store: TrackStore, layout: OutputLayout, albumPerDisc: Bool, jobs: Int = 1) throws -> Outcome {
        // Every change to a row raises the change sequence, and a deleted row lowers the count: when
        // neither moved since albums were last measured under the same rule, none can have changed
        // (a no-change re-scan of 100,000 tracks skips reading them all again).
        if try store.read({ try state($0, albumPerDisc: albumPerDisc) }) == store.meta(MetaKey.albumsMeasured) { return Outcome() }
        let outcome = try measureChangedAlbums(store: store, layout: layout, albumPerDisc: albumPerDisc, jobs: jobs)
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

    private static func measureChangedAlbums(store: TrackStore, layout: OutputLayout, albumPerDisc: Bool, jobs: Int) throws -> Outcome {
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
        if !removed.isEmpty { try store.write { db in for key in removed { _ = try AlbumRecord.deleteOne(db, key: key) } } }
        let changed = albums.filter { stored[$0.key] != digest($0.value) }.sorted { $0.key < $1.key }
        // Albums are measured `jobs` at a time; the store writer flushes their rewritten profiles
        // and commits them in batches on its own thread, beside the measuring.
        let writer = StoreWriter(store: store, flushPath: layout.root)
        let lock = NSLock()
        var failure: Error?
        WorkPool(jobs: jobs).run(changed, shouldStop: { lock.withLock { failure != nil } || writer.fault != nil }) { _, album in
            do {
                let measured = try measure(album: album.key, members: album.value.map(\.relativePath), store: store, layout: layout)
                let changes = measured.rewrites.map { StoreChange.updateProfile(relativePath: $0.relativePath, json: $0.json, stamp: $0.stamp) }
                guard writer.submit(.init(changes: changes + [.saveAlbum(measured.update)])) else { return }
                lock.withLock {
                    outcome.albumsMeasured += 1
                    outcome.profilesRewritten += measured.rewrites.count
                }
            } catch {
                lock.withLock { failure = failure ?? error }
            }
        }
        try writer.finish()
        if let failure { throw failure }
        return outcome
    }

    private static func digest(_ members: [Member]) -> String {
        var hasher = FNV1a64()
        for member in members.sorted(by: { $0.relativePath < $1.relativePath }) {
            hasher.add("\(member.relativePath)\u{0}\(member.seq)\n")
        }
        return CFormat.string("%016llx", hasher.value)
    }

    /// One album's new values and its members' rewritten profiles, written but not yet recorded.
    private struct Measured {
        var update: AlbumUpdate
        var rewrites: [(relativePath: String, json: String, stamp: String?)]
    }

    /// Measures one album and writes the profiles of the members whose profile changes or whose file
    /// is still to write.
    private static func measure(album key: String, members: [String], store: TrackStore, layout: OutputLayout) throws -> Measured {
        struct Loaded { var relativePath: String; var fileKey: String; var profile: TrackProfile; var histogram: LoudnessHistogram?; var fileWritten: Bool }
        let loaded: [Loaded] = try store.read { db in
            try members.chunked(500).flatMap { chunk in
                try Row.fetchAll(db, sql: """
                    SELECT relative_path, key, profile_json, profile_stamp, gating_histogram FROM track
                    WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))
                    """, arguments: StatementArguments(Array(chunk)))
            }.compactMap { row in
                guard let json: String = row["profile_json"], let profile = try? StoredProfile.read(Data(json.utf8)) else { return nil }
                // A histogram this version cannot read leaves the track out of its album's loudness.
                let histogram = (row["gating_histogram"] as Data?).flatMap { try? LoudnessHistogram(encoded: $0) }
                return Loaded(relativePath: row["relative_path"], fileKey: row["key"], profile: profile, histogram: histogram,
                              fileWritten: row["profile_stamp"] as String? != nil)
            }
        }
        let measured = loaded.filter { !$0.profile.silent && $0.histogram != nil }
        let lufs = LoudnessHistogram.integratedLoudness(of: measured.compactMap(\.histogram)).map { ($0 * 1000).rounded() / 1000 }
        let peak = measured.compactMap { $0.profile.replayGain?.trackPeak }.max()
        let album = TrackProfile.Album(key: key, lufs: lufs, tracks: measured.count, silentTracks: loaded.filter(\.profile.silent).count)

        var madeDirectories: Set<String> = []
        var result = Measured(update: AlbumUpdate(members: members, record: AlbumRecord(
            key: key, membersDigest: "", lufs: lufs, peak: peak, tracks: album.tracks, silentTracks: album.silentTracks)), rewrites: [])
        for member in loaded {
            var profile = member.profile
            var gain = profile.replayGain ?? TrackProfile.ReplayGain()
            gain.albumGain = lufs.map { ((profile.referenceLUFS - $0) * 100).rounded() / 100 }
            gain.albumPeak = peak
            profile.replayGain = gain
            profile.album = album
            guard profile != member.profile || !member.fileWritten else { continue }
            let data = try profile.jsonData()
            let path = layout.profilePath(key: member.fileKey)
            do {
                let directory = OutputLayout.directory(of: path)
                if madeDirectories.insert(directory).inserted { try OutputLayout.createDirectory(directory) }
                try AtomicFile.write(data, to: path, durability: .deferred)
            } catch {
                throw TrackProcessor.fault(error) ?? error
            }
            result.rewrites.append((member.relativePath, String(decoding: data, as: UTF8.self), OutputStamp.of(path: path)))
        }
        return result
    }

    fileprivate static func membersDigest(_ db: Database, members: [String]) throws -> String {
        let current = try members.chunked(500).flatMap { chunk in
            try Row.fetchAll(db, sql: "SELECT relative_path, seq FROM track WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                             arguments: StatementArguments(Array(chunk)))
        }
        return digest(current.map { Member(relativePath: $0["relative_path"], seq: $0["seq"]) })
    }
}

/// An album measured from `members`, to record once their rewritten rows are committed: its digest
/// is taken from the members' rows in the same transaction.
public struct AlbumUpdate: Sendable {
    let members: [String]
    let record: AlbumRecord

    func save(_ db: Database) throws {
        var record = record
        record.membersDigest = try AlbumGain.membersDigest(db, members: members)
        try record.save(db)
    }
}

/// One row per album in `album` (schema step "v5: replay gain and albums"): the album's measured
/// values and the digest of the members they were measured from.
struct AlbumRecord: Codable, FetchableRecord, PersistableRecord, Sendable {
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
