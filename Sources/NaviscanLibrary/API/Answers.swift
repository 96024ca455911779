import Foundation
import NaviscanCore
import NaviscanStore

// The JSON naviscan answers over HTTP and prints with --json: one Codable type per shape, shared by
// the server's controllers and the commands. docs/api.schema.json describes each one under the
// same name; the tests validate real answers against it. A field the contract sends as null when
// unknown is encoded explicitly (`encode`, not `encodeIfPresent`); one it leaves out is optional.

/// The encoder of every answer: sorted keys, slashes as they are.
public enum AnswerJSON {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    public static func data(_ answer: some Encodable) throws -> Data { try encoder.encode(answer) }

    /// A JSON string literal, quoted and escaped (for answers assembled piece by piece).
    public static func string(_ text: String) -> Data { (try? encoder.encode(text)) ?? Data("\"\"".utf8) }
}

/// `{"error": "...", "candidates": [...]}`: every refusal (`candidates`: the tracks an ambiguous path could mean).
public struct ErrorAnswer: Codable, Sendable, Equatable {
    public var error: String
    public var candidates: [String]?

    public init(error: String, candidates: [String]? = nil) {
        self.error = error
        self.candidates = candidates
    }
}

/// `GET /health` while the store can be read.
public struct HealthAnswer: Codable, Sendable {
    public var status = "ok"
    public var analyzer: String
    public var library: String
    public var profileCount: Int
    public var visCount: Int
    public var failed: Int
    public var visCacheSize: Int64
    public var connectedClients: Int
    /// Tracks queued for a precompute or still to do in the running scan.
    public var pending: Int
    public var watching: Bool
    /// "off", "idle", "scanning", … (`LibraryMaintainer`'s state).
    public var scanState: String
    /// ISO 8601; null before the first scan of this run.
    public var lastScan: String?
    /// Left out when the last scan did not fail.
    public var lastScanError: String?

    public init(analyzer: String, library: String, profileCount: Int, visCount: Int, failed: Int, visCacheSize: Int64,
                connectedClients: Int, pending: Int, watching: Bool, scanState: String, lastScan: String?, lastScanError: String?) {
        self.analyzer = analyzer
        self.library = library
        self.profileCount = profileCount
        self.visCount = visCount
        self.failed = failed
        self.visCacheSize = visCacheSize
        self.connectedClients = connectedClients
        self.pending = pending
        self.watching = watching
        self.scanState = scanState
        self.lastScan = lastScan
        self.lastScanError = lastScanError
    }

    enum CodingKeys: String, CodingKey {
        case status, analyzer, library, profileCount = "profile_count", visCount = "vis_count", failed
        case visCacheSize = "vis_cache_size", connectedClients = "connected_clients", pending, watching
        case scanState = "scan_state", lastScan = "last_scan", lastScanError = "last_scan_error"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(analyzer, forKey: .analyzer)
        try c.encode(library, forKey: .library)
        try c.encode(profileCount, forKey: .profileCount)
        try c.encode(visCount, forKey: .visCount)
        try c.encode(failed, forKey: .failed)
        try c.encode(visCacheSize, forKey: .visCacheSize)
        try c.encode(connectedClients, forKey: .connectedClients)
        try c.encode(pending, forKey: .pending)
        try c.encode(watching, forKey: .watching)
        try c.encode(scanState, forKey: .scanState)
        try c.encode(lastScan, forKey: .lastScan)
        try c.encodeIfPresent(lastScanError, forKey: .lastScanError)
    }
}

/// `GET /health` (503) while the store file is gone or unreadable.
public struct StoreUnavailableAnswer: Codable, Sendable {
    public var status = "store_unavailable"
    public var error: String
    public var analyzer: String

    public init(error: String, analyzer: String) {
        self.error = error
        self.analyzer = analyzer
    }
}

/// `GET /smart-dj/beats`: a stored profile's grid with its beats and bar lines listed in a window.
public struct BeatsAnswer: Codable, Sendable {
    public var relativePath: String
    public var bpm: Double?
    public var firstBeat: Double?
    public var interval: Double?
    public var meter: Int?
    public var confidence: Double
    public var beats: [Double]
    public var downbeats: [Double]

    /// The beats and downbeats from `from` to `to` seconds (none when `to` is before `from`).
    public init(relativePath: String, bpm: Double?, grid: BeatGrid, from: Double, to: Double) {
        let inWindow = { (t: Double) in t >= from && t <= to }
        self.relativePath = relativePath
        self.bpm = bpm
        firstBeat = grid.firstBeat
        interval = grid.interval
        meter = grid.meter
        confidence = grid.confidence
        beats = grid.beats.filter(inWindow)
        downbeats = grid.downbeats.filter(inWindow)
    }

    enum CodingKeys: String, CodingKey {
        case relativePath = "relative_path", bpm, firstBeat = "first_beat", interval, meter, confidence, beats, downbeats
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(relativePath, forKey: .relativePath)
        try c.encode(bpm, forKey: .bpm)
        try c.encode(firstBeat, forKey: .firstBeat)
        try c.encode(interval, forKey: .interval)
        try c.encode(meter, forKey: .meter)
        try c.encode(confidence, forKey: .confidence)
        try c.encode(beats, forKey: .beats)
        try c.encode(downbeats, forKey: .downbeats)
    }
}

/// `GET /waveform?bins=N` as JSON: peak and RMS per bin, 4 decimals.
public struct WaveformAnswer: Codable, Sendable {
    public var relativePath: String
    public var duration: Double
    public var bins: Int
    public var peak: [Double]
    public var rms: [Double]

    public init(relativePath: String, duration: Double, peak: [Double], rms: [Double]) {
        func rounded(_ values: [Double]) -> [Double] { values.map { ($0 * 10_000).rounded() / 10_000 } }
        self.relativePath = relativePath
        self.duration = duration
        bins = peak.count
        self.peak = rounded(peak)
        self.rms = rounded(rms)
    }

    enum CodingKeys: String, CodingKey { case relativePath = "relative_path", duration, bins, peak, rms }
}

/// `POST /visualizer/precompute` and `GET /visualizer/precompute`: where a track's analysis stands.
public struct PrecomputeAnswer: Codable, Sendable {
    /// queued, running, unchanged, done, failed or unknown.
    public var status: String
    public var relativePath: String
    /// Why it failed, when it did.
    public var error: String?

    public init(status: String, relativePath: String, error: String? = nil) {
        self.status = status
        self.relativePath = relativePath
        self.error = error
    }

    enum CodingKeys: String, CodingKey { case status, relativePath = "relative_path", error }
}

/// `POST /visualizer/precompute`'s body.
public struct PrecomputeRequest: Codable, Sendable {
    public var relativePath: String?
    enum CodingKeys: String, CodingKey { case relativePath = "relative_path" }
}

/// `POST /smart-dj/bulk-profiles`'s body: a JSON array of paths, or `{"paths": [...]}`.
public struct BulkProfilesRequest: Decodable, Sendable {
    public var paths: [String]

    enum CodingKeys: String, CodingKey { case paths }

    public init(from decoder: Decoder) throws {
        if let list = try? decoder.singleValueContainer().decode([String].self) {
            paths = list
        } else {
            paths = try decoder.container(keyedBy: CodingKeys.self).decode([String].self, forKey: .paths)
        }
    }
}

/// `GET /similar` and `GET /path`, in the shape of OpenSubsonic's `sonicMatch`.
public struct SonicMatchAnswer: Codable, Sendable {
    public var sonicMatch: [SonicMatch]

    public init(_ matches: [SimilarTracks.Match]) { sonicMatch = matches.map(SonicMatch.init) }
}

/// One track of a `sonicMatch` list: `{"entry": {the track's path and tags}, "similarity": s}`.
public struct SonicMatch: Codable, Sendable {
    public struct Entry: Codable, Sendable {
        public var path: String
        public var relativePath: String
        public var isDir = false
        /// Whole seconds, as Subsonic's `child` has it.
        public var duration: Int
        public var title: String?
        public var artist: String?
        public var album: String?
        public var track: Int?
        public var discNumber: Int?

        enum CodingKeys: String, CodingKey {
            case path, relativePath = "relative_path", isDir, duration, title, artist, album, track, discNumber
        }
    }

    public var entry: Entry
    public var similarity: Double
    /// The same recording as the query in another file.
    public var duplicate: Bool
    /// The track's key in Camelot ("8A"), null without one.
    public var key: String?

    public init(_ match: SimilarTracks.Match) {
        entry = Entry(path: match.relativePath, relativePath: match.relativePath, duration: Int(match.duration.rounded()),
                      title: match.tags.title, artist: match.tags.artist, album: match.tags.album,
                      track: match.tags.trackNumber, discNumber: match.tags.discNumber)
        similarity = match.similarity
        duplicate = match.duplicate
        key = match.key?.camelot
    }

    enum CodingKeys: String, CodingKey { case entry, similarity, duplicate, key }

    /// `key` is written as null when there is none: clients index fields without existence checks.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entry, forKey: .entry)
        try c.encode(similarity, forKey: .similarity)
        try c.encode(duplicate, forKey: .duplicate)
        try c.encode(key, forKey: .key)
    }
}

/// One message of `/ws/push` (docs/serve.md lists the events).
public struct PushMessage: Codable, Sendable, Equatable {
    /// hello, resync, track_analyzed, track_failed, track_removed, track_restored, album_updated.
    public var event: String
    /// The store's change sequence; absent on a precompute's failure that stored nothing.
    public var seq: Int64?
    public var relativePath: String?
    /// album_updated's members.
    public var relativePaths: [String]?
    /// track_failed's reason.
    public var error: String?

    public init(event: String, seq: Int64?, relativePath: String? = nil, relativePaths: [String]? = nil, error: String? = nil) {
        self.event = event
        self.seq = seq
        self.relativePath = relativePath
        self.relativePaths = relativePaths
        self.error = error
    }

    public static func hello(_ seq: Int64) -> PushMessage { PushMessage(event: "hello", seq: seq) }
    public static func resync(_ seq: Int64) -> PushMessage { PushMessage(event: "resync", seq: seq) }

    /// A stored change.
    public init(_ event: LibraryEvent) {
        self.init(event: event.kind.rawValue, seq: event.seq,
                  relativePath: event.kind == .albumUpdated ? nil : event.relativePath,
                  relativePaths: event.kind == .albumUpdated ? event.relativePaths : nil,
                  error: event.kind == .trackFailed ? (event.detail ?? "failed") : nil)
    }

    enum CodingKeys: String, CodingKey { case event, seq, relativePath = "relative_path", relativePaths = "relative_paths", error }

    /// The message as the socket sends it.
    public var text: String { String(decoding: (try? AnswerJSON.data(self)) ?? Data(), as: UTF8.self) }
}
