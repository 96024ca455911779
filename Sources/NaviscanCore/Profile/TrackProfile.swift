import Foundation

/// The DJ profile of one track, as the Navidrome companion API serves it. Field names are the wire
/// format (snake_case, every field always present, `null` where a value is undefined); see
/// docs/profile-format.md and docs/profile.schema.json.
public struct TrackProfile: Codable, Sendable, Equatable {
    public struct Alternate: Codable, Sendable, Equatable {
        public var bpm: Double
        public var score: Double
    }

    public struct Analyzer: Codable, Sendable, Equatable {
        public var name: String
        public var version: String
    }

    /// ReplayGain 2.0 in OpenSubsonic's `replayGain` shape (its key names): gains in dB to the
    /// reference level, peaks linear (1.0 is full scale). Album values are null until the album is
    /// measured after the scan (and for a track whose album has no measurable member).
    public struct ReplayGain: Codable, Sendable, Equatable {
        public var trackGain: Double?
        /// The sample peak, or the true peak when it was measured (`--true-peak`).
        public var trackPeak: Double?
        public var albumGain: Double?
        public var albumPeak: Double?
        /// Opus output gain: 0, because the decoder applies the header's gain before measuring.
        public var baseGain: Double = 0
        /// What to apply in album mode when `albumGain` is null: the track gain.
        public var fallbackGain: Double?

        public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil,
                    baseGain: Double = 0, fallbackGain: Double? = nil) {
            self.trackGain = trackGain
            self.trackPeak = trackPeak
            self.albumGain = albumGain
            self.albumPeak = albumPeak
            self.baseGain = baseGain
            self.fallbackGain = fallbackGain
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeOrNull(trackGain, forKey: .trackGain)
            try c.encodeOrNull(trackPeak, forKey: .trackPeak)
            try c.encodeOrNull(albumGain, forKey: .albumGain)
            try c.encodeOrNull(albumPeak, forKey: .albumPeak)
            try c.encodeOrNull(baseGain, forKey: .baseGain)
            try c.encodeOrNull(fallbackGain, forKey: .fallbackGain)
        }
    }

    /// The album a track was measured with: its key (album artist + album [+ disc], else the
    /// folder), the loudness of all its members' blocks gated together, and how many members were
    /// measured and how many left out for being silent.
    public struct Album: Codable, Sendable, Equatable {
        public var key: String
        public var lufs: Double?
        public var tracks: Int
        public var silentTracks: Int

        public init(key: String, lufs: Double?, tracks: Int, silentTracks: Int) {
            self.key = key
            self.lufs = lufs
            self.tracks = tracks
            self.silentTracks = silentTracks
        }

        enum CodingKeys: String, CodingKey { case key, lufs, tracks, silentTracks = "silent_tracks" }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeOrNull(key, forKey: .key)
            try c.encodeOrNull(lufs, forKey: .lufs)
            try c.encodeOrNull(tracks, forKey: .tracks)
            try c.encodeOrNull(silentTracks, forKey: .silentTracks)
        }
    }

    public var relativePath: String
    public var duration: Double
    public var bpm: Double?
    public var bpmConfidence: Double
    public var bpmAlternates: [Alternate]
    public var firstBeat: Double?
    /// Every beat and bar line, compactly (`BeatGrid`); empty for beatless material. Optional only so
    /// that profiles written before the grid existed still decode; always written.
    public var beatGrid: BeatGrid?
    /// Where the LEADING silence ends: the seek-to point (seconds).
    public var silenceEnd: Double
    /// Where the TRAILING silence begins: the crossfade trigger (seconds).
    public var silenceStart: Double
    public var lufs: Double?
    public var loudnessRange: Double?
    public var peakDB: Double?
    public var truePeakDB: Double?
    public var gainDB: Double?
    /// Why the loudness needs a second look, or null: the source was resampled to be measured, or
    /// the track is louder than full scale (`lufs` above 0, which only floating-point audio can be).
    public var loudnessNote: String?
    public var referenceLUFS: Double
    public var silent: Bool
    public var sampleRate: Int
    public var channels: Int
    public var codec: String
    public var analyzer: Analyzer
    public var analyzedAt: String
    /// The file's own tags (title, artist, ReplayGain, …); never used by the analysis. Optional only
    /// so that profiles written before tags were read still decode; always written, as an object.
    public var tags: TrackTags?
    /// Optional only so that older profiles still decode; always written.
    public var replayGain: ReplayGain?
    /// Null until the album is measured after the scan.
    public var album: Album?
    /// MixRamp start and end ramps (`"dB seconds;…"`), null for a silent track.
    public var startRamp: String?
    public var endRamp: String?
    /// How the music ends: fade_out, cold_end or silence_tail; null for a silent track.
    public var outro: CrossfadeRamps.Outro?
    /// Seconds where the music falls for good 20 LU below the track's loudness.
    public var audibleEnd: Double?
    /// The key; null for a track without one (drums, noise, atonal sound) and in profiles written
    /// before keys were detected.
    public var key: KeyProfile?

    /// `{"tonic": "A", "mode": "minor", "camelot": "8A", "open_key": "1m", "confidence": 0.74}`.
    public struct KeyProfile: Codable, Sendable, Equatable {
        public var tonic: String
        public var mode: MusicalKey.Mode
        public var camelot: String
        public var openKey: String
        /// The key's probability under the key model, 0…1.
        public var confidence: Double

        public init(_ key: MusicalKey, confidence: Double) {
            tonic = key.tonicName
            mode = key.mode
            camelot = key.camelot
            openKey = key.openKey
            self.confidence = (confidence * 1000).rounded() / 1000
        }

        /// The key, when its fields agree with each other.
        public var musicalKey: MusicalKey? {
            guard let key = MusicalKey(tonic + (mode == .minor ? "m" : "")), key.camelot == camelot, key.openKey == openKey else { return nil }
            return key
        }

        enum CodingKeys: String, CodingKey { case tonic, mode, camelot, openKey = "open_key", confidence }
    }

    enum CodingKeys: String, CodingKey {
        case relativePath = "relative_path", duration, bpm, bpmConfidence = "bpm_confidence"
        case bpmAlternates = "bpm_alternates", firstBeat = "first_beat", beatGrid = "beat_grid", silenceEnd = "silence_end"
        case silenceStart = "silence_start", lufs, loudnessRange = "loudness_range", peakDB = "peak_db"
        case truePeakDB = "true_peak_db", gainDB = "gain_db", loudnessNote = "loudness_note", referenceLUFS = "reference_lufs", silent
        case sampleRate = "sample_rate", channels, codec, analyzer, analyzedAt = "analyzed_at", tags
        case replayGain = "replay_gain", album
        case startRamp = "start_ramp", endRamp = "end_ramp", outro, audibleEnd = "audible_end", key
    }

    /// Builds the profile from a finished analysis that ran the profile stages.
    public init(relativePath: String, analysis: TrackAnalysis, config: ProfileConfig, tags: TrackTags? = nil,
                analyzedAt: Date = Date()) {
        func round(_ v: Double, _ places: Double) -> Double { (v * places).rounded() / places }
        // Every number written is finite: a non-finite measurement is no measurement.
        func finite(_ v: Double?) -> Double? { v.flatMap { $0.isFinite ? $0 : nil } }
        self.relativePath = relativePath
        duration = round(analysis.duration, 10_000)
        let tempo = analysis.tempo
        bpm = tempo?.bpm
        bpmConfidence = round(tempo?.confidence ?? 0, 1000)
        bpmAlternates = (tempo?.alternates ?? []).map { Alternate(bpm: $0.bpm, score: round($0.score, 1000)) }
        firstBeat = tempo?.firstBeat
        beatGrid = tempo?.grid ?? .empty
        silenceEnd = round(analysis.silence?.silenceEnd ?? 0, 10_000)
        silenceStart = round(analysis.silence?.silenceStart ?? 0, 10_000)
        let loudness = analysis.loudness
        lufs = finite(loudness?.integratedLUFS).map { round($0, 1000) }
        loudnessRange = finite(loudness?.loudnessRange).map { round($0, 100) }
        peakDB = finite(loudness?.samplePeakDB).map { round($0, 100) }
        truePeakDB = finite(loudness?.truePeakDB).map { round($0, 100) }
        referenceLUFS = config.referenceLUFS
        gainDB = lufs.map { round(config.referenceLUFS - $0, 100) }
        if let lufs, lufs > 0 {
            loudnessNote = "louder than digital full scale (floating-point samples above 0 dBFS): lufs \(lufs) is real, and so is the large negative gain"
        } else if let rate = loudness?.measuredRate, rate != analysis.stream.sampleRate {
            loudnessNote = "measured on the \(analysis.stream.sampleRate) Hz source resampled to \(rate) Hz: the BS.1770 filter is not defined below \(LoudnessMeter.minimumSampleRate) Hz"
        }
        silent = lufs == nil
        let peaks = [loudness?.samplePeakDB, loudness?.truePeakDB].compactMap(finite)
        let trackPeak = peaks.max().map { round(pow(10, $0 / 20), 1_000_000) }
        replayGain = ReplayGain(trackGain: gainDB, trackPeak: trackPeak, fallbackGain: gainDB)
        if let envelope = loudness?.envelope {
            let ramps = CrossfadeRamps(envelope: envelope, integratedLUFS: lufs, duration: analysis.duration,
                                       silenceStart: analysis.silence?.silenceStart ?? analysis.duration)
            startRamp = ramps.startRamp
            endRamp = ramps.endRamp
            outro = ramps.outro
            audibleEnd = ramps.audibleEnd
        }
        sampleRate = analysis.stream.sampleRate
        channels = analysis.stream.channels
        codec = analysis.stream.codec
        analyzer = Analyzer(name: NaviscanVersion.name, version: NaviscanVersion.version)
        self.analyzedAt = Self.timestamp(analyzedAt)
        self.tags = tags
        key = analysis.key.flatMap { result in result.key.map { KeyProfile($0, confidence: result.confidence) } }
    }

    /// This profile with the results of `stages` taken from `fresh`, a partial analysis of the same
    /// file that ran them: silence and loudness go together (the peak and the ramps come from both),
    /// as do tempo and the beat grid. The analyser and the time come from `fresh`. Album values stay
    /// until the album pass measures the album again (a rewritten track changes its album's digest).
    public func updating(_ stages: Set<AnalysisStage>, from fresh: TrackProfile) -> TrackProfile {
        var updated = self
        if !stages.isDisjoint(with: [.silence, .loudness]) {
            updated.silenceEnd = fresh.silenceEnd
            updated.silenceStart = fresh.silenceStart
            updated.lufs = fresh.lufs
            updated.loudnessRange = fresh.loudnessRange
            updated.peakDB = fresh.peakDB
            updated.truePeakDB = fresh.truePeakDB
            updated.gainDB = fresh.gainDB
            updated.loudnessNote = fresh.loudnessNote
            updated.silent = fresh.silent
            updated.replayGain = ReplayGain(trackGain: fresh.replayGain?.trackGain, trackPeak: fresh.replayGain?.trackPeak,
                                            albumGain: replayGain?.albumGain, albumPeak: replayGain?.albumPeak,
                                            fallbackGain: fresh.replayGain?.fallbackGain)
            updated.startRamp = fresh.startRamp
            updated.endRamp = fresh.endRamp
            updated.outro = fresh.outro
            updated.audibleEnd = fresh.audibleEnd
        }
        if !stages.isDisjoint(with: [.tempo, .beatGrid]) {
            updated.bpm = fresh.bpm
            updated.bpmConfidence = fresh.bpmConfidence
            updated.bpmAlternates = fresh.bpmAlternates
            updated.firstBeat = fresh.firstBeat
            updated.beatGrid = fresh.beatGrid
        }
        if stages.contains(.key) { updated.key = fresh.key }
        updated.analyzer = fresh.analyzer
        updated.analyzedAt = fresh.analyzedAt
        return updated
    }

    /// RFC 3339 in UTC to the second (`2026-11-23T04:05:06Z`), formatted directly: creating an
    /// ISO8601DateFormatter per track cost more than writing the track's profile.
    public static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return CFormat.string("%04d-%02d-%02dT%02d:%02d:%02dZ", Int32(parts.tm_year) + 1900, Int32(parts.tm_mon) + 1,
                              parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// Every key is written, with explicit nulls: clients index fields without existence checks.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(relativePath, forKey: .relativePath)
        try c.encodeOrNull(duration, forKey: .duration)
        try c.encodeOrNull(bpm, forKey: .bpm)
        try c.encodeOrNull(bpmConfidence, forKey: .bpmConfidence)
        try c.encodeOrNull(bpmAlternates, forKey: .bpmAlternates)
        try c.encodeOrNull(firstBeat, forKey: .firstBeat)
        try c.encodeOrNull(beatGrid ?? .empty, forKey: .beatGrid)
        try c.encodeOrNull(silenceEnd, forKey: .silenceEnd)
        try c.encodeOrNull(silenceStart, forKey: .silenceStart)
        try c.encodeOrNull(lufs, forKey: .lufs)
        try c.encodeOrNull(loudnessRange, forKey: .loudnessRange)
        try c.encodeOrNull(peakDB, forKey: .peakDB)
        try c.encodeOrNull(truePeakDB, forKey: .truePeakDB)
        try c.encodeOrNull(gainDB, forKey: .gainDB)
        try c.encodeOrNull(loudnessNote, forKey: .loudnessNote)
        try c.encodeOrNull(referenceLUFS, forKey: .referenceLUFS)
        try c.encodeOrNull(silent, forKey: .silent)
        try c.encodeOrNull(sampleRate, forKey: .sampleRate)
        try c.encodeOrNull(channels, forKey: .channels)
        try c.encodeOrNull(codec, forKey: .codec)
        try c.encodeOrNull(analyzer, forKey: .analyzer)
        try c.encodeOrNull(analyzedAt, forKey: .analyzedAt)
        try c.encodeOrNull(tags ?? TrackTags(), forKey: .tags)
        try c.encodeOrNull(replayGain ?? ReplayGain(), forKey: .replayGain)
        try c.encodeOrNull(album, forKey: .album)
        try c.encodeOrNull(startRamp, forKey: .startRamp)
        try c.encodeOrNull(endRamp, forKey: .endRamp)
        try c.encodeOrNull(outro, forKey: .outro)
        try c.encodeOrNull(audibleEnd, forKey: .audibleEnd)
        try c.encodeOrNull(key, forKey: .key)
    }

    /// Checks a profile read back from storage against what an analysis can produce.
    public func checkRanges() throws {
        func fail(_ why: String) -> StoredProfileError { .implausible(why) }
        let gains = replayGain.map { [$0.trackGain, $0.trackPeak, $0.albumGain, $0.albumPeak, $0.baseGain, $0.fallbackGain] } ?? []
        let numbers = [duration, bpmConfidence, silenceEnd, silenceStart, referenceLUFS]
            + ([bpm, firstBeat, lufs, loudnessRange, peakDB, truePeakDB, gainDB, album?.lufs, audibleEnd] + gains).compactMap { $0 }
        guard numbers.allSatisfy(\.isFinite) else { throw fail("a value is not finite") }
        guard !relativePath.isEmpty, duration >= 0, sampleRate > 0, channels > 0 else { throw fail("no track (path, duration, rate or channels)") }
        guard (0...1).contains(bpmConfidence), bpm.map({ (20...400).contains($0) }) ?? true else { throw fail("bpm \(bpm ?? 0) or its confidence is out of range") }
        guard silenceEnd >= 0, silenceStart >= 0, silenceEnd <= duration + 1, silenceStart <= duration + 1 else { throw fail("silence edges outside the track") }
        if let grid = beatGrid {
            // Every beat inside the track, at most 20 a second: a damaged grid cannot make a reader
            // write out billions of beats.
            let maxBeats = Int(saturating: duration * 20) + 16
            guard grid.confidence.isFinite, (0...1).contains(grid.confidence),
                  grid.segments.count <= maxBeats,
                  grid.segments.allSatisfy({ s in
                      s.start.isFinite && s.interval.isFinite && s.start >= 0 && s.count >= 1 && s.count <= maxBeats
                          && s.interval >= 0 && s.start + Double(s.count - 1) * s.interval <= duration + 1
                  }),
                  grid.segments.reduce(0, { $0 + $1.count }) <= maxBeats,
                  grid.meter.map({ (2...16).contains($0) }) ?? true,
                  grid.firstDownbeat.map({ $0 >= 0 && $0 < max(1, grid.meter ?? 1) }) ?? true
            else { throw fail("the beat grid is out of range") }
        }
        if let key {
            guard key.musicalKey != nil, key.confidence.isFinite, (0...1).contains(key.confidence) else { throw fail("the key is not one naviscan writes") }
        }
        if let lufs {
            guard lufs >= -80, lufs <= 0 || loudnessNote != nil else { throw fail("lufs \(lufs) without a reason") }
        }
        if let gainDB {
            guard gainDB >= -60 || loudnessNote != nil else { throw fail("gain \(gainDB) dB without a reason") }
        }
    }

    /// Pretty, key-sorted JSON.
    public func jsonData() throws -> Data {
        try Self.encoder.encode(self)
    }

    /// One encoder for every profile (encoding is thread-safe; making one per track cost a fifth of the encoding).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// Reads a profile back from storage (a profiles/…/<key>.json file or the store's copy): the JSON
/// must decode as a profile and every value must be one an analysis can produce.
public enum StoredProfile {
    private static let decoder = JSONDecoder()

    public static func read(_ data: Data) throws -> TrackProfile {
        let profile: TrackProfile
        do { profile = try decoder.decode(TrackProfile.self, from: data) } catch { throw StoredProfileError.notAProfile }
        try profile.checkRanges()
        return profile
    }
}

public enum StoredProfileError: Error, Equatable, CustomStringConvertible {
    case notAProfile
    case implausible(String)

    public var description: String {
        switch self {
        case .notAProfile: return "the stored profile is not a naviscan profile (not JSON, or fields missing); re-run the analysis"
        case .implausible(let why): return "the stored profile holds impossible values (\(why)); re-run the analysis"
        }
    }
}
