import CEbur128
import NaviscanCore

/// libebur128 itself, as the reference loudness tests compare naviscan's measurements with.
public enum LoudnessReference {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// libebur128's integrated loudness and loudness range (its I and LRA modes) of a signal fed in
    /// blocks of `blockFrames`, with BS.1770's channel weights for `layout`; nil where libebur128
    /// reports no finite value.
    public static func loudness(_ signal: TestSignal, layout: [ChannelPosition], blockFrames: Int = 4096) throws
        -> (integrated: Double?, range: Double?) {
        let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue)
        guard let state = ebur128_init(UInt32(signal.channels), UInt(signal.sampleRate), mode) else {
            throw Failure(description: "libebur128 refused \(signal.channels) channels at \(signal.sampleRate) Hz")
        }
        defer { var st: UnsafeMutablePointer<ebur128_state>? = state; ebur128_destroy(&st) }
        for (index, position) in layout.enumerated() {
            ebur128_set_channel(state, UInt32(index), Int32(channel(position).rawValue))
        }
        signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: signal.frameCount, by: blockFrames) {
                _ = ebur128_add_frames_float(state, all.baseAddress! + start * signal.channels, min(blockFrames, signal.frameCount - start))
            }
        }
        var integrated = 0.0, range = 0.0
        let hasIntegrated = ebur128_loudness_global(state, &integrated) == EBUR128_SUCCESS.rawValue && integrated.isFinite
        let hasRange = ebur128_loudness_range(state, &range) == EBUR128_SUCCESS.rawValue && range.isFinite
        return (hasIntegrated ? integrated : nil, hasRange ? range : nil)
    }

    /// libebur128's true peak (its TRUE_PEAK mode) over every channel, linear, fed in blocks of `blockFrames`.
    public static func truePeak(_ signal: TestSignal, blockFrames: Int = 4096) throws -> Double {
        guard let state = ebur128_init(UInt32(signal.channels), UInt(signal.sampleRate), Int32(EBUR128_MODE_TRUE_PEAK.rawValue)) else {
            throw Failure(description: "libebur128 refused \(signal.channels) channels at \(signal.sampleRate) Hz")
        }
        defer { var st: UnsafeMutablePointer<ebur128_state>? = state; ebur128_destroy(&st) }
        signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: signal.frameCount, by: blockFrames) {
                _ = ebur128_add_frames_float(state, all.baseAddress! + start * signal.channels, min(blockFrames, signal.frameCount - start))
            }
        }
        var peak = 0.0
        for c in 0..<signal.channels {
            var p = 0.0
            guard ebur128_true_peak(state, UInt32(c), &p) == EBUR128_SUCCESS.rawValue else { throw Failure(description: "ebur128_true_peak failed") }
            peak = max(peak, p)
        }
        return peak
    }

    static func channel(_ position: ChannelPosition) -> channel {
        switch position {
        case .mono, .left, .other: return EBUR128_LEFT
        case .right: return EBUR128_RIGHT
        case .center: return EBUR128_CENTER
        case .lfe: return EBUR128_UNUSED
        case .leftSurround, .leftBack: return EBUR128_LEFT_SURROUND
        case .rightSurround, .rightBack: return EBUR128_RIGHT_SURROUND
        }
    }

    /// The integrated loudness of several tracks gated together (`ebur128_loudness_global_multiple`),
    /// each fed whole to its own state at its own rate; channels are taken as L, R (mono: L).
    public static func albumLoudness(_ signals: [TestSignal]) throws -> Double {
        var states: [UnsafeMutablePointer<ebur128_state>?] = signals.map { signal in
            let state = ebur128_init(UInt32(signal.channels), UInt(signal.sampleRate), Int32(EBUR128_MODE_I.rawValue))
            signal.samples.withUnsafeBufferPointer { _ = ebur128_add_frames_float(state, $0.baseAddress, signal.frameCount) }
            return state
        }
        defer { for k in states.indices { ebur128_destroy(&states[k]) } }
        guard !states.contains(where: { $0 == nil }) else { throw Failure(description: "libebur128 refused a signal's rate or channels") }
        var loudness = 0.0
        guard ebur128_loudness_global_multiple(&states, states.count, &loudness) == EBUR128_SUCCESS.rawValue else {
            throw Failure(description: "ebur128_loudness_global_multiple failed")
        }
        return loudness
    }
}
