/// What to compute for a track. Stages not asked for cost nothing.
public struct AnalysisOptions: Sendable, Hashable {
    /// Visualizer frames; nil to skip them.
    public var visualizer: VisualizerConfig?
    /// DJ profile (loudness, silence edges, tempo); nil to skip it.
    public var profile: ProfileConfig?
    /// Which of the profile's stages run (all of them by default). The similarity features come from
    /// the tempo stage's spectra. Silence and loudness run together (the sample peak comes with the
    /// silence edges), as do tempo and the beat grid.
    public var profileStages = AnalysisStage.profile
    /// The stored results of the profile's stages that do not run, where those that do read them.
    public var prior: PriorResults?
    /// Frames per decoded block: the unit every stage processes.
    public var blockFrames: Int = 4096

    public init(visualizer: VisualizerConfig? = nil, profile: ProfileConfig? = nil) {
        self.visualizer = visualizer
        self.profile = profile
    }

    /// Rate of the visualizer's mono stream, which the tempo stage shares when both run.
    public var analysisRate: Int { visualizer?.analysisRate ?? VisualizerConfig().analysisRate }
}

/// Parameters of the DJ profile.
public struct ProfileConfig: Sendable, Hashable, Codable {
    public var loudness = LoudnessMeter.Config()
    /// gain_db = referenceLUFS − lufs. −18 LUFS is the ReplayGain 2.0 reference.
    public var referenceLUFS: Double = -18
    public var silence = SilenceDetector.Config()
    /// The tempo stage's onset front end, then its estimator.
    public var onsets = OnsetEnvelope.Config()
    public var tempo = TempoEstimator.Config()
    /// The seek-bar waveform written beside the profile.
    public var waveform = WaveformConfig()

    public init() {}
}

/// A track's stored results that a partial analysis reads in place of the stages it does not run:
/// the tempo search is bounded by the silence edges and reads the loudness; the features read the
/// tempo and the loudness range.
public struct PriorResults: Sendable, Hashable {
    public var silenceEnd: Double
    public var silenceStart: Double?
    public var lufs: Double?
    public var loudnessRange: Double?
    public var bpm: Double?
    public var bpmConfidence: Double
    /// The key reads the bars.
    public var beatGrid: BeatGrid?

    public init(_ profile: TrackProfile) {
        silenceEnd = profile.silenceEnd
        silenceStart = profile.silenceStart
        lufs = profile.lufs
        loudnessRange = profile.loudnessRange
        bpm = profile.bpm
        bpmConfidence = profile.bpmConfidence
        beatGrid = profile.beatGrid
    }
}
