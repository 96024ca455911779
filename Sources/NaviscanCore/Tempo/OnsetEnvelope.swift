import Foundation

/// Onset strength at a 10 ms hop: spectral flux on log-magnitude bands.
///
/// Each hop takes a 2048-point Hann spectrum (21.5 Hz bins at 44.1 kHz: at 1024 points the bass bands
/// are narrower than a bin and a steady bass note flickers in them) of the mono analysis-rate stream, maps it to log-spaced
/// bands (`BandMapper`), compresses each band as ln(1 + γ·magnitude) and sums the positive
/// differences to the louder of the two previous hops, separately for three regions — low (< ~200 Hz: kick, bass),
/// mid (~200 Hz–2 kHz: snare, chords) and high (> ~2 kHz: hats, cymbals) — whose periodicities the
/// tempo estimator compares to find the beat level. The fluxes go straight to `OnsetPeriodicity`:
/// memory does not grow with the track.
public final class OnsetEnvelope {
    public static let bandCount = 40
    /// First band of the mid and of the high region (bands are 30 Hz–16 kHz, log-spaced).
    static let midFirstBand = 12
    static let highFirstBand = 27
    static let compression: Float = 1000

    public let sampleRate: Int
    public let hop: Int
    /// Envelope frames per second.
    public var frameRate: Double { Double(sampleRate) / Double(hop) }
    /// Where every hop's three fluxes go.
    public let periodicity: OnsetPeriodicity

    private let fftSize = 2048
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
        hop = max(1, Int((Double(sampleRate) * 0.01).rounded()))
        spectrum = SpectrumAnalyzer(size: fftSize)
        let maxHz = min(16_000, Double(sampleRate) / 2)
        bands = BandMapper(bandCount: Self.bandCount, minHz: 30, maxHz: maxHz, fftSize: fftSize, sampleRate: sampleRate)
        power = .allocate(capacity: fftSize / 2 + 1)
        current = .allocate(capacity: Self.bandCount)
        previous = .allocate(capacity: Self.bandCount)
        beforePrevious = .allocate(capacity: Self.bandCount)
        queue = SampleQueue(capacity: fftSize + 8192)
        // Half a window of zeros first, so hop i is centred on sample i·hop.
        queue.appendZeros(fftSize / 2)
        let frameRate = Double(sampleRate) / Double(hop)
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
    /// every hop's compressed band levels are kept and written there (little-endian Float32, hops × 40).
    private static let bandDumpPath = ProcessInfo.processInfo.environment["NAVISCAN_DUMP_ONSET_BANDS"]
    private var dumpedLevels: [Float] = []

    private func analyzeFrame(_ frame: UnsafePointer<Float>) {
        spectrum.powerSpectrum(of: frame, into: power)
        bands.map(power, into: current)
        compressMagnitudes(current, count: Self.bandCount, gain: Self.compression)
        if Self.bandDumpPath != nil { dumpedLevels.append(contentsOf: UnsafeBufferPointer(start: current, count: Self.bandCount)) }
        // Rises are measured against the louder of the two previous hops: two tones closer than the
        // window's main lobe beat against each other (a 55 Hz beat aliases into periodic flicker at a
        // 100 Hz hop), which this cancels, while a real onset is a step that passes.
        var low: Float = 0, mid: Float = 0, high: Float = 0
        if hasPrevious {
            func rise(_ b: Int) -> Float { max(0, current[b] - max(previous[b], beforePrevious[b])) }
            for b in 0..<Self.midFirstBand { low += rise(b) }
            for b in Self.midFirstBand..<Self.highFirstBand { mid += rise(b) }
            for b in Self.highFirstBand..<Self.bandCount { high += rise(b) }
        }
        beforePrevious.update(from: hasPrevious ? previous : current, count: Self.bandCount)
        previous.update(from: current, count: Self.bandCount)
        // The first hop has no predecessor: its flux is 0, like the others' before any sound.
        hasPrevious = true
        periodicity.append(low: low, mid: mid, high: high)
    }
}
