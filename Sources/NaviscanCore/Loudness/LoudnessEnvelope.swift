import Foundation

/// Momentary loudness (400 ms blocks, one every 100 ms) over a track's first and last `seconds`,
/// kept in fixed storage whatever the track's length: the start as it comes, the end in a ring.
struct LoudnessEnvelope {
    static let blockSeconds = 0.1
    let capacity: Int
    private var start: [Double]
    private var ring: [Double]
    private var count = 0

    init(seconds: Double = 30) {
        capacity = Int(seconds / Self.blockSeconds)
        start = []
        start.reserveCapacity(capacity)
        ring = [Double](repeating: 0, count: capacity)
    }

    /// The next 400 ms block's energy.
    mutating func add(energy: Double) {
        let lufs = energy > 0 ? LoudnessGating.loudness(energy: energy) : -Double.infinity
        if start.count < capacity { start.append(lufs) }
        ring[count % capacity] = lufs
        count += 1
    }

    func finish() -> Summary {
        let n = min(count, capacity)
        let end = (0..<n).map { ring[(count - n + $0) % capacity] }
        return Summary(start: start, end: end, blockCount: count)
    }

    /// LUFS of each block (−∞ for digital silence). Block k of the track is centred on
    /// 0.2 + 0.1 k seconds.
    struct Summary: Sendable, Equatable {
        var start: [Double]
        var end: [Double]
        var blockCount: Int

        static func centre(ofBlock k: Int) -> Double { 0.2 + Double(k) * LoudnessEnvelope.blockSeconds }
    }
}

/// MixRamp start and end ramps and the kind of the track's ending, from its loudness envelope.
public struct CrossfadeRamps: Sendable, Equatable {
    /// `"dB seconds;…"`: for each level (momentary LUFS, from −60 up in 3 dB steps) the first time
    /// the track reaches it, in seconds from the start.
    public var startRamp: String?
    /// The same for the end: for each level the time before the end at which the track is above it
    /// for the last time.
    public var endRamp: String?
    public enum Outro: String, Sendable, Codable { case fadeOut = "fade_out", coldEnd = "cold_end", silenceTail = "silence_tail" }
    public var outro: Outro?
    /// Seconds from the start where the music falls for good below `audibleLevel`.
    public var audibleEnd: Double?

    /// Audible means within this many LU of the track's integrated loudness.
    public static let audibleRange = 20.0
    /// Trailing silence (below the silence threshold, from `silence_start`) this long is a silence
    /// tail (a hidden track, a long pause).
    public static let silenceTailSeconds = 5.0
    /// Loud at the end: the last second reaches within this many LU of the integrated loudness.
    public static let coldEndRange = 8.0
    static let levels = Array(stride(from: -60.0, through: 0, by: 3))

    /// `silenceStart`: where the trailing silence begins (the silence detector's edge).
    init(envelope: LoudnessEnvelope.Summary, integratedLUFS: Double?, duration: Double, silenceStart: Double) {
        guard let integratedLUFS, envelope.blockCount > 0 else { return }
        func ramp(_ pairs: [(Double, Double)]) -> String? {
            pairs.isEmpty ? nil : pairs.map { CFormat.string("%.2f %.2f", $0.0, $0.1) }.joined(separator: ";")
        }
        var startPairs: [(Double, Double)] = []
        for level in Self.levels {
            guard let k = envelope.start.firstIndex(where: { $0 >= level }) else { break }
            startPairs.append((level, LoudnessEnvelope.Summary.centre(ofBlock: k)))
        }
        let firstEndBlock = envelope.blockCount - envelope.end.count
        var endPairs: [(Double, Double)] = []
        for level in Self.levels {
            guard let k = envelope.end.lastIndex(where: { $0 >= level }) else { break }
            endPairs.append((level, max(0, duration - LoudnessEnvelope.Summary.centre(ofBlock: firstEndBlock + k))))
        }
        startRamp = ramp(startPairs)
        endRamp = ramp(endPairs)

        let audible = integratedLUFS - Self.audibleRange
        guard let last = envelope.end.lastIndex(where: { $0 >= audible }) else { return }
        // The last block above the level that holds any music ends 300 ms after that music.
        let end = min(duration, LoudnessEnvelope.Summary.centre(ofBlock: firstEndBlock + last) - 0.1)
        audibleEnd = (end * 1000).rounded() / 1000
        let lastSecond = envelope.end[max(0, last - 9)...last]
        if duration - silenceStart >= Self.silenceTailSeconds {
            outro = .silenceTail
        } else if lastSecond.max()! >= integratedLUFS - Self.coldEndRange {
            outro = .coldEnd
        } else {
            outro = .fadeOut
        }
    }
}
