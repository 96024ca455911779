import Foundation

/// The onset envelopes kept for beat tracking, one byte per hop: 0 for values below 2^−10, else
/// round(8·log2 v) + 80 clamped to 1…255 (1/8-octave steps, at most 4.4 % off; the range reaches
/// 2^21, far above any flux the front end makes).
public enum BeatEnvelope {
    @inline(__always)
    public static func code(_ v: Double) -> UInt8 {
        guard v >= 0x1p-10 else { return 0 }
        return UInt8(max(1, min(255, Int((8 * log2(v) + 0.5).rounded(.down)) + 80)))
    }

    /// The value table for the 256 codes.
    public static let values: [Float] = (0..<256).map { $0 == 0 ? 0 : Float(pow(2, (Double($0) - 80) / 8)) }

    public static func decode(_ codes: [UInt8]) -> [Float] {
        let table = values
        return codes.map { table[Int($0)] }
    }

    /// The largest value of an envelope (never negative) within `reach` hops of hop `h`, the window
    /// cut at the ends; 0 for a hop outside it. What a beat "collects" from onsets a hop or two off.
    static func peak<T: BinaryFloatingPoint>(_ v: [T], at h: Int, reach: Int) -> T {
        guard h + reach >= 0, h - reach < v.count else { return 0 }
        var p: T = 0
        for j in max(0, h - reach)...min(v.count - 1, h + reach) { p = max(p, v[j]) }
        return p
    }

    /// The (population) standard deviation of `v`; nil when `v` is constant or empty.
    static func standardDeviation<C: Collection>(_ v: C) -> Double? where C.Element: BinaryFloatingPoint {
        let n = Double(max(1, v.count))
        let mean = v.reduce(0.0) { $0 + Double($1) } / n
        let sd = (v.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / n).squareRoot()
        return sd > 0 ? sd : nil
    }

    /// `v` over its (population) standard deviation; nil when `v` is constant.
    static func standardised(_ v: [Double]) -> [Double]? {
        standardDeviation(v).map { sd in v.map { $0 / sd } }
    }
}

/// Beats by dynamic programming over an onset envelope (Ellis, "Beat tracking by dynamic programming",
/// 2007, as librosa's `beat_track` does it): the beat sequence that collects the most onset strength
/// while its intervals stay near the period. With L the envelope over its standard deviation,
/// lightly smoothed (a Gaussian of σ = period/32), the best score of a sequence ending in a beat at t is
///
///     C(t) = L(t) + max over τ ∈ [t − 2p, t − p/2] of C(τ) − α·ln((t − τ)/p)²
///
/// (a fresh start where no predecessor scores 0 or more). The last beat is the last local maximum of C
/// above half the median of its local maxima; the sequence is read back from there, and leading and
/// trailing beats weaker than half the RMS of the beats' local score are dropped (the fade-in, the
/// fade-out). Time is linear in the track (about 1.5·p operations per hop).
///
/// α = 400, four times the published tightness (librosa's 100): a beat 10 % off the period costs
/// 3.6, a few average onsets. It is the one data-chosen constant of the tracker, chosen between 100
/// and 400 on the seed-1 rendered grooves (mean F-measure 0.80 against 0.80, median 0.99 against
/// 0.98, fewer grids that drift through a breakdown); docs/profile-format.md has the held-out figures.
public struct BeatTracker {
    /// α, the weight of a beat's distance from the period.
    public static let tightness = 400.0

    public struct Result: Equatable {
        /// Beat positions in hops of the envelope, increasing, placed between hops by a parabola
        /// through the local score.
        public var beats: [Double]
        /// The mean of the envelope on the beats (its maximum within ±2 hops) over its mean
        /// everywhere, in [0, ∞).
        public var onBeatRatio: Double
    }

    private let envelope: [Float]
    private let local: [Double]

    /// `envelope`: the onset strength per hop.
    public init(envelope: [Float]) {
        self.envelope = envelope
        local = BeatEnvelope.standardised(envelope.map { Double($0) }) ?? []
    }

    /// The beat sequence for a beat period of `period` hops (≥ 2).
    public func track(period: Double) -> Result {
        let empty = Result(beats: [], onBeatRatio: 0)
        let n = local.count
        guard period >= 2, n > Int(2 * period) else { return empty }
        // Smoothed local score.
        let sigma = period / 32
        let reach = max(1, Int((3 * sigma).rounded(.up)))
        let kernel = (-reach...reach).map { exp(-0.5 * pow(Double($0) / max(sigma, 0.5), 2)) }
        var score = [Double](repeating: 0, count: n)
        for t in 0..<n {
            var s = 0.0
            for j in max(-reach, -t)...min(reach, n - 1 - t) { s += kernel[j + reach] * local[t + j] }
            score[t] = s
        }
        let (cumulative, back) = Self.cumulativeScore(score, period: period, tightness: Self.tightness)
        // The last beat: the last local maximum of C above half the median of the local maxima.
        var maxima: [Int] = []
        for t in 1..<(n - 1) where cumulative[t] > cumulative[t - 1] && cumulative[t] >= cumulative[t + 1] { maxima.append(t) }
        guard !maxima.isEmpty else { return empty }
        let sortedValues = maxima.map { cumulative[$0] }.sorted()
        let median = sortedValues[sortedValues.count / 2]
        guard let last = maxima.last(where: { cumulative[$0] > 0.5 * median }) else { return empty }
        let hops = Self.backtrace(back, from: last)
        // Trim weak beats at both ends: the local score smoothed over 5 hops (a Hann window), against
        // half the RMS over the beats.
        func smoothed(_ t: Int) -> Double {
            let w = [0.25, 0.75, 1, 0.75, 0.25]
            var s = 0.0
            for (i, weight) in w.enumerated() where t + i - 2 >= 0 && t + i - 2 < n { s += weight * score[t + i - 2] }
            return s
        }
        let strengths = hops.map(smoothed)
        let rms = (strengths.reduce(0) { $0 + $1 * $1 } / Double(max(1, strengths.count))).squareRoot()
        guard let first = strengths.firstIndex(where: { $0 >= 0.5 * rms }),
              let end = strengths.lastIndex(where: { $0 >= 0.5 * rms }) else { return empty }
        let kept = hops[first...end]
        let beats = kept.map { t -> Double in
            guard t > 0, t + 1 < n else { return Double(t) }
            let a = score[t - 1], b = score[t], c = score[t + 1]
            let denominator = a - 2 * b + c
            let offset = denominator < 0 ? max(-0.5, min(0.5, 0.5 * (a - c) / denominator)) : 0
            return Double(t) + offset
        }
        let onBeats = kept.reduce(0.0) { $0 + Double(BeatEnvelope.peak(envelope, at: $1, reach: 2)) }
        let everywhere = envelope.reduce(0.0) { $0 + Double($1) }
        let ratio = everywhere > 0 ? (onBeats / Double(kept.count)) / (everywhere / Double(n)) : 0
        return Result(beats: beats, onBeatRatio: ratio)
    }

    /// The dynamic programme: C(t) = x(t) + max over gaps d in [round(p/2), round(2p)] of
    /// C(t − d) − α·ln(d/p)², or C(t) = x(t) with no predecessor (−1) where that maximum is below 0;
    /// on equal values the shorter gap wins. It runs for every candidate tempo, so each hop's best
    /// predecessor is found four values at a time, in single precision (a score summed over six hours
    /// stays below a million, where a Float still tells apart values 0.06 apart).
    static func cumulativeScore(_ x: [Double], period p: Double, tightness: Double) -> (score: [Double], back: [Int]) {
        let n = x.count
        var c = [Float](repeating: 0, count: n)
        var back = [Int](repeating: -1, count: n)
        let shortest = max(1, Int((p / 2).rounded())), longest = Int((2 * p).rounded())
        guard n > 0, longest >= shortest else { return (x, back) }
        let input = x.map { Float($0) }
        // reversed[j] is the penalty of the predecessor τ = t − longest + j (gap longest − j), so each
        // hop's window is one contiguous run of C.
        let reversed = (0...(longest - shortest)).map { j -> Float in
            let r = log(Double(longest - j) / p)
            return Float(-tightness * r * r)
        }
        c.withUnsafeMutableBufferPointer { cBuffer in
            back.withUnsafeMutableBufferPointer { back in
                reversed.withUnsafeBufferPointer { rBuffer in
                    input.withUnsafeBufferPointer { x in
                        let c = cBuffer.baseAddress!, r = rBuffer.baseAddress!
                        for t in 0..<n {
                            let highest = t - shortest
                            guard highest >= 0 else { c[t] = x[t]; continue }
                            let lowest = max(0, t - longest)
                            let offset = lowest - (t - longest)
                            // Lane by lane and across lanes, the later τ (the shorter gap) wins ties.
                            var best4 = SIMD4<Float>(repeating: -.infinity)
                            var at4 = SIMD4<Int32>(repeating: -1)
                            var lanes = SIMD4<Int32>(0, 1, 2, 3) &+ Int32(lowest)
                            var tau = lowest
                            while tau + 3 <= highest {
                                let v = UnsafeRawPointer(c + tau).loadUnaligned(as: SIMD4<Float>.self)
                                    + UnsafeRawPointer(r + offset + (tau - lowest)).loadUnaligned(as: SIMD4<Float>.self)
                                let better = v .>= best4
                                best4.replace(with: v, where: better)
                                at4.replace(with: lanes, where: better)
                                lanes &+= 4
                                tau += 4
                            }
                            var best = -Float.infinity, from = -1
                            for lane in 0..<4 where best4[lane] > best || (best4[lane] == best && Int(at4[lane]) > from) {
                                best = best4[lane]
                                from = Int(at4[lane])
                            }
                            while tau <= highest {
                                let v = c[tau] + r[offset + (tau - lowest)]
                                if v >= best { best = v; from = tau }
                                tau += 1
                            }
                            if best >= 0 {
                                c[t] = x[t] + best
                                back[t] = from
                            } else {
                                c[t] = x[t]
                            }
                        }
                    }
                }
            }
        }
        return (c.map { Double($0) }, back)
    }

    /// The beats read back from `last` through the predecessors, in time order.
    static func backtrace(_ back: [Int], from last: Int) -> [Int] {
        var out: [Int] = []
        var t = last
        while t >= 0 {
            out.append(t)
            t = back[t]
        }
        return out.reversed()
    }
}

/// Which offset of a tracked run of beats is the beat. The tracker follows the strongest full-band
/// onsets, and in syncopated music (reggae and funk bass on the off-beats, a trap kick a sixteenth
/// early, hi-hats on the off-beats over a four-on-the-floor kick) those sit between the beats, so a
/// run is right in tempo and wrong in phase. Each segment of the grid (a steady run: the tracker may
/// change phase at a breakdown) is moved by the offset of 0, ¼, ½ or ¾ of its interval whose beats
/// collect the most of
///
///     w_low · L + w_high · H + w_kick · K
///
/// where L and H are the means, over the moved beats, of the low-band (kick, bass) and high-band
/// (hi-hat, snare, attack) envelopes over their standard deviations, and K the same for the smaller
/// of the two at each hop: a kick drum's thump comes with its beater's click, a bass note has no
/// click and a hi-hat no thump, so K stands out where the kick is. Each is taken at its largest
/// within ±1 hop. The three weights are the data-chosen constants: a conditional logit over the four
/// offsets of every segment, fitted on the rendered grooves, the MIDI dev set and the LMMS songs
/// (phase_cv.py, in git history before scripts/lab was removed; docs/profile-format.md has the held-out
/// figures).
public enum BeatPhase {
    static let offsets: [Double] = [0, 0.25, 0.5, 0.75]
    static let lowWeight = -0.10
    static let highWeight = 0.91
    static let kickWeight = 0.97

    /// `segments` (seconds; hop h of the envelopes is at (start + h)/frameRate) each moved by its
    /// winning offset; a moved beat that would reach the next segment's first beat or the envelopes'
    /// end is dropped (a segment left with no beat goes). Unchanged when both envelopes are constant.
    public static func align(_ segments: [BeatGrid.Segment], low: [Float], high: [Float],
                             start: Int, frameRate: Double) -> [BeatGrid.Segment] {
        let n = min(low.count, high.count)
        guard n > 0 else { return segments }
        // Each envelope over its standard deviation, folded into its weight (no copies of a
        // six-hour envelope); a constant one weighs nothing.
        let lowSD = BeatEnvelope.standardDeviation(low[..<n]), highSD = BeatEnvelope.standardDeviation(high[..<n])
        guard lowSD != nil || highSD != nil else { return segments }
        let l = lowSD.map { lowWeight / $0 } ?? 0, h = highSD.map { highWeight / $0 } ?? 0
        // K needs both envelopes on their own scales; a constant one has no onsets, so no kick.
        let lowScale = lowSD.map { Float(1 / $0) }, highScale = highSD.map { Float(1 / $0) }
        func kick(_ hop: Int) -> Double {
            guard let lowScale, let highScale, hop + 1 >= 0, hop - 1 < n else { return 0 }
            var k: Float = 0
            for j in max(0, hop - 1)...min(n - 1, hop + 1) { k = max(k, min(low[j] * lowScale, high[j] * highScale)) }
            return Double(k)
        }
        func score(_ segment: BeatGrid.Segment) -> Double {
            var s = 0.0
            for k in 0..<segment.count {
                let hop = Int(((segment.start + Double(k) * segment.interval) * frameRate).rounded()) - start
                guard hop < n else { break }
                s += l * Double(BeatEnvelope.peak(low, at: hop, reach: 1)) + h * Double(BeatEnvelope.peak(high, at: hop, reach: 1))
                    + kickWeight * kick(hop)
            }
            return s / Double(max(1, segment.count))
        }
        var out: [BeatGrid.Segment] = []
        for (i, segment) in segments.enumerated() {
            var best = segment, bestScore = score(segment)
            for offset in offsets.dropFirst() {
                var moved = segment
                moved.start += offset * segment.interval
                let s = score(moved)
                if s > bestScore { best = moved; bestScore = s }
            }
            let limit = min(i + 1 < segments.count ? segments[i + 1].start : .infinity,
                            Double(start + n) / frameRate)
            while best.count > 0, best.start + Double(best.count - 1) * best.interval >= limit { best.count -= 1 }
            if best.count > 0 { out.append(best) }
        }
        return out
    }
}
