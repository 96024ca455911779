/// Mono samples at the analysis rate → normalized band frames.
///
/// Frame i is centred on sample round(i · rate / fps): its window spans N/2 samples either side, so the
/// first frames see zeros before t = 0 and the last ones zeros after the end. The stream is buffered in
/// one fixed array: memory does not depend on the track's length.
public final class VisFrameAnalyzer {
    public let config: VisualizerConfig
    private let spectrum: SpectrumAnalyzer
    private let bands: BandMapper
    private let normalizer: LevelNormalizer
    private let power: UnsafeMutablePointer<Float>
    private let frame: UnsafeMutablePointer<Float>
    private let buffer: UnsafeMutablePointer<Float>
    private let capacity: Int
    /// Absolute sample index of buffer[0]; negative while the zero pre-roll is still in the buffer.
    private var bufferStart: Int
    private var bufferCount: Int
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
        capacity = 2 * config.fftSize + Int(config.hop.rounded(.up)) + 4096
        buffer = .allocate(capacity: capacity)
        let half = config.fftSize / 2
        buffer.initialize(repeating: 0, count: half)
        bufferStart = -half
        bufferCount = half
    }

    deinit {
        power.deallocate()
        frame.deallocate()
        buffer.deallocate()
    }

    /// First sample of frame i's window.
    private func windowStart(_ i: Int) -> Int {
        Int((Double(i) * Double(config.analysisRate) / config.fps).rounded()) - config.fftSize / 2
    }

    public func process(_ samples: UnsafeBufferPointer<Float>, into sink: VisFrameSink) throws {
        var offset = 0
        while offset < samples.count {
            let n = min(capacity - bufferCount, samples.count - offset)
            (buffer + bufferCount).update(from: samples.baseAddress! + offset, count: n)
            bufferCount += n
            offset += n
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
            let missing = windowStart(framesEmitted) + config.fftSize - (bufferStart + bufferCount)
            if missing > 0 {
                let n = min(missing, capacity - bufferCount)
                (buffer + bufferCount).initialize(repeating: 0, count: n)
                bufferCount += n
            }
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
        let end = bufferStart + bufferCount
        while framesEmitted < limit {
            let start = windowStart(framesEmitted)
            guard start + config.fftSize <= end else { return }
            spectrum.powerSpectrum(of: buffer + (start - bufferStart), into: power)
            bands.map(power, into: frame)
            normalizer.normalize(frame)
            try sink.append(frame)
            framesEmitted += 1
        }
    }

    /// Drops samples no future window needs.
    private func compact() {
        let keepFrom = windowStart(framesEmitted)
        let drop = min(keepFrom - bufferStart, bufferCount)
        guard drop > 0 else { return }
        (buffer).update(from: buffer + drop, count: bufferCount - drop)
        bufferStart += drop
        bufferCount -= drop
    }
}
