import Foundation
import GRDB
import NaviscanCore

/// One row per track in `naviscan.db`: identity, change detection, status, and the profile fields.
public struct TrackRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "track"

    public enum Status: String, Codable, Sendable { case ok, failed }

    /// Why a track failed: its own content (not retried until the file changes) or access to it
    /// (permission, I/O: retried by the next scan, the cause is usually fixed by then).
    public enum FailureKind: String, Codable, Sendable { case file, access }

    public var relativePath: String
    public var key: String
    public var size: Int64
    public var mtime: Double
    public var status: Status
    public var errorMessage: String?
    public var failureKind: FailureKind?
    public var duration: Double?
    public var codec: String?
    public var sampleRate: Int?
    public var channels: Int?
    public var analyzerVersion: String
    /// Fingerprint of the visualizer parameters of the stored frame file; nil when there is none.
    public var visFingerprint: String?
    /// Fingerprint of the profile parameters of the stored profile; nil when there is none.
    public var profileFingerprint: String?
    /// Size and mtime of the frame file and the profile as written (`OutputStamp`): a file replaced
    /// or truncated since no longer matches, and the track is analysed again.
    public var visStamp: String?
    public var profileStamp: String?
    /// A hash of a few blocks of the audio payload (`ContentHash`): finds a moved file's old row.
    public var contentHash: String?
    /// Set while the file is absent but kept (the prune guard held it back); nil when present.
    public var missingSince: Double?
    public var analyzedAt: String
    /// When the row last changed (seconds since 1970).
    public var changedAt: Double
    /// The store's change sequence at the commit that wrote this row: strictly increasing in commit
    /// order, so a watcher that remembers the last one it saw misses nothing.
    public var seq: Int64
    public var bpm: Double?
    public var bpmConfidence: Double?
    public var lufs: Double?
    public var gainDB: Double?
    public var silenceEnd: Double?
    public var silenceStart: Double?
    public var silent: Bool?
    /// The profile exactly as written to profiles/…/<key>.json.
    public var profileJSON: String?
    /// The track's loudness gating blocks (`LoudnessHistogram.encoded()`), for its album's loudness;
    /// nil for a silent track or one without a profile.
    public var gatingHistogram: Data?
    /// The similarity features (`SonicFeatures.data`); nil for a track with too little sound to
    /// describe. The store keeps them in `track_features` (`TrackFeatures`), not in this table (not a
    /// coding key); the store's reads fill them in. `featuresVersion`: the `SonicFeatures.version`
    /// they were measured with (set with or without a vector), nil when they were never measured.
    public var features: Data? = nil
    public var featuresVersion: Int?
    /// The version of each stage the row's results came from (`StageVersions`, stored form; the
    /// features' is `featuresVersion`); nil for rows of releases before 0.5.9, all of whose stages are stale.
    public var stageVersions: String?
    /// The file's tags as read for this row; the store keeps them in `track_tags`, not in this table
    /// (not a coding key). Nil on rows read back from the store.
    public var tags: TrackTags? = nil

    /// A new row for a file about to be recorded (no outputs yet).
    public init(file: LibraryFile, key: String, analyzerVersion: String, analyzedAt: String, changedAt: Double) {
        relativePath = file.relativePath
        self.key = key
        size = file.size
        mtime = file.mtime
        status = .ok
        self.analyzerVersion = analyzerVersion
        self.analyzedAt = analyzedAt
        self.changedAt = changedAt
        seq = 0
    }

    enum CodingKeys: String, CodingKey {
        case relativePath = "relative_path", key, size, mtime, status, errorMessage = "error_message"
        case failureKind = "failure_kind", duration
        case codec, sampleRate = "sample_rate", channels, analyzerVersion = "analyzer_version"
        case visFingerprint = "vis_fingerprint", profileFingerprint = "profile_fingerprint"
        case visStamp = "vis_stamp", profileStamp = "profile_stamp", contentHash = "content_hash"
        case missingSince = "missing_since", analyzedAt = "analyzed_at", changedAt = "changed_at", seq
        case bpm, bpmConfidence = "bpm_confidence", lufs, gainDB = "gain_db", silenceEnd = "silence_end"
        case silenceStart = "silence_start", silent, profileJSON = "profile_json"
        case gatingHistogram = "gating_histogram", featuresVersion = "features_version"
        case stageVersions = "stage_versions"
    }

    /// The stage versions its results came from, the features' included; nil when unknown.
    public var analysedWith: StageVersions? {
        guard let stageVersions else { return nil }
        var versions = StageVersions(stored: stageVersions)
        versions[.features] = featuresVersion
        return versions
    }

    /// The columns a scan plans from, read by position for each of 100,000 rows (`init(planningRow:)`).
    static let planningColumns = ["relative_path", "key", "size", "mtime", "status", "error_message", "failure_kind",
                                  "analyzer_version", "vis_fingerprint", "profile_fingerprint", "vis_stamp",
                                  "profile_stamp", "content_hash", "missing_since", "features_version", "stage_versions"]

    /// A row selected with `planningColumns`, in their order; the other fields are left empty.
    init(planningRow row: Row) {
        relativePath = row[0]
        key = row[1]
        size = row[2]
        mtime = row[3]
        status = Status(rawValue: row[4]) ?? .failed
        errorMessage = row[5]
        failureKind = (row[6] as String?).flatMap(FailureKind.init(rawValue:))
        analyzerVersion = row[7]
        visFingerprint = row[8]
        profileFingerprint = row[9]
        visStamp = row[10]
        profileStamp = row[11]
        contentHash = row[12]
        missingSince = row[13]
        featuresVersion = row[14]
        stageVersions = row[15]
        analyzedAt = ""
        changedAt = 0
        seq = 0
    }
}
