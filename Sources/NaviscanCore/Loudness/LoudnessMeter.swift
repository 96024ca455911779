import Foundation

import CEbur128

/// EBU R128 / ITU-R BS.1770 loudness through libebur128, fed the native-rate stream with every
/// channel (never a downmix, never resampled, never an excerpt).
///
/// libebur128 applies the K-weighting filter and sums each 100 ms of filtered signal (its
/// momentary mode plus a 100 ms window query); `LoudnessGating` builds the 400 ms and 3 s blocks
/// from those sums. That gives libebur128's integrated loudness and range at under half its I+LRA
/// mode's cost, which sums every sample seven times. At sample rates where libebur128's 100 ms block
/// and its 100 ms window differ by a sample (11 025 Hz), its own I and LRA modes give the track's
/// values instead (the blocks built here still give the album histogram, a sample off per block).
/// The sample peak comes from a vectorised scan here, not libebur128's scalar one; a caller that
/// already scans every sample (the track analyser's silence detector) turns that off at init and
/// hands its peak to `finish`.
///
/// Edge values are part of the contract: input with no block above the −70 LUFS gate (silence, or
/// shorter than one 400 ms block) has no integrated loudness, reported as `nil`, never −∞ or −70.
public final class LoudnessMeter {
    public struct Config: Sendable, Hashable, Codable {
        /// Also measure true peak (4× oversampled); it costs noticeably more.
        public var truePeak = false
        public init(truePeak: Bool = false) { self.truePeak = truePeak }
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
    private let state: UnsafeMutablePointer<ebur128_state>
    private let channels: Int
    private let sampleRate: Int
    /// Frames in libebur128's 100 ms block.
    private let blockFrames: Int
    private var framesToBlockEnd: Int
    private var gating = LoudnessGating()
    private var envelope = LoudnessEnvelope()
    /// The track's integrated loudness and range come from libebur128's own gating.
    private let gatingInLibrary: Bool
    private let measuresSamplePeak: Bool
    private var peak: Float = 0

    /// With `measuresSamplePeak` false, `process` skips the peak scan and `finish` reports the peak
    /// it is given.
    public convenience init(config: Config, sampleRate: Int, layout: [ChannelPosition], measuresSamplePeak: Bool = true) throws {
        // libebur128 rounds its 100 ms block to (rate + 5) / 10 frames but truncates a 100 ms window.
        let gatesHere = (sampleRate + 5) / 10 == sampleRate / 10
        try self.init(config: config, sampleRate: sampleRate, layout: layout, gatingInLibrary: !gatesHere,
                      measuresSamplePeak: measuresSamplePeak)
    }

    /// `gatingInLibrary` uses libebur128's own I and LRA modes (the reference the tests compare with).
    init(config: Config, sampleRate: Int, layout: [ChannelPosition], gatingInLibrary: Bool, measuresSamplePeak: Bool = true) throws {
        self.config = config
        self.measuresSamplePeak = measuresSamplePeak
        channels = layout.count
        self.sampleRate = sampleRate
        self.gatingInLibrary = gatingInLibrary
        let gatesHere = !gatingInLibrary
        var mode = gatesHere ? Int32(EBUR128_MODE_M.rawValue) : Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue)
        if config.truePeak { mode |= Int32(EBUR128_MODE_TRUE_PEAK.rawValue) }
        guard channels > 0, sampleRate > 0, let st = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
            throw LoudnessError.unsupported(sampleRate: sampleRate, channels: layout.count)
        }
        state = st
        blockFrames = (sampleRate + 5) / 10
        framesToBlockEnd = blockFrames
        for (index, position) in layout.enumerated() {
            ebur128_set_channel(st, UInt32(index), Int32(Self.bs1770Channel(position).rawValue))
        }
    }

    deinit {
        var st: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&st)
    }

    /// BS.1770 weights: L/R/C 1.0, surrounds 1.41 (≈ +1.5 dB), LFE excluded.
    static func bs1770Channel(_ position: ChannelPosition) -> channel {
        switch position {
        case .mono, .left, .other: return EBUR128_LEFT
        case .right: return EBUR128_RIGHT
        case .center: return EBUR128_CENTER
        case .lfe: return EBUR128_UNUSED
        case .leftSurround, .leftBack: return EBUR128_LEFT_SURROUND
        case .rightSurround, .rightBack: return EBUR128_RIGHT_SURROUND
        }
    }

    public func process(_ block: AudioBlock) {
        if measuresSamplePeak { peak = max(peak, PeakScan.maxAbs(block.samples, count: block.frameCount * channels)) }
        // Feed up to each 100 ms boundary, then read that block's energy.
        var offset = 0
        while offset < block.frameCount {
            let n = min(framesToBlockEnd, block.frameCount - offset)
            ebur128_add_frames_float(state, block.samples + offset * channels, n)
            offset += n
            framesToBlockEnd -= n
            if framesToBlockEnd == 0 {
                framesToBlockEnd = blockFrames
                var loudness = -Double.infinity
                ebur128_loudness_window(state, 100, &loudness)
                gating.add(energy: loudness.isFinite ? LoudnessGating.energy(loudness: loudness) : 0)
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
        if !gatingInLibrary {
            result.integratedLUFS = gating.integratedLoudness()
            if result.integratedLUFS != nil { result.loudnessRange = gating.loudnessRange() }
        } else {
            var value = 0.0
            if ebur128_loudness_global(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite {
                result.integratedLUFS = value
            }
            if result.integratedLUFS != nil, ebur128_loudness_range(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite {
                result.loudnessRange = value
            }
        }
        if result.integratedLUFS != nil, !gating.momentaryBlocks.isEmpty {
            result.histogram = LoudnessHistogram(blockEnergies: gating.momentaryBlocks)
        }
        if peak > 0, peak.isFinite { result.samplePeakDB = 20 * log10(Double(peak)) }
        if config.truePeak {
            var truePeak = Double(peak)
            for c in 0..<channels {
                var p = 0.0
                if ebur128_true_peak(state, UInt32(c), &p) == EBUR128_SUCCESS.rawValue { truePeak = max(truePeak, p) }
            }
            if truePeak > 0, truePeak.isFinite { result.truePeakDB = 20 * log10(truePeak) }
        }
        return result
    }
}

public enum LoudnessError: Error, CustomStringConvertible {
    case unsupported(sampleRate: Int, channels: Int)

    public var description: String {
        switch self {
        case .unsupported(let rate, let channels):
            return "libebur128 cannot measure \(channels) channels at \(rate) Hz"
        }
    }
}
