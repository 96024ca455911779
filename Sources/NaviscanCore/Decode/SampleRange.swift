/// The rule for floating-point sources (float WAV/AIFF, and any backend that hands out samples it
/// did not produce from integers): a sample must be finite and within ±16 (+24 dBFS). NaN, an
/// infinity or a larger value is damage, not audio: the file is reported corrupt rather than
/// measured, since one such sample turns loudness, peak and gain into nonsense (a stored gain of
/// −585 dB mutes a track in any player). Up to +24 dBFS is kept: floating-point masters may go
/// above full scale, and their profile says so (`loudness_note`).
public enum SampleRange {
    public static let limit: Float = 16

    /// Throws `DecodeError.corrupt` naming the first offending sample. One vectorised pass; the
    /// search for the index only runs when the block fails.
    public static func check(_ samples: UnsafePointer<Float>, count: Int, firstSample: Int64, path: String) throws {
        guard PeakScan.maxAbs(samples, count: count) > limit else { return }
        for i in 0..<count where !(abs(samples[i]) <= limit) {
            throw DecodeError.corrupt(path: path, reason: "sample \(firstSample + Int64(i)) is \(samples[i]): floating-point audio must be finite and within ±\(Int(limit)) (+24 dBFS)")
        }
    }
}
