import GRDB

/// One row per track in `naviscan.db`: identity, change detection, status, and the profile fields.
public struct TrackRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "track"

    public enum Status: String, Codable, Sendable { case ok, failed }

    public var relativePath: String
    public var key: String
    public var size: Int64
    public var mtime: Double
    public var status: Status
    public var errorMessage: String?
    public var duration: Double?
    public var codec: String?
    public var sampleRate: Int?
    public var channels: Int?
    public var analyzerVersion: String
    /// Fingerprint of the visualizer parameters of the stored frame file; nil when there is none.
    public var visFingerprint: String?
    /// Fingerprint of the profile parameters of the stored profile; nil when there is none.
    public var profileFingerprint: String?
    public var analyzedAt: String
    /// When the row last changed (seconds since 1970): lets a server push changes made by a scan.
    public var changedAt: Double
    public var bpm: Double?
    public var bpmConfidence: Double?
    public var lufs: Double?
    public var gainDB: Double?
    public var silenceEnd: Double?
    public var silenceStart: Double?
    public var silent: Bool?
    /// The profile exactly as written to profiles/…/<key>.json.
    public var profileJSON: String?

    enum CodingKeys: String, CodingKey {
        case relativePath = "relative_path", key, size, mtime, status, errorMessage = "error_message", duration
        case codec, sampleRate = "sample_rate", channels, analyzerVersion = "analyzer_version"
        case visFingerprint = "vis_fingerprint", profileFingerprint = "profile_fingerprint", analyzedAt = "analyzed_at"
        case changedAt = "changed_at"
        case bpm, bpmConfidence = "bpm_confidence", lufs, gainDB = "gain_db", silenceEnd = "silence_end"
        case silenceStart = "silence_start", silent, profileJSON = "profile_json"
    }
}
