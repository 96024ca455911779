import Foundation

/// EBU R128 / ITU-R BS.1770 loudness of the native-rate stream with every channel (never a downmix,
/// never resampled, never an excerpt).
///
/// `KWeightingFilter` applies libebur128's K-weighting filter and sums each 100 ms of filtered
/// signal once; `LoudnessGating` builds the 400 ms and 3 s blocks from those sums. The blocks are
/// libebur128's (its 100 ms is (rate + 5) / 10 frames at every rate), so the integrated loudness and
/// range equal its I and LRA modes' to rounding (the tests compare with libebur128 itself) at a
/// fraction of their cost: those modes sum every filtered sample seven times, and its filter keeps
/// its state in memory. libebur128 measures the true peak when asked for. The sample peak comes from
/// a vectorised scan here; a caller that already scans every sample (the track analyser's silence
/// detector) turns that off at init and hands its peak to `finish`.
///
/// Edge values are part of the contract: input with no block above the −70 LUFS gate (silence, or
/// shorter than one 400 ms block) has no integrated loudness, reported as `nil`, never −∞ or −70.
public final class LoudnessMeter {
    /// The loudness stage's version: bump it when loudness, range, true peak, the gating histogram
    /// or the envelope the crossfade ramps come from change.
    public static let version = 1

    public struct Config: Sendable, Hashable, Codable {
        /// Also measure the true peak (`TruePeakMeter`, 4× oversampled), which ReplayGain 2.0 taggers
        /// report and players clip by; a few per cent of a scan (docs/performance.md).
        public var truePeak = true
        public init(truePeak: Bool = true) { self.truePeak = truePeak }
    }

    public struct Result: Sendable, Equatable {
        /// Integrated loudness in LUFS; nil when undefined (silent or too short).
        public var integratedLUFS: Double?
        /// Loudness range in LU (EBU Tech 3342); nil when the integrated loudness is undefined.
        public var loudnessRange: Double?
        /// Highest absolute sample value in dBFS; nil for digital silence.
        public var samplePeakDB: Double?
        /// True peak in dBTP when measured; nil otherwise.
        public var truePeakDB: Double?
        /// The rate the meter ran at (the source's, unless it was resampled to be measured).
        public var measuredRate: Int = 0
        /// The gating blocks, for album loudness; nil when no block passed the absolute gate.
        public var histogram: LoudnessHistogram?
        /// Momentary loudness over the first and last 30 s, for crossfade ramps.
        var envelope = LoudnessEnvelope.Summary(start: [], end: [], blockCount: 0)
    }

    /// BS.1770's K-weighting filter, as libebur128 designs it for a rate, is a 1.68 kHz high shelf:
    /// below 2 × 1.68 kHz its coefficients are meaningless (a 3 kHz sine measured +2,700 LUFS) and up
    /// to about 8 kHz the shelf is bent by the bilinear transform. Sources below this rate are
    /// resampled to `resampledRate` for loudness (see TrackAnalyzer).
    public static let minimumSampleRate = 8000
    public static let resampledRate = 48_000

    public let config: Config
    private let channels: Int
    private let sampleRate: Int
    private let filter: KWeightingFilter
    /// Each channel's BS.1770 weight (0 for the LFE).
    private let weights: [Double]
    /// Each channel's sum of squared K-weighted samples in the current 100 ms block.
    private let sums: UnsafeMutablePointer<Double>
    /// Frames in a 100 ms block, rounded as libebur128 rounds it.
    private let blockFrames: Int
    private var framesToBlockEnd: Int
    private var gating = LoudnessGating()
    private var envelope = LoudnessEnvelope()
    private let measuresSamplePeak: Bool
    private var peak: Float = 0
    /// The true-peak meter, when the true peak is asked for.
    private let truePeak: TruePeakMeter?

    /// With `measuresSamplePeak` false, `process` skips the peak scan and `finish` reports the peak
    /// it is given.
    public init(config: Config, sampleRate: Int, layout: [ChannelPosition], measuresSamplePeak: Bool = true) throws {
        // libebur128's limits, which the true-peak meter shares.
        guard (1...64).contains(layout.count), (16...2_822_400).contains(sampleRate) else {
            throw LoudnessError.unsupported(sampleRate: sampleRate, channels: layout.count)
        }
        self.config = config
        self.measuresSamplePeak = measuresSamplePeak
        channels = layout.count
        self.sampleRate = sampleRate
        filter = KWeightingFilter(sampleRate: sampleRate, channels: channels)
        weights = layout.map(Self.bs1770Weight)
        sums = .allocate(capacity: channels)
        sums.initialize(repeating: 0, count: channels)
        blockFrames = (sampleRate + 5) / 10
        framesToBlockEnd = blockFrames
        truePeak = config.truePeak ? TruePeakMeter(sampleRate: sampleRate, channels: channels, maxBlockFrames: 4096) : nil
    }

    deinit {
        sums.deallocate()
    }

    /// BS.1770 weights, as libebur128 applies them: L/R/C 1.0, surrounds 1.41 (≈ +1.5 dB), LFE excluded.
    static func bs1770Weight(_ position: ChannelPosition) -> Double {
        switch position {
        case .mono, .left, .right, .center, .other: return 1
        case .lfe: return 0
        case .leftSurround, .rightSurround, .leftBack, .rightBack: return 1.41
        }
    }

    public func process(_ block: AudioBlock) {
        if measuresSamplePeak { peak = max(peak, PeakScan.maxAbs(block.samples, count: block.frameCount * channels)) }
        truePeak?.process(block)
        // Filter up to each 100 ms boundary, then hand on that block's energy.
        var offset = 0
        while offset < block.frameCount {
            let n = min(framesToBlockEnd, block.frameCount - offset)
            filter.accumulate(block.samples + offset * channels, frames: n, into: sums)
            offset += n
            framesToBlockEnd -= n
            if framesToBlockEnd == 0 {
                framesToBlockEnd = blockFrames
                var energy = 0.0
                for c in 0..<channels where weights[c] > 0 { energy += weights[c] * sums[c] }
                sums.update(repeating: 0, count: channels)
                gating.add(energy: energy / Double(blockFrames))
                if let momentary = gating.latestMomentary { envelope.add(energy: momentary) }
            }
        }
    }

    /// `samplePeak`: the largest absolute sample value, when this meter was made not to measure it.
    public func finish(samplePeak: Float? = nil) -> Result {
        precondition(measuresSamplePeak || samplePeak != nil, "a meter that does not measure the sample peak must be given it")
        let peak = measuresSamplePeak ? self.peak : samplePeak ?? 0
        var result = Result()
        result.measuredRate = sampleRate
        result.envelope = envelope.finish()
        result.integratedLUFS = gating.integratedLoudness()
        if result.integratedLUFS != nil { result.loudnessRange = gating.loudnessRange() }
        if result.integratedLUFS != nil, !gating.momentaryBlocks.isEmpty {
            result.histogram = LoudnessHistogram(blockEnergies: gating.momentaryBlocks)
        }
        if peak > 0, peak.isFinite { result.samplePeakDB = 20 * log10(Double(peak)) }
        if let truePeak {
            // Never below the sample peak, as libebur128 reports it.
            let value = max(Double(peak), truePeak.finish())
            if value > 0, value.isFinite { result.truePeakDB = 20 * log10(value) }
        }
        return result
    }
}

public enum LoudnessError: Error, CustomStringConvertible {
    case unsupported(sampleRate: Int, channels: Int)

    public var description: String {
        switch self {
        case .unsupported(let rate, let channels):
            return "cannot measure the loudness of \(channels) channels at \(rate) Hz (1 to 64 channels, 16 Hz to 2.8 MHz)"
        }
    }
}
