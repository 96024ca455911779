import Foundation
import NaviscanCore
import NaviscanStore

/// `naviscan show --json`: one track's stored facts, its profile and where its files are
/// (docs/api.schema.json, `track`). Not the store's row: no fingerprints, stamps or feature bytes,
/// which are the store's business. Unknown values are null.
public struct TrackDocument: Encodable, Sendable {
    public var relativePath: String
    public var status: TrackRecord.Status
    public var errorMessage: String?
    public var failureKind: TrackRecord.FailureKind?
    public var size: Int64
    public var mtime: Double
    public var duration: Double?
    public var codec: String?
    public var sampleRate: Int?
    public var channels: Int?
    public var analyzerVersion: String
    public var analyzedAt: String
    /// When the file was found gone (seconds since 1970); null while it is there.
    public var missingSince: Double?
    public var bpm: Double?
    public var bpmConfidence: Double?
    public var lufs: Double?
    public var gainDB: Double?
    public var silenceEnd: Double?
    public var silenceStart: Double?
    public var silent: Bool?
    public var featuresVersion: Int?
    /// The DJ profile as stored (docs/profile.schema.json).
    public var profile: TrackProfile?
    public var profileFile: String?
    public var visFile: String?

    /// The document of a stored row; `profile` is its stored profile, read and checked.
    public init(_ track: TrackRecord, layout: OutputLayout) throws {
        relativePath = track.relativePath
        status = track.status
        errorMessage = track.errorMessage
        failureKind = track.failureKind
        size = track.size
        mtime = track.mtime
        duration = track.duration
        codec = track.codec
        sampleRate = track.sampleRate
        channels = track.channels
        analyzerVersion = track.analyzerVersion
        analyzedAt = track.analyzedAt
        missingSince = track.missingSince
        bpm = track.bpm
        bpmConfidence = track.bpmConfidence
        lufs = track.lufs
        gainDB = track.gainDB
        silenceEnd = track.silenceEnd
        silenceStart = track.silenceStart
        silent = track.silent
        featuresVersion = track.featuresVersion
        profile = try track.profileJSON.map { try StoredProfile.read(Data($0.utf8)) }
        profileFile = track.profileFingerprint != nil ? layout.profilePath(key: track.key) : nil
        visFile = track.visFingerprint != nil ? layout.visPath(key: track.key) : nil
    }

    enum CodingKeys: String, CodingKey {
        case relativePath = "relative_path", status, errorMessage = "error_message", failureKind = "failure_kind", size, mtime
        case duration, codec, sampleRate = "sample_rate", channels, analyzerVersion = "analyzer_version", analyzedAt = "analyzed_at"
        case missingSince = "missing_since", bpm, bpmConfidence = "bpm_confidence", lufs, gainDB = "gain_db"
        case silenceEnd = "silence_end", silenceStart = "silence_start", silent, featuresVersion = "features_version"
        case profile, profileFile = "profile_file", visFile = "vis_file"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(relativePath, forKey: .relativePath)
        try c.encode(status, forKey: .status)
        try c.encode(errorMessage, forKey: .errorMessage)
        try c.encode(failureKind, forKey: .failureKind)
        try c.encode(size, forKey: .size)
        try c.encode(mtime, forKey: .mtime)
        try c.encode(duration, forKey: .duration)
        try c.encode(codec, forKey: .codec)
        try c.encode(sampleRate, forKey: .sampleRate)
        try c.encode(channels, forKey: .channels)
        try c.encode(analyzerVersion, forKey: .analyzerVersion)
        try c.encode(analyzedAt, forKey: .analyzedAt)
        try c.encode(missingSince, forKey: .missingSince)
        try c.encode(bpm, forKey: .bpm)
        try c.encode(bpmConfidence, forKey: .bpmConfidence)
        try c.encode(lufs, forKey: .lufs)
        try c.encode(gainDB, forKey: .gainDB)
        try c.encode(silenceEnd, forKey: .silenceEnd)
        try c.encode(silenceStart, forKey: .silenceStart)
        try c.encode(silent, forKey: .silent)
        try c.encode(featuresVersion, forKey: .featuresVersion)
        try c.encode(profile, forKey: .profile)
        try c.encode(profileFile, forKey: .profileFile)
        try c.encode(visFile, forKey: .visFile)
    }
}
