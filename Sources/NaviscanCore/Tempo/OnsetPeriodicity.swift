/// What the tempo estimator needs from a track's onset envelopes, gathered hop by hop in memory that
/// does not grow with the track (a 3-hour mix costs what a 3-minute song does):
/// - per region (full band = low + mid + high, then low, mid, high), the autocorrelation of the
///   envelope after `PeakEmphasis` (a 1 s moving mean removed, positive peaks kept);
/// - a histogram of the emphasised full-band values, in quarter octaves (for their percentiles);
/// - the emphasised full-band, low-band and high-band envelopes from the first onset on, for the beat
///   tracker, one byte per hop each (`BeatEnvelope`: 1/8-octave steps, 540 kB per hour of audio for
///   the three) up to `beatTrackingFrames` hops: the one part that grows with the track, and it is
///   capped;
/// - the emphasised mid-band envelope over the first `levelFrames` hops of those (13 kB), for the
///   beatless test of `MetricalLevel`.
public final class OnsetPeriodicity {
    public struct Summary {
        public var frameRate: Double
        public var frameCount: Int
        /// Autocorrelations (lags 0…maxLag) of the full, low, mid and high regions; nil for a constant region.
        public var autocorrelations: [[Double]?]
        /// Counts of the emphasised full-band values v: bin 0 holds v < 2^(−10), bin k (1…80)
        /// 2^((k − 41)/4) ≤ v < 2^((k − 40)/4), bin 81 the rest.
        public var strengthHistogram: [Int]
        /// Hop index of the first value of `beatEnvelope`, `lowBeatEnvelope` and `highBeatEnvelope`.
        public var beatStart: Int
        /// The emphasised full-band envelope from the first onset on, quantised (`BeatEnvelope.code`).
        public var beatEnvelope: [UInt8]
        /// The emphasised low-band envelope over the same hops, quantised.
        public var lowBeatEnvelope: [UInt8]
        /// The emphasised high-band envelope over the same hops, quantised.
        public var highBeatEnvelope: [UInt8]
        /// The emphasised mid-band envelope over the first hops of those (at most `levelFrames`), quantised.
        public var midBeatEnvelope: [UInt8] = []
        /// The band levels in 50 ms blocks from hop 0, for the bar lines (`OnsetEnvelope` fills them in).
        public var bandLevels: BandLevels.Summary = .empty

        /// How many emphasised full-band values are at least `2^(quarterOctaves/4)`.
        public func framesReaching(quarterOctaves q: Int) -> Int {
            let first = max(0, min(strengthHistogram.count, q + 41))
            return strengthHistogram[first...].reduce(0, +)
        }
    }

    public let frameRate: Double
    public let maxLag: Int
    /// One per region (full, low, mid, high): four properties, not an array, so the per-hop path
    /// touches no reference counts.
    private let fullEmphasis: PeakEmphasis
    private let lowEmphasis: PeakEmphasis
    private let midEmphasis: PeakEmphasis
    private let highEmphasis: PeakEmphasis
    private let correlations: [StreamingAutocorrelation]
    private var frameCount = 0
    private var strengthHistogram = [Int](repeating: 0, count: 82)
    private var emitted = 0
    private var beatStart: Int?
    private var beatEnvelope: [UInt8] = []
    private var lowBeatEnvelope: [UInt8] = []
    private var highBeatEnvelope: [UInt8] = []
    private var midBeatEnvelope: [UInt8] = []
    private let beatCapacity: Int
    private let midCapacity: Int

    public init(frameRate: Double, maxLag: Int, beatTrackingFrames: Int) {
        self.frameRate = frameRate
        self.maxLag = maxLag
        let half = max(1, Int(frameRate * 0.5))
        fullEmphasis = PeakEmphasis(half: half)
        lowEmphasis = PeakEmphasis(half: half)
        midEmphasis = PeakEmphasis(half: half)
        highEmphasis = PeakEmphasis(half: half)
        correlations = (0..<4).map { _ in StreamingAutocorrelation(maxLag: maxLag) }
        beatCapacity = beatTrackingFrames
        midCapacity = min(beatTrackingFrames, Self.levelFrames(frameRate: frameRate))
        // Ten minutes up front; longer tracks grow the arrays a few times in all.
        beatEnvelope.reserveCapacity(min(beatCapacity, Int(frameRate * 600)))
        lowBeatEnvelope.reserveCapacity(min(beatCapacity, Int(frameRate * 600)))
        highBeatEnvelope.reserveCapacity(min(beatCapacity, Int(frameRate * 600)))
        midBeatEnvelope.reserveCapacity(midCapacity)
    }

    /// How many hops of the mid-band envelope are kept: `MetricalLevel.seconds` and 10 s more, for
    /// hops from the first onset whose code is still 0.
    static func levelFrames(frameRate: Double) -> Int { Int(frameRate * (MetricalLevel.seconds + 10)) }

    public func append(low: Float, mid: Float, high: Float) {
        frameCount += 1
        let l = Double(low), m = Double(mid), h = Double(high)
        fullEmphasis.append(l + m + h) { take(0, $0) }
        lowEmphasis.append(l) { take(1, $0) }
        midEmphasis.append(m) { take(2, $0) }
        highEmphasis.append(h) { take(3, $0) }
    }

    /// Every hop's full-band value arrives before its low-, mid- and high-band ones (`append` and
    /// `finish` keep that order), so those envelopes follow the full one hop for hop.
    private func take(_ region: Int, _ y: Double) {
        correlations[region].append(y)
        switch region {
        case 1: follow(&lowBeatEnvelope, y); return
        case 2: if midBeatEnvelope.count < midCapacity { follow(&midBeatEnvelope, y) }; return
        case 3: follow(&highBeatEnvelope, y); return
        default: break
        }
        strengthHistogram[Self.histogramBin(y)] += 1
        if beatStart == nil, y > 0 { beatStart = emitted }
        if beatStart != nil, beatEnvelope.count < beatCapacity { beatEnvelope.append(BeatEnvelope.code(y)) }
        emitted += 1
    }

    /// Appends `y` to an envelope that follows the full-band one, while it is shorter.
    private func follow(_ envelope: inout [UInt8], _ y: Double) {
        if envelope.count < beatEnvelope.count { envelope.append(BeatEnvelope.code(y)) }
    }

    public func finish() -> Summary {
        for (region, emphasis) in [fullEmphasis, lowEmphasis, midEmphasis, highEmphasis].enumerated() {
            emphasis.finish { take(region, $0) }
        }
        return Summary(frameRate: frameRate, frameCount: frameCount,
                       autocorrelations: correlations.map { $0.finish() }, strengthHistogram: strengthHistogram,
                       beatStart: beatStart ?? 0, beatEnvelope: beatEnvelope, lowBeatEnvelope: lowBeatEnvelope,
                       highBeatEnvelope: highBeatEnvelope, midBeatEnvelope: midBeatEnvelope)
    }

    /// Quarter-octave bin of v (see `Summary.strengthHistogram`); exact at the bin edges.
    @inline(__always)
    static func histogramBin(_ v: Double) -> Int {
        guard v >= 0x1p-10 else { return 0 }
        guard v < 0x1p10 else { return 81 }
        let e = v.exponent                    // 2^e ≤ v < 2^(e+1)
        let m = v.significand                 // 1 ≤ m < 2
        let quarter = m < 1.4142135623730951 ? (m < 1.189207115002721 ? 0 : 1) : (m < 1.681792830507429 ? 2 : 3)
        return Int(e) * 4 + quarter + 41
    }
}
