/// The visualizer's path through one decode: downmix → resample to the analysis rate → frames → sink.
public final class VisualizerPipeline {
    public let config: VisualizerConfig
    private let downmixer: Downmixer
    private let resampler: Resampler
    private let frames: VisFrameAnalyzer
    private let sink: VisFrameSink

    public init(config: VisualizerConfig, source: AudioStreamInfo, maxBlockFrames: Int, sink: VisFrameSink) throws {
        self.config = config
        downmixer = Downmixer(channels: source.channels, maxFrames: maxBlockFrames)
        resampler = try Resampler(inputRate: source.sampleRate, outputRate: config.analysisRate, maxInputFrames: maxBlockFrames)
        frames = try VisFrameAnalyzer(config: config)
        self.sink = sink
    }

    public func process(_ block: AudioBlock) throws {
        let mono = downmixer.process(block)
        try resampler.process(mono) { try frames.process($0, into: sink) }
    }

    /// Emits the last frames; returns the frame count.
    public func finish(duration: Double) throws -> Int {
        try frames.finish(duration: duration, into: sink)
    }
}
