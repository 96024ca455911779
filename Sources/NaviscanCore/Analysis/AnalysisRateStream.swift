/// The mono analysis-rate stream shared by the visualizer and the tempo stages: native blocks are
/// downmixed first (one channel to resample, not N), then resampled once for every consumer.
public final class AnalysisRateStream {
    public let rate: Int
    private let downmixer: Downmixer
    private let resampler: Resampler

    public init(source: AudioStreamInfo, rate: Int, maxBlockFrames: Int) throws {
        self.rate = rate
        downmixer = Downmixer(channels: source.channels, maxFrames: maxBlockFrames)
        resampler = try Resampler(inputRate: source.sampleRate, outputRate: rate, maxInputFrames: maxBlockFrames)
    }

    /// Hands the block's mono analysis-rate samples to `consumer`, in one or more chunks.
    public func process(_ block: AudioBlock, _ consumer: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        try resampler.process(downmixer.process(block), consumer)
    }
}
