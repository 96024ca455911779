/// The bound every decoded sample is held to: finite and within ±16 (+24 dBFS). NaN, an infinity or
/// a larger value is damage, not audio: the file is reported corrupt rather than measured, since one
/// such sample turns loudness, peak and gain into nonsense (a stored gain of −585 dB mutes a track in
/// any player) and a value beyond what an integer holds traps the first conversion that meets it.
/// Up to +24 dBFS is kept: floating-point masters may go above full scale, and their profile says so
/// (`loudness_note`). `SampleGate` applies it to every backend's output.
public enum SampleRange {
    public static let limit: Float = 16

    /// Throws `DecodeError.corrupt` naming the first offending sample (counted in samples, all
    /// channels, from the start of the stream) and its time. One vectorised pass; the search for
    /// the index only runs when the block fails.
    public static func check(_ samples: UnsafePointer<Float>, count: Int, firstSample: Int64,
                             channels: Int = 1, sampleRate: Int = 0, path: String) throws {
        guard !(PeakScan.maxAbs(samples, count: count) <= limit) else { return }
        for i in 0..<count where !(abs(samples[i]) <= limit) {
            let index = firstSample + Int64(i)
            let time = sampleRate > 0 ? " at \(Self.clock(Double(index / Int64(max(channels, 1))) / Double(sampleRate)))" : ""
            throw DecodeError.corrupt(path: path, reason: "sample \(index)\(time) is \(samples[i]): decoded audio must be finite and within ±\(Int(limit)) (+24 dBFS)")
        }
    }

    private static func clock(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded(.down))
        return "\(tenths / 600):\(tenths / 10 % 60 < 10 ? "0" : "")\(tenths / 10 % 60).\(tenths % 10)"
    }
}
