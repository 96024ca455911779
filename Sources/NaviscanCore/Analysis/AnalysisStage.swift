/// A stage of a track's analysis whose results are stored, with a version of its own: a track is
/// analysed again only for the stages whose version changed since it was analysed, never because
/// the product version changed (docs/upgrades.md).
public enum AnalysisStage: String, CaseIterable, Sendable, Comparable {
    /// The decoders and their sample handling: every other stage reads what they produce.
    case decode
    case visualizer
    case silence
    /// Integrated loudness and range, the peaks, the gating histogram, the crossfade ramps.
    case loudness
    /// The onset front end and the tempo decision.
    case tempo
    case beatGrid = "beat-grid"
    case waveform
    /// The similarity features (stored apart, in `features_version`, which the similarity query filters on).
    case features
    /// The musical key (`KeyDetector`).
    case key

    public static func < (a: AnalysisStage, b: AnalysisStage) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The profile's stages: what the DJ pass (`--dj`) runs.
    public static let profile: Set<AnalysisStage> = [.silence, .loudness, .tempo, .beatGrid, .waveform, .features, .key]

    /// The stages of the outputs a scan writes: frames (`--vis`), the profile (`--dj`).
    public static func of(visualizer: Bool, profile: Bool) -> Set<AnalysisStage> {
        (visualizer ? [.visualizer] : Set<AnalysisStage>()).union(profile ? Self.profile : [])
    }

    /// Words for a summary line ("tempo and beat grid").
    public var words: String {
        switch self {
        case .decode: "decoding"
        case .visualizer: "visualizer frames"
        case .silence: "silence edges"
        case .loudness: "loudness"
        case .tempo: "tempo"
        case .beatGrid: "beat grid"
        case .waveform: "waveform"
        case .features: "similarity features"
        case .key: "key"
        }
    }

    /// The stages that read this one's results: when it runs again, so do they. Silence edges bound
    /// the loudness ramps and the tempo search, the sample peak comes with them; the tempo stage reads
    /// the loudness; the features read the tempo and the loudness range; the key reads the silence
    /// edges and the beat grid.
    var consumers: Set<AnalysisStage> {
        switch self {
        case .decode: Set(Self.allCases)
        case .silence: [.loudness, .tempo, .beatGrid, .features, .key]
        case .loudness: [.tempo, .beatGrid, .features, .key]
        case .tempo: [.beatGrid, .features, .key]
        case .beatGrid: [.key]
        case .visualizer, .waveform, .features, .key: []
        }
    }

    /// `stages` with every stage that reads their results, transitively.
    public static func closure(of stages: Set<AnalysisStage>) -> Set<AnalysisStage> {
        var all = stages
        for stage in stages { all.formUnion(stage.consumers) }
        // One level suffices: each stage's consumers already include their own consumers.
        return all
    }

    /// "tempo and beat grid", "loudness, tempo and beat grid".
    public static func words(_ stages: Set<AnalysisStage>) -> String {
        let names = stages.sorted().map(\.words)
        guard let last = names.last else { return "nothing" }
        return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " and " + last
    }
}

/// The version of each stage a track was analysed with (all but `features`, which has its own
/// column). Stored as text, `beat-grid=1 decode=1 …`; a reader takes what it knows and treats a
/// stage it does not find as stale.
public struct StageVersions: Sendable, Hashable, CustomStringConvertible {
    public private(set) var versions: [AnalysisStage: Int]

    public init(_ versions: [AnalysisStage: Int]) { self.versions = versions }

    /// This build's stages: each analyser carries its own version.
    public static let current = StageVersions([
        .decode: AudioDecoderFactory.version,
        .visualizer: VisFrameAnalyzer.version,
        .silence: SilenceDetector.version,
        .loudness: LoudnessMeter.version,
        .tempo: TempoEstimator.version,
        .beatGrid: BeatGrid.version,
        .waveform: WaveformAnalyzer.version,
        .features: SonicFeatures.version,
        .key: KeyDetector.version,
    ])

    /// What naviscan 0.5.9, the last release before stages carried versions, analysed with: version 1
    /// of every stage it had (the key stage came after 0.6.0). Its rows are given these when the store is migrated.
    public static let release059 = StageVersions(Dictionary(uniqueKeysWithValues: AnalysisStage.allCases.filter { $0 != .key }.map { ($0, 1) }))

    public subscript(stage: AnalysisStage) -> Int? {
        get { versions[stage] }
        set { versions[stage] = newValue }
    }

    /// The stored form (without `features`).
    public var description: String {
        versions.filter { $0.key != .features }.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ")
    }

    /// Reads the stored form; entries it does not understand are left out (their stages are stale).
    public init(stored: String) {
        var versions: [AnalysisStage: Int] = [:]
        for entry in stored.split(separator: " ") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let stage = AnalysisStage(rawValue: String(parts[0])), let version = Int(parts[1]) else { continue }
            versions[stage] = version
        }
        self.versions = versions
    }

    /// The stages among `stages` whose version here differs from `self` (the current ones), with
    /// every stage that reads their results.
    public func stale(_ stored: StageVersions, among stages: Set<AnalysisStage>) -> Set<AnalysisStage> {
        let changed = Set(AnalysisStage.allCases.filter { stored[$0] != self[$0] })
        return AnalysisStage.closure(of: changed).intersection(stages)
    }
}
