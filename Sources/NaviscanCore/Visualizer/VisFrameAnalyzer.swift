/// Mono samples at the analysis rate → normalized band frames.
///
/// Frame i is centred on sample round(i · rate / fps): its window spans N/2 samples either side, so the
/// first frames see zeros before t = 0 and the last ones zeros after the end. The stream is buffered in
/// one fixed array: memory does not depend on the track's length.
public final class VisFrameAnalyzer {
    /// The visualizer stage's version: bump it when the frames it writes change.
    public static let version = 1

    public let config: VisualizerConfig
    private let spectrum: SpectrumAnalyzer
    private let bands: BandMapper
    private let normalizer: LevelNormalizer
    private let power: UnsafeMutablePointer<Float>
    private let frame: UnsafeMutablePointer<Float>
    private let queue: SampleQueue
    /// Absolute sample index of the queue's first sample; negative while the zero pre-roll is in it.
    private var bufferStart: Int
    public private(set) var framesEmitted = 0

    public init(config: VisualizerConfig) throws {
        try config.validate()
        self.config = config
        spectrum = SpectrumAnalyzer(size: config.fftSize)
        bands = BandMapper(bandCount: config.bandCount, minHz: config.minHz, maxHz: config.maxHz,
                           fftSize: config.fftSize, sampleRate: config.analysisRate)
        normalizer = LevelNormalizer(parameters: config.normalization, fps: config.fps, bandCount: config.bandCount)
        power = .allocate(capacity: spectrum.binCount)
        frame = .allocate(capacity: config.bandCount)
        queue = SampleQueue(capacity: 2 * config.fftSize + Int(config.hop.rounded(.up)) + 4096)
        let half = config.fftSize / 2
        queue.appendZeros(half)
        bufferStart = -half
    }

    deinit {
        power.deallocate()
        frame.deallocate()
    }

    /// First sample of frame i's window.
    private func windowStart(_ i: Int) -> Int {
        Int((Double(i) * Double(config.analysisRate) / config.fps).rounded()) - config.fftSize / 2
    }

    public func process(_ samples: UnsafeBufferPointer<Float>, into sink: VisFrameSink) throws {
        var offset = 0
        while offset < samples.count {
            offset += queue.append(samples, from: offset)
            try emitReadyFrames(limit: Int.max, into: sink)
            compact()
        }
    }

    /// Emits the remaining frames of a track `duration` seconds long (zero-padded past the end) and
    /// returns the total: ceil(duration × fps).
    @discardableResult
    public func finish(duration: Double, into sink: VisFrameSink) throws -> Int {
        let total = Self.frameCount(duration: duration, fps: config.fps)
        while framesEmitted < total {
            let missing = windowStart(framesEmitted) + config.fftSize - (bufferStart + queue.count)
            if missing > 0 { queue.appendZeros(missing) }
            try emitReadyFrames(limit: total, into: sink)
            compact()
        }
        return total
    }

    /// ceil(duration × fps), tolerant of floating-point noise (240 s at 30 fps is exactly 7,200).
    public static func frameCount(duration: Double, fps: Double) -> Int {
        guard duration > 0 else { return 0 }
        return Int((duration * fps - 1e-7).rounded(.up))
    }

    private func emitReadyFrames(limit: Int, into sink: VisFrameSink) throws {
        let end = bufferStart + queue.count
        while framesEmitted < limit {
            let start = windowStart(framesEmitted)
            guard start + config.fftSize <= end else { return }
            spectrum.powerSpectrum(of: queue.start + (start - bufferStart), into: power)
            bands.map(power, into: frame)
            normalizer.normalize(frame)
            try sink.append(frame)
            framesEmitted += 1
        }
    }

    /// Drops samples no future window needs.
    private func compact() {
        let keepFrom = windowStart(framesEmitted)
        let drop = min(keepFrom - bufferStart, queue.count)
        guard drop > 0 else { return }
        queue.removeFirst(drop)
        bufferStart += drop
    }
}
