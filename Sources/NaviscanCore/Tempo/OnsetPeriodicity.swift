/// What the tempo estimator needs from a track's onset envelopes, gathered hop by hop in memory that
/// does not grow with the track (a 3-hour mix costs what a 3-minute song does):
/// - per region (full band = low + mid + high, then low, mid, high), the autocorrelation of the
///   envelope after `PeakEmphasis` (a 1 s moving mean removed, positive peaks kept);
/// - how many emphasised full-band values fall below the onset-strength floor (for its percentile);
/// - the emphasised full-band envelope from the first onset on, for `phaseSeconds`, to place the beat.
public final class OnsetPeriodicity {
    public struct Summary {
        public var frameRate: Double
        public var frameCount: Int
        /// Autocorrelations (lags 0…maxLag) of the full, low, mid and high regions; nil for a constant region.
        public var autocorrelations: [[Double]?]
        /// Emphasised full-band values below `strongOnset`.
        public var weakFrames: Int
        /// Hop index of `phaseEnvelope[0]`.
        public var phaseStart: Int
        public var phaseEnvelope: [Double]
    }

    static let phaseSeconds = 120.0
    public let frameRate: Double
    public let maxLag: Int
    public let strongOnset: Double
    /// One per region (full, low, mid, high): four properties, not an array, so the per-hop path
    /// touches no reference counts.
    private let fullEmphasis: PeakEmphasis
    private let lowEmphasis: PeakEmphasis
    private let midEmphasis: PeakEmphasis
    private let highEmphasis: PeakEmphasis
    private let correlations: [StreamingAutocorrelation]
    private var frameCount = 0
    private var weakFrames = 0
    private var emitted = 0
    private var phaseStart: Int?
    private var phaseEnvelope: [Double] = []
    private let phaseCapacity: Int

    public init(frameRate: Double, maxLag: Int, strongOnset: Double) {
        self.frameRate = frameRate
        self.maxLag = maxLag
        self.strongOnset = strongOnset
        let half = max(1, Int(frameRate * 0.5))
        fullEmphasis = PeakEmphasis(half: half)
        lowEmphasis = PeakEmphasis(half: half)
        midEmphasis = PeakEmphasis(half: half)
        highEmphasis = PeakEmphasis(half: half)
        correlations = (0..<4).map { _ in StreamingAutocorrelation(maxLag: maxLag) }
        phaseCapacity = Int(frameRate * Self.phaseSeconds)
        phaseEnvelope.reserveCapacity(phaseCapacity)
    }

    public func append(low: Float, mid: Float, high: Float) {
        frameCount += 1
        let l = Double(low), m = Double(mid), h = Double(high)
        fullEmphasis.append(l + m + h) { take(0, $0) }
        lowEmphasis.append(l) { take(1, $0) }
        midEmphasis.append(m) { take(2, $0) }
        highEmphasis.append(h) { take(3, $0) }
    }

    private func take(_ region: Int, _ y: Double) {
        correlations[region].append(y)
        guard region == 0 else { return }
        if y < strongOnset { weakFrames += 1 }
        if phaseStart == nil, y > 0 { phaseStart = emitted }
        if phaseStart != nil, phaseEnvelope.count < phaseCapacity { phaseEnvelope.append(y) }
        emitted += 1
    }

    public func finish() -> Summary {
        for (region, emphasis) in [fullEmphasis, lowEmphasis, midEmphasis, highEmphasis].enumerated() {
            emphasis.finish { take(region, $0) }
        }
        return Summary(frameRate: frameRate, frameCount: frameCount,
                       autocorrelations: correlations.map { $0.finish() }, weakFrames: weakFrames,
                       phaseStart: phaseStart ?? 0, phaseEnvelope: phaseEnvelope)
    }
}
