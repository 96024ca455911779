import Foundation

/// Onset strength at a 10 ms hop: spectral flux on log-magnitude bands.
///
/// The mono analysis-rate stream is first halved in rate (`HalfbandDecimator`, 44.1 → 22.05 kHz): the
/// bands stop at 10 kHz, and a 1024-point spectrum there has the 21.5 Hz bins the bass needs (at
/// coarser bins a steady bass note flickers in the narrow low bands) at half the cost of 2048 points
/// at the full rate. Each hop takes that Hann spectrum, maps it to log-spaced bands (`BandMapper`;
/// the nominal layout is 40 bands over 30 Hz–16 kHz, of which those below 0.455 × the rate are used),
/// compresses each band as ln(1 + γ·magnitude) and sums the positive differences to the louder of the
/// two previous hops, separately for three regions — low (< ~200 Hz: kick, bass), mid (~200 Hz–2 kHz:
/// snare, chords) and high (> ~2 kHz: hats, cymbals) — whose periodicities the tempo estimator
/// compares to find the beat level. The fluxes go straight to `OnsetPeriodicity`: memory does not
/// grow with the track.
public final class OnsetEnvelope {
    /// The nominal band layout: 40 log-spaced bands over 30 Hz–16 kHz.
    static let nominalBandCount = 40
    static let nominalMinHz = 30.0
    static let nominalMaxHz = 16_000.0
    /// First band of the mid and of the high region.
    static let midFirstBand = 12
    static let highFirstBand = 27
    static let compression: Float = 1000
    /// Input blocks are decimated in pieces of at most this many samples.
    static let decimationChunk = 4096

    /// Rate of the input stream.
    public let sampleRate: Int
    /// Rate the spectra are taken at (the input's, halved above 32 kHz).
    public let spectrumRate: Int
    public let hop: Int
    /// Bands in use: the nominal ones that end below 0.455 × `spectrumRate`.
    public let bandCount: Int
    /// Envelope frames per second.
    public var frameRate: Double { periodicity.frameRate }
    /// Where every hop's three fluxes go.
    public let periodicity: OnsetPeriodicity

    private let fftSize: Int
    private let decimator: HalfbandDecimator?
    private let spectrum: SpectrumAnalyzer
    private let bands: BandMapper
    private let power: UnsafeMutablePointer<Float>
    private let current: UnsafeMutablePointer<Float>
    private let previous: UnsafeMutablePointer<Float>
    private let beforePrevious: UnsafeMutablePointer<Float>
    private var hasPrevious = false
    private let queue: SampleQueue

    public init(sampleRate: Int) {
        self.sampleRate = sampleRate
        decimator = sampleRate > 32_000 ? HalfbandDecimator(maxInputFrames: Self.decimationChunk) : nil
        spectrumRate = decimator == nil ? sampleRate : sampleRate / 2
        fftSize = spectrumRate <= 24_000 ? 1024 : 2048
        hop = max(1, Int((Double(spectrumRate) * 0.01).rounded()))
        let edge = { (b: Int) in
            BandMapper.edge(b, bandCount: Self.nominalBandCount, minHz: Self.nominalMinHz, maxHz: Self.nominalMaxHz)
        }
        let usableHz = 0.455 * Double(spectrumRate)
        bandCount = (Self.highFirstBand + 1...Self.nominalBandCount).last { edge($0) <= usableHz } ?? Self.highFirstBand + 1
        spectrum = SpectrumAnalyzer(size: fftSize)
        bands = BandMapper(bandCount: bandCount, minHz: Self.nominalMinHz, maxHz: min(edge(bandCount), Double(spectrumRate) / 2),
                           fftSize: fftSize, sampleRate: spectrumRate)
        power = .allocate(capacity: fftSize / 2 + 1)
        current = .allocate(capacity: bandCount)
        previous = .allocate(capacity: bandCount)
        beforePrevious = .allocate(capacity: bandCount)
        queue = SampleQueue(capacity: fftSize + 8192)
        // Half a window of zeros first, so hop i is centred on sample i·hop.
        queue.appendZeros(fftSize / 2)
        let frameRate = Double(spectrumRate) / Double(hop)
        periodicity = OnsetPeriodicity(frameRate: frameRate, maxLag: TempoEstimator.maxLag(frameRate: frameRate),
                                       strongOnset: TempoEstimator.minOnsetStrength)
    }

    deinit {
        if let path = Self.bandDumpPath {
            try? dumpedLevels.withUnsafeBufferPointer { Data(buffer: $0) }.write(to: URL(fileURLWithPath: path))
        }
        power.deallocate()
        current.deallocate()
        previous.deallocate()
        beforePrevious.deallocate()
    }

    public func process(_ samples: UnsafeBufferPointer<Float>) {
        guard let decimator else { return frame(samples) }
        var offset = 0
        while offset < samples.count {
            let n = min(Self.decimationChunk, samples.count - offset)
            decimator.process(UnsafeBufferPointer(rebasing: samples[offset..<(offset + n)])) { frame($0) }
            offset += n
        }
    }

    private func frame(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count {
            offset += queue.append(samples, from: offset)
            var start = 0
            while start + fftSize <= queue.count {
                analyzeFrame(queue.start + start)
                start += hop
            }
            queue.removeFirst(start)
        }
    }

    /// For fitting the tempo model (scripts/tempo-model): when NAVISCAN_DUMP_ONSET_BANDS names a file,
    /// every hop's compressed band levels are kept and written there (little-endian Float32, hops × bandCount).
    private static let bandDumpPath = ProcessInfo.processInfo.environment["NAVISCAN_DUMP_ONSET_BANDS"]
    private var dumpedLevels: [Float] = []

    private func analyzeFrame(_ frame: UnsafePointer<Float>) {
        spectrum.powerSpectrum(of: frame, into: power)
        bands.map(power, into: current)
        compressMagnitudes(current, count: bandCount, gain: Self.compression)
        if Self.bandDumpPath != nil { dumpedLevels.append(contentsOf: UnsafeBufferPointer(start: current, count: bandCount)) }
        // Rises are measured against the louder of the two previous hops: two tones closer than the
        // window's main lobe beat against each other (a 55 Hz beat aliases into periodic flicker at a
        // 100 Hz hop), which this cancels, while a real onset is a step that passes.
        var low: Float = 0, mid: Float = 0, high: Float = 0
        if hasPrevious {
            func rise(_ b: Int) -> Float { max(0, current[b] - max(previous[b], beforePrevious[b])) }
            for b in 0..<Self.midFirstBand { low += rise(b) }
            for b in Self.midFirstBand..<Self.highFirstBand { mid += rise(b) }
            for b in Self.highFirstBand..<bandCount { high += rise(b) }
        }
        beforePrevious.update(from: hasPrevious ? previous : current, count: bandCount)
        previous.update(from: current, count: bandCount)
        // The first hop has no predecessor: its flux is 0, like the others' before any sound.
        hasPrevious = true
        periodicity.append(low: low, mid: mid, high: high)
    }
}
