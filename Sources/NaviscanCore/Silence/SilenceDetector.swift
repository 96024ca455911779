import Foundation

/// Leading and trailing silence from the native-rate stream, on the peak across channels.
///
/// - `silenceEnd`: where the LEADING silence ends: the first sample whose absolute value, on any
///   channel, exceeds the threshold (the seek-to point).
/// - `silenceStart`: where the TRAILING silence begins: one sample past the last sample above the
///   threshold, i.e. where a fade-out drops below it for good (the crossfade trigger).
/// Both are seconds from the first decoded sample; sample-exact on clean silence.
///
/// A noise floor (tape hiss, a noisy room) whose peaks reach the threshold would otherwise end the
/// "silence" at its first spike. So the first and last 200 ms are checked: if their 10 ms peaks are
/// steady (within 8 dB, no trend, never digital zero) and sit within 6 dB of the threshold, and either
/// sit at the track's quietest level or match a steady floor at the other end (a floor is under every
/// quiet stretch; a quiet intro is louder than it), they are a noise floor. That edge is then found on the 10 ms peaks median-filtered over
/// 50 ms (isolated noise spikes vanish), against the threshold or the floor's median + 4 dB, whichever
/// is higher, at 10 ms resolution (the middle of the first/last window above it). A decaying tail is not steady, and a
/// fade into digital silence has zero windows, so neither is mistaken for noise.
/// Memory: one 2-byte peak per 10 ms (200 bytes per second of audio).
public final class SilenceDetector {
    /// The silence stage's version: bump it when the edges or the sample peak change.
    public static let version = 1

    public struct Config: Sendable, Hashable, Codable {
        public var thresholdDB: Double = -60
        public init(thresholdDB: Double = -60) { self.thresholdDB = thresholdDB }
    }

    public struct Result: Sendable, Equatable {
        /// End of the leading silence, seconds (0 when the track starts with sound or is all silence).
        public var silenceEnd: Double
        /// Start of the trailing silence, seconds (the duration when the sound runs to the end; 0 when all silence).
        public var silenceStart: Double
        /// True when no sample exceeds the threshold.
        public var allSilent: Bool
        /// Largest absolute sample value on any channel (0 for digital silence): the detector reads
        /// every sample's magnitude anyway, so the loudness stage can take its sample peak from here.
        public var samplePeak: Float
    }

    public let config: Config
    private let sampleRate: Int
    private let channels: Int
    private let threshold: Float
    private let windowLength: Int
    /// Peak of each complete 10 ms window, as UInt16 (dB + 200) × 100; 0 for digital silence.
    private var windowPeaks: [UInt16] = []
    private var currentPeak: Float = 0
    private var samplePeak: Float = 0
    private var currentFill = 0
    private var position: Int64 = 0
    private var firstAbove: Int64 = -1
    private var lastAbove: Int64 = -1

    static let edgeWindows = 20
    /// A noise floor's 10 ms peaks stay within this spread…
    static let noiseSpreadDB: Float = 8
    /// …its two halves within this of each other (no decay or swell)…
    static let noiseTrendDB: Float = 2.5
    /// …and its median within this of the track's quietest windows (2nd percentile).
    static let noiseFloorMatchDB: Float = 3
    /// Floors further than this below the threshold cannot cross it and are ignored.
    static let noiseReachDB: Float = 6
    static let noiseMarginDB: Float = 4
    static let smoothingWindows = 5

    public init(config: Config, sampleRate: Int, channels: Int) {
        self.config = config
        self.sampleRate = sampleRate
        self.channels = channels
        threshold = Float(pow(10, config.thresholdDB / 20))
        windowLength = max(1, sampleRate / 100)
        windowPeaks.reserveCapacity(100 * 600)
    }

    public func process(_ block: AudioBlock) {
        let src = block.samples
        var frame = 0
        while frame < block.frameCount {
            let n = min(windowLength - currentFill, block.frameCount - frame)
            let base = src + frame * channels
            let count = n * channels
            let stretchPeak = PeakScan.maxAbs(base, count: count)
            let peak = max(currentPeak, stretchPeak)
            if stretchPeak > threshold {
                // Find the exact first/last samples above the threshold in this stretch.
                if firstAbove < 0 {
                    for i in 0..<count where abs(base[i]) > threshold {
                        firstAbove = position + Int64(frame + i / channels)
                        break
                    }
                }
                var i = count - 1
                while i >= 0 {
                    if abs(base[i]) > threshold {
                        lastAbove = max(lastAbove, position + Int64(frame + i / channels))
                        break
                    }
                    i -= 1
                }
            }
            currentPeak = peak
            samplePeak = max(samplePeak, stretchPeak)
            currentFill += n
            frame += n
            if currentFill == windowLength {
                windowPeaks.append(Self.quantize(currentPeak))
                currentPeak = 0
                currentFill = 0
            }
        }
        position += Int64(block.frameCount)
    }

    static func quantize(_ peak: Float) -> UInt16 {
        guard peak > 0 else { return 0 }
        let db = 20 * log10(peak)
        return UInt16(clamping: max(1, Int(saturating: ((db + 200) * 100).rounded())))
    }

    static func decibels(_ q: UInt16) -> Float { q == 0 ? -.infinity : Float(q) / 100 - 200 }

    public func finish() -> Result {
        if currentFill > 0 { windowPeaks.append(Self.quantize(currentPeak)) }
        let rate = Double(sampleRate)
        guard firstAbove >= 0 else { return Result(silenceEnd: 0, silenceStart: 0, allSilent: true, samplePeak: samplePeak) }
        let windowSeconds = Double(windowLength) / rate
        let thresholdDB = Float(config.thresholdDB)
        let floorDB = quietestLevel()

        var silenceEnd = Double(firstAbove) / rate
        let lead = steadyEdge(windowPeaks.prefix(Self.edgeWindows), thresholdDB: thresholdDB)
        let trail = steadyEdge(windowPeaks.suffix(Self.edgeWindows), thresholdDB: thresholdDB)
        // A floor is confirmed by sitting at the track's quietest level, or by the other end showing the same floor.
        func gate(_ edge: Float?, other: Float?) -> Float? {
            guard let edge else { return nil }
            let matchesOther = other.map { abs($0 - edge) <= Self.noiseFloorMatchDB } ?? false
            guard edge <= floorDB + Self.noiseFloorMatchDB || matchesOther else { return nil }
            return max(thresholdDB, edge + Self.noiseMarginDB)
        }
        let leadGate = gate(lead, other: trail)
        let trailGate = gate(trail, other: lead)
        let smoothed = (leadGate ?? trailGate) != nil ? medianFiltered() : []
        if let gate = leadGate, let w = smoothed.firstIndex(where: { $0 > gate }) {
            silenceEnd = (Double(w) + 0.5) * windowSeconds
        }
        var silenceStart = Double(lastAbove + 1) / rate
        if let gate = trailGate, let w = smoothed.lastIndex(where: { $0 > gate }) {
            silenceStart = min((Double(w) + 0.5) * windowSeconds, Double(position) / rate)
        }
        if silenceStart < silenceEnd { silenceStart = silenceEnd }
        return Result(silenceEnd: silenceEnd, silenceStart: silenceStart, allSilent: false, samplePeak: samplePeak)
    }

    /// Window levels in dB after a running median over `smoothingWindows` windows.
    private func medianFiltered() -> [Float] {
        let half = Self.smoothingWindows / 2
        var scratch = [Float](repeating: 0, count: Self.smoothingWindows)
        var out = [Float](repeating: 0, count: windowPeaks.count)
        for i in windowPeaks.indices {
            let lo = max(0, i - half), hi = min(windowPeaks.count, i + half + 1)
            // Insertion sort of at most five values, in place: no allocation per window.
            for j in lo..<hi {
                let v = Self.decibels(windowPeaks[j])
                var k = j - lo
                while k > 0 && scratch[k - 1] > v { scratch[k] = scratch[k - 1]; k -= 1 }
                scratch[k] = v
            }
            out[i] = scratch[(hi - lo) / 2]
        }
        return out
    }

    /// 2nd percentile of the non-zero window peaks, in dB: the level of the quietest stretches.
    private func quietestLevel() -> Float {
        let nonZero = windowPeaks.filter { $0 != 0 }.sorted()
        guard !nonZero.isEmpty else { return -.infinity }
        return Self.decibels(nonZero[nonZero.count / 50])
    }

    /// The median level of an edge that looks like a noise floor (steady, never digital zero, within
    /// reach of the threshold), or nil.
    private func steadyEdge(_ edge: ArraySlice<UInt16>, thresholdDB: Float) -> Float? {
        guard edge.count == Self.edgeWindows, !edge.contains(0) else { return nil }
        let levels = edge.map(Self.decibels)
        let loudest = levels.max()!, quietest = levels.min()!
        let half = levels.count / 2
        let firstHalf = levels[..<half].reduce(0, +) / Float(half)
        let secondHalf = levels[half...].reduce(0, +) / Float(levels.count - half)
        let median = levels.sorted()[levels.count / 2]
        // A floor is quiet: near the threshold, not a steady loud sound that opens or ends the track.
        guard loudest > thresholdDB - Self.noiseReachDB, median < thresholdDB + Self.noiseReachDB,
              loudest - quietest <= Self.noiseSpreadDB,
              abs(firstHalf - secondHalf) <= Self.noiseTrendDB else { return nil }
        return median
    }
}
