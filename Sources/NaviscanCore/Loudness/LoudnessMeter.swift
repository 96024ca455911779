import Foundation

import CEbur128

/// EBU R128 / ITU-R BS.1770 loudness through libebur128, fed the native-rate stream with every
/// channel (never a downmix, never resampled, never an excerpt).
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
        /// Loudness range in LU (EBU Tech 3342); nil when undefined.
        public var loudnessRange: Double?
        /// Highest absolute sample value in dBFS; nil for digital silence.
        public var samplePeakDB: Double?
        /// True peak in dBTP when measured; nil otherwise.
        public var truePeakDB: Double?
    }

    public let config: Config
    private let state: UnsafeMutablePointer<ebur128_state>
    private let channels: Int

    public init(config: Config, sampleRate: Int, layout: [ChannelPosition]) throws {
        self.config = config
        channels = layout.count
        var mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue | EBUR128_MODE_SAMPLE_PEAK.rawValue)
        if config.truePeak { mode |= Int32(EBUR128_MODE_TRUE_PEAK.rawValue) }
        guard channels > 0, let st = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else {
            throw LoudnessError.unsupported(sampleRate: sampleRate, channels: channels)
        }
        state = st
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
        ebur128_add_frames_float(state, block.samples, block.frameCount)
    }

    public func finish() -> Result {
        var result = Result()
        var value = 0.0
        if ebur128_loudness_global(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite {
            result.integratedLUFS = value
        }
        if result.integratedLUFS != nil, ebur128_loudness_range(state, &value) == EBUR128_SUCCESS.rawValue, value.isFinite {
            result.loudnessRange = value
        }
        var peak = 0.0
        for c in 0..<channels {
            var p = 0.0
            if ebur128_sample_peak(state, UInt32(c), &p) == EBUR128_SUCCESS.rawValue { peak = max(peak, p) }
        }
        if peak > 0 { result.samplePeakDB = 20 * log10(peak) }
        if config.truePeak {
            var truePeak = 0.0
            for c in 0..<channels {
                var p = 0.0
                if ebur128_true_peak(state, UInt32(c), &p) == EBUR128_SUCCESS.rawValue { truePeak = max(truePeak, p) }
            }
            if truePeak > 0 { result.truePeakDB = 20 * log10(truePeak) }
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
