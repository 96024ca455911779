import Foundation

/// Onset strength at a 10 ms hop: spectral flux on log-magnitude bands, summarised for the tempo
/// estimator (`OnsetPeriodicity.Summary`) in memory that does not grow with the track.
///
/// The stream is first brought to the tempo stage's own rate, `Config.rate` (22.05 kHz), whatever
/// rate it arrives at: halved by `HalfbandDecimator` when it comes at twice that rate (the
/// visualizer's 44.1 kHz stream), resampled otherwise. The bands stop at 10 kHz, and a 1024-point
/// spectrum at 22.05 kHz has the 21.5 Hz bins the bass needs (at coarser bins a steady bass note
/// flickers in the narrow low bands). Each hop takes that Hann spectrum, maps it to log-spaced bands
/// (`BandMapper`; the nominal layout is 40 bands over 30 Hz–16 kHz, of which those below 0.455 × the
/// rate are used), compresses each band as ln(1 + γ·magnitude) and sums the positive differences to
/// the louder of the two previous hops, separately for three regions — low (< ~200 Hz: kick, bass),
/// mid (~200 Hz–2 kHz: snare, chords) and high (> ~2 kHz: hats, cymbals) — whose periodicities the
/// tempo estimator compares to find the beat level.
public final class OnsetEnvelope {
    /// The front end's parameters: part of the profile's fingerprint, since they change the tempo.
    public struct Config: Sendable, Hashable, Codable {
        /// Rate the spectra are taken at, Hz.
        public var rate = 22_050
        /// Samples between spectra (221 at 22.05 kHz: 10.02 ms).
        public var hop = 221
        public var fftSize = 1024
        /// Nominal band layout; the bands that end above 0.455 × `rate` are left out.
        public var nominalBandCount = 40
        public var minHz = 30.0
        public var maxHz = 16_000.0
        /// First band of the mid and of the high region.
        public var midFirstBand = 12
        public var highFirstBand = 27
        /// γ in ln(1 + γ·magnitude).
        public var compression: Float = 1000
        /// Periodicity is gathered for lags up to this long (four beats at 40 BPM).
        public var maxLagSeconds = 6.0
        /// How much of the envelope, from the first onset, is kept for beat tracking (six hours: about
        /// 2 MB for each of the three envelopes); past it the grid of a longer track goes on at its
        /// last interval.
        public var beatTrackingSeconds = 6 * 3600.0
        /// How much of the band levels, from the start, is kept for the bar lines (`BandLevels`: 430 kB
        /// for 30 minutes); the bars are chosen from the beats within it.
        public var barAnalysisSeconds = 1800.0

        public init() {}

        public var frameRate: Double { Double(rate) / Double(hop) }
    }

    /// Input blocks are converted in pieces of at most this many samples.
    static let conversionChunk = 4096

    public let config: Config
    /// Rate of the input stream.
    public let inputRate: Int
    /// Bands in use: the nominal ones that end below 0.455 × `config.rate`.
    public let bandCount: Int
    /// Envelope frames per second.
    public var frameRate: Double { config.frameRate }

    private let decimator: HalfbandDecimator?
    private let resampler: Resampler?
    private let spectrum: SpectrumAnalyzer
    private let bands: BandMapper
    private let power: UnsafeMutablePointer<Float>
    private let current: UnsafeMutablePointer<Float>
    private let previous: UnsafeMutablePointer<Float>
    private let beforePrevious: UnsafeMutablePointer<Float>
    private var hasPrevious = false
    private let queue: SampleQueue
    private let periodicity: OnsetPeriodicity
    private let levels: BandLevels
    private let observer: OnsetBandObserver?
    /// The similarity features, measured from this stage's spectra when asked for.
    public private(set) var features: SonicFeatureAccumulator?
    /// The key stage's chroma, gathered from this stage's spectra and stream when asked for.
    public private(set) var key: KeyChroma?

    /// `observer`, when given, sees every hop's compressed band levels (for fitting the tempo model).
    public init(config: Config = Config(), inputRate: Int, observer: OnsetBandObserver? = nil, measuresFeatures: Bool = false,
                measuresKey: Bool = false) throws {
        self.config = config
        self.inputRate = inputRate
        self.observer = observer
        features = nil
        key = nil
        if inputRate == 2 * config.rate {
            decimator = HalfbandDecimator(maxInputFrames: Self.conversionChunk)
            resampler = nil
        } else {
            decimator = nil
            resampler = inputRate == config.rate
                ? nil : try Resampler(inputRate: inputRate, outputRate: config.rate, maxInputFrames: Self.conversionChunk)
        }
        let edge = { (b: Int) in
            BandMapper.edge(b, bandCount: config.nominalBandCount, minHz: config.minHz, maxHz: config.maxHz)
        }
        let usableHz = 0.455 * Double(config.rate)
        bandCount = (config.highFirstBand + 1...config.nominalBandCount).last { edge($0) <= usableHz } ?? config.highFirstBand + 1
        spectrum = SpectrumAnalyzer(size: config.fftSize)
        bands = BandMapper(bandCount: bandCount, minHz: config.minHz, maxHz: min(edge(bandCount), Double(config.rate) / 2),
                           fftSize: config.fftSize, sampleRate: config.rate)
        power = .allocate(capacity: config.fftSize / 2 + 1)
        current = .allocate(capacity: bandCount)
        previous = .allocate(capacity: bandCount)
        beforePrevious = .allocate(capacity: bandCount)
        queue = SampleQueue(capacity: config.fftSize + 8192)
        // Half a window of zeros first, so hop i is centred on sample i·hop.
        queue.appendZeros(config.fftSize / 2)
        periodicity = OnsetPeriodicity(frameRate: config.frameRate,
                                       maxLag: Int(config.frameRate * config.maxLagSeconds) + 2,
                                       beatTrackingFrames: Int(config.frameRate * config.beatTrackingSeconds))
        levels = BandLevels(bandCount: bandCount, midFirstBand: config.midFirstBand, highFirstBand: config.highFirstBand,
                            maxHops: Int(config.frameRate * config.barAnalysisSeconds))
        if measuresFeatures || measuresKey {
            // The level a full-scale sine gives in this spectrum, for the silence gates.
            let sine = UnsafeMutablePointer<Float>.allocate(capacity: config.fftSize)
            defer { sine.deallocate() }
            for i in 0..<config.fftSize { sine[i] = Float(sin(2 * Double.pi * 1000 * Double(i) / Double(config.rate))) }
            spectrum.powerSpectrum(of: sine, into: power)
            var total: Float = 0
            for k in 0...(config.fftSize / 2) { total += power[k] }
            if measuresFeatures {
                features = SonicFeatureAccumulator(fftSize: config.fftSize, sampleRate: config.rate, fullScalePower: total)
                features?.observer = observer
            }
            if measuresKey {
                key = KeyChroma(fftSize: config.fftSize, sampleRate: config.rate, hopSeconds: 1 / config.frameRate, fullScalePower: total)
            }
        }
    }

    deinit {
        power.deallocate()
        current.deallocate()
        previous.deallocate()
        beforePrevious.deallocate()
    }

    public func process(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count {
            let n = min(Self.conversionChunk, samples.count - offset)
            let piece = UnsafeBufferPointer(rebasing: samples[offset..<(offset + n)])
            if let decimator {
                decimator.process(piece) { frame($0) }
            } else if let resampler {
                resampler.process(piece) { frame($0) }
            } else {
                frame(piece)
            }
            offset += n
        }
    }

    /// What the tempo estimator needs from everything processed. Call once, at the end of the track.
    public func finish() -> OnsetPeriodicity.Summary {
        observer?.finish()
        var summary = periodicity.finish()
        summary.bandLevels = levels.finish()
        return summary
    }

    private func frame(_ samples: UnsafeBufferPointer<Float>) {
        key?.process(samples)
        queue.windows(of: samples, size: config.fftSize, hop: config.hop) { analyzeFrame($0) }
    }

    private func analyzeFrame(_ frame: UnsafePointer<Float>) {
        spectrum.powerSpectrum(of: frame, into: power)
        bands.map(power, into: current)
        compressMagnitudes(current, count: bandCount, gain: config.compression)
        let flux = takeLevels()
        features?.observe(power: power, flux: flux)
        key?.observe(power: power, flux: flux)
    }

    /// The compressed band levels in `current` → the band-level summary and the region fluxes; returns
    /// the hop's full-band flux.
    private func takeLevels() -> Float {
        observer?.observe(levels: UnsafeBufferPointer(start: current, count: bandCount))
        levels.append(current)
        // Rises are measured against the louder of the two previous hops: two tones closer than the
        // window's main lobe beat against each other (a 55 Hz beat aliases into periodic flicker at a
        // 100 Hz hop), which this cancels, while a real onset is a step that passes.
        var low: Float = 0, mid: Float = 0, high: Float = 0
        if hasPrevious {
            func rise(_ b: Int) -> Float { max(0, current[b] - max(previous[b], beforePrevious[b])) }
            for b in 0..<config.midFirstBand { low += rise(b) }
            for b in config.midFirstBand..<config.highFirstBand { mid += rise(b) }
            for b in config.highFirstBand..<bandCount { high += rise(b) }
        }
        beforePrevious.update(from: hasPrevious ? previous : current, count: bandCount)
        previous.update(from: current, count: bandCount)
        // The first hop has no predecessor: its flux is 0, like the others' before any sound.
        hasPrevious = true
        periodicity.append(low: low, mid: mid, high: high)
        return low + mid + high
    }

    /// Feeds band levels as `--dump-onset-bands` writes them (hops × `bandCount`), in place of audio:
    /// the tempo model's parity test runs the estimator on the same dumps as its Python twin.
    package func replay(levels: [Float]) {
        precondition(levels.count % bandCount == 0, "a whole number of hops")
        for hop in 0..<(levels.count / bandCount) {
            for b in 0..<bandCount { current[b] = levels[hop * bandCount + b] }
            _ = takeLevels()
        }
    }
}

/// Sees the onset front end's compressed band levels, hop by hop (for fitting the tempo model:
/// scripts/tempo-model). `levels` is only valid during the call.
public protocol OnsetBandObserver: AnyObject {
    func observe(levels: UnsafeBufferPointer<Float>)
    /// The similarity features' log10 band powers of one measured spectrum (for fitting the
    /// similarity model: scripts/similarity-model).
    func observe(timbreBands: UnsafeBufferPointer<Float>)
    /// The track has ended.
    func finish()
}

extension OnsetBandObserver {
    public func observe(timbreBands: UnsafeBufferPointer<Float>) {}
}
