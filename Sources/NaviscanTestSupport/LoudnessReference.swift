import CEbur128

/// libebur128 itself, as the reference loudness tests compare naviscan's measurements with.
public enum LoudnessReference {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
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
