import Foundation
import GRDB
import NaviscanCore

/// One change a commit applies: a row written (stamped with the next change sequence) or removed.
public enum StoreChange: Sendable {
    case save(TrackRecord)
    case delete(relativePath: String)
    /// A track's profile rewritten with its album's new values (the file is written already).
    case updateProfile(relativePath: String, json: String, stamp: String?)
    /// An album's new values, recorded with the digest of its members' rows as committed.
    case saveAlbum(AlbumUpdate)
}

/// A stored output a reader found damaged or missing.
public enum DamagedOutput: String, Sendable {
    case visualizerFrames = "visualizer frames", profile, waveform
}

extension LibraryStore {
    // MARK: track writes

    /// Commits `changes` in one transaction; returns the last change sequence assigned. The caller
    /// has made the files the rows name durable (`StoreWriter` does both, for every writer).
    @discardableResult
    public func commitTracks(_ changes: [StoreChange]) throws -> Int64 {
        try write { db in
            var seq = try Self.sequence(db)
            // An album's rewritten members are told in one album event, not again one by one.
            var rewritten: Set<String> = []
            for change in changes {
                switch change {
                case .save(var record):
                    seq += 1
                    record.seq = seq
                    try Self.upsert(record, db)
                    try TrackFeatures.save(record, db)
                    if let tags = record.tags {
                        try Self.upsert(TrackTagsRecord(relativePath: record.relativePath, tags: tags), db)
                    }
                    switch record.status {
                    case .ok: try Self.recordEvent(.trackAnalyzed, seq: seq, relativePath: record.relativePath, db)
                    case .failed: try Self.recordEvent(.trackFailed, seq: seq, relativePath: record.relativePath, detail: record.errorMessage, db)
                    }
                case .delete(let relativePath):
                    if try TrackRecord.deleteOne(db, key: relativePath) {
                        seq += 1
                        try Self.recordEvent(.trackRemoved, seq: seq, relativePath: relativePath, db)
                    }
                case .updateProfile(let relativePath, let json, let stamp):
                    seq += 1
                    rewritten.insert(relativePath)
                    try db.execute(sql: "UPDATE track SET profile_json = ?, profile_stamp = ?, seq = ?, changed_at = ? WHERE relative_path = ?",
                                   arguments: [json, stamp, seq, Date().timeIntervalSince1970, relativePath])
                case .saveAlbum(let album):
                    try Self.saveAlbum(album, db)
                    let members = album.members.filter { rewritten.contains($0) }
                    if !members.isEmpty {
                        seq += 1
                        try Self.recordAlbumEvent(seq: seq, members: members.sorted(), db)
                    }
                }
            }
            try Self.storeSequence(seq, db)
            try Self.trimEvents(through: seq, db)
            return seq
        }
    }

    /// Inserts the row, or updates it when one with its primary key exists. GRDB's `save` tries the
    /// update first; a scan mostly adds rows, so the insert goes first here (one encoding, not two).
    private static func upsert<Record: PersistableRecord>(_ record: Record, _ db: Database) throws {
        try record.insert(db, onConflict: .ignore)
        if db.changesCount == 0 { try record.update(db) }
    }

    /// `naviscan tag` rewrote the file's tags: the row takes the file's new size, time and content
    /// hash, so the next scan sees its own analysis of it, not a changed file. The analysis is the
    /// same, so nothing is pushed (no change sequence).
    public func recordTagWrite(relativePath: String, size: Int64, mtime: Double, contentHash: String?) throws {
        try write { db in
            try db.execute(sql: "UPDATE track SET size = ?, mtime = ?, content_hash = ? WHERE relative_path = ?",
                           arguments: [size, mtime, contentHash, relativePath])
        }
    }

    /// Marks `relativePaths` as absent but kept (`missing_since`), or present again when `since` is nil.
    public func markMissing(_ relativePaths: [String], since: Double?) throws {
        guard !relativePaths.isEmpty else { return }
        try write { db in
            for chunk in relativePaths.chunked(500) {
                try db.execute(sql: "UPDATE track SET missing_since = ? WHERE relative_path IN (\(databaseQuestionMarks(count: chunk.count)))",
                               arguments: StatementArguments([since] + chunk.map { $0 as DatabaseValueConvertible? }))
            }
            // A client sees the track leave, or come back with what was stored for it.
            var seq = try Self.sequence(db)
            for path in relativePaths {
                seq += 1
                try Self.recordEvent(since == nil ? .trackRestored : .trackRemoved, seq: seq, relativePath: path, db)
            }
            try Self.storeSequence(seq, db)
            try Self.trimEvents(through: seq, db)
        }
    }

    /// A reader found a track's output damaged or missing: forgets that output's fingerprint (and a
    /// damaged profile's JSON), so nothing serves it any more and the freshness rule analyses the
    /// track again at the next scan. Only that output: a damaged waveform leaves the profile served
    /// and forgets the waveform stage's version instead (the waveform has no fingerprint of its own),
    /// which the same rule reads as "run that stage again".
    public func markNeedsAnalysis(relativePath: String, output: DamagedOutput) async throws {
        try await asyncWrite { db in
            switch output {
            case .visualizerFrames:
                try db.execute(sql: "UPDATE track SET vis_fingerprint = NULL WHERE relative_path = ?", arguments: [relativePath])
            case .profile:
                try db.execute(sql: "UPDATE track SET profile_fingerprint = NULL, profile_json = NULL WHERE relative_path = ?", arguments: [relativePath])
            case .waveform:
                // The waveform stage's version forgotten: the next scan runs that stage alone.
                guard let stored = try String.fetchOne(db, sql: "SELECT stage_versions FROM track WHERE relative_path = ?", arguments: [relativePath]) else { return }
                var versions = StageVersions(stored: stored)
                versions[.waveform] = nil
                try db.execute(sql: "UPDATE track SET stage_versions = ? WHERE relative_path = ?", arguments: [versions.description, relativePath])
            }
        }
    }

    // MARK: track reads

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
        try read { try TrackFeatures.fill(TrackRecord.fetchAll($0), $0) }
    }

    public func track(relativePath: String) throws -> TrackRecord? {
        try read { db in try TrackRecord.fetchOne(db, key: relativePath).map { try TrackFeatures.fill([$0], db)[0] } }
    }

    /// The tags stored with a track (nil when it has no row or was recorded before tags were read).
    public func tags(relativePath: String) throws -> TrackTags? {
        try read { try TrackTagsRecord.fetchOne($0, key: relativePath)?.tags }
    }

    public func count() throws -> Int {
        try read { try TrackRecord.fetchCount($0) }
    }

    public func track(relativePath: String) async throws -> TrackRecord? {
        try await asyncRead { db in try TrackRecord.fetchOne(db, key: relativePath).map { try TrackFeatures.fill([$0], db)[0] } }
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

    public struct Counts: Sendable { public var profiles: Int; public var vis: Int; public var failed: Int }

    public func counts() async throws -> Counts {
        try await asyncRead { db in
            Counts(profiles: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND profile_fingerprint IS NOT NULL") ?? 0,
                   vis: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'ok' AND vis_fingerprint IS NOT NULL") ?? 0,
                   failed: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM track WHERE status = 'failed'") ?? 0)
        }
    }

    /// The last change sequence committed.
    public func latestSequence() throws -> Int64 {
        try read { try Self.sequence($0) }
    }

    public func latestSequence() async throws -> Int64 {
        try await asyncRead { try Self.sequence($0) }
    }
}
