/// What to compute for a track. Stages not asked for cost nothing.
public struct AnalysisOptions: Sendable, Hashable {
    /// Visualizer frames; nil to skip them.
    public var visualizer: VisualizerConfig?
    /// DJ profile (loudness, silence edges, tempo); nil to skip it.
    public var profile: ProfileConfig?
    /// The similarity features, measured with the profile (from the tempo stage's spectra).
    public var features = true
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
