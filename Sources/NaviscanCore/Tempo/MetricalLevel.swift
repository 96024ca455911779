import Foundation

/// Chooses among metrically related tempo candidates (×½, ×2, ×⅔, …) from the beats each one lays
/// down, not from a tempo prior alone. Over the first two minutes from the first onset, for each
/// candidate period p, a dynamic-programming tracker (Ellis 2007: C(t) = E(t) + max over gaps d in
/// [p/2, 2p] of C(t − d) − 100·ln(d/p)², a fresh start where that is below 0; read back from the best
/// C of the last period) lays down beats on E, the full-band onset strength over its standard
/// deviation. From those beats (W = the maximum over the beat's hop and its two neighbours):
/// - how much onset strength the beats and the off-beats halfway between collect, full band (E) and
///   low band (L: kick, bass);
/// - how regular the beats are (the intervals' coefficient of variation) and how far they stray from
///   the period (mean ln² of interval over period);
/// - bar structure: how much one position in 2, 3 or 4 beats stands out in the low band's accents,
///   and in 2 in the full band's;
/// and the autocorrelation features of `TempoEstimator` (every region at ½, 1, 2, 3, 4 beats) plus
/// x = log2(T/110) and x². The level score is a linear model over them: its weights are the mean of
/// ridge conditional logits at ridge strengths 0.3, 3 and 30 (so no strength is chosen from data),
/// fitted on every source of the tempo dev sets (the tracker modules, the MIDI songs, the LMMS demo
/// songs, the rendered grooves of generator seeds 1–5 and 80 rendered backbeat shuffles at 70–200 BPM,
/// whose snare on 2 and 4 names the beat; scripts/lab/tempo-model/beat_level_cv.py, which also
/// measures the choice leave-one-package-out). One more term then picks the level: how strongly the
/// full band repeats at a sixth of the beat (`sixthOfBeatWeight`), since a beat is rarely split in six,
/// so a shuffle or a fast triplet feel read at half its tempo shows there. Its weight is fitted on top of
/// the others (theirs held), in the same way, on the same sources. That term only moves the tempo among
/// candidates: whether there is a beat at all is decided at the candidate the other terms prefer
/// (`Evidence.score`), so it cannot give a pad or a drone a tempo. That candidate's beats decide it:
/// r, the onset strength on its beats over its mean everywhere, in the full
/// band or in the mid band (snares, claps, chords, melody) whichever is higher, below
/// `minOnBeatRatio` means no tempo unless the slow-onset ratio (`slowOnsetRatio`) reaches
/// `minSlowOnsetRatio` or the steady pulse's consistency (`steadyPulse`) reaches `minSteadyPulseConsistency`.
/// The mid band counts because a busy low band (a sliding bass, a pad), dense hi-hats or a noise floor
/// can fill the full band between the beats; it counts only where its own onsets pass the track's
/// onset floor by the same rule as the full band's (at least 1 % of the hops), since a mid band of a
/// few sparse blips under the floor (a very quiet pad) lets any beats collect many times its mean.
package struct MetricalLevel {
    /// eb, eo, lb, lo, irr, cost, bar2, bar3, bar4, ebar2.
    static let beatWeights: [Double] = [1.2173, 0.3705, 0.9310, 0.3344, 0.7412, -277.4067, 0.5747, 1.0297, 0.5270, 1.4256]
    /// For the full, low, mid and high regions in turn, r(½τ), r(τ), r(2τ), r(3τ), r(4τ).
    static let autocorrelationWeights: [Double] = [
        -1.0817, 4.4344, 1.6179, 3.6013, 1.3041,
        -2.6991, -3.5755, -2.1323, -2.4128, 0.5062,
        -1.5040, 2.3812, 2.0925, -3.3047, 1.1979,
        3.1086, 4.3150, 0.8516, 3.5106, 1.1217,
    ]
    static let tempoWeights = (x: 4.5916, x2: -3.2567)
    /// The weight of the full region's autocorrelation at a sixth of the beat in `Evidence.levelScore`.
    static let sixthOfBeatWeight = -5.3064
    /// Midway between the best beatless clip (6.49) and the least beat-like track with a tempo (7.40)
    /// of the dev sets.
    package static let minOnBeatRatio = 6.941
    /// The slow-onset ratio's moving sum, in hops: 100 ms, the rise of a bowed or swelling attack.
    static let slowAttackHops = 10
    /// Just above the most beat-like beatless clip's slow-onset ratio (1.930) among the dev sets' and
    /// renders of 80 more beatless clips (two generator seeds).
    package static let minSlowOnsetRatio = 1.93
    /// The steady-pulse ratio's windows, in hops: 10 s, short enough for a tempo a fraction of a percent
    /// off to stay on one phase.
    package static let pulseWindowHops = 1000
    static let pulsePhaseBins = 24
    /// Periods no metrical relation explains, as multiples of the winner's.
    static let unrelatedPeriodRatios = [0.83, 0.91, 1.09, 1.19]
    /// Just above the most steadily pulse-like beatless clip's consistency among the dev sets' and the
    /// same 80 rendered beatless clips: 5.221 here (5.216 in the lab's twin, whose envelope codes round
    /// differently at a few hops).
    package static let minSteadyPulseConsistency = 5.23
    /// The tracker's tightness for this choice (librosa's).
    static let tightness = 100.0
    static let seconds = 120.0

    /// The evidence of one candidate.
    package struct Evidence {
        /// The level score without the sixth-of-beat term: its winner decides whether there is a beat.
        var score: Double
        /// The score that picks the tempo among the candidates.
        var levelScore: Double
        /// Onset strength on the beats over its mean over the segment, the higher of the full band's
        /// and the mid band's.
        package var onBeatRatio: Double
    }

    private let e: [Double]
    private let full: [Double]
    private let low: [Double]
    private let meanE: Double
    private let mid: [Double]
    private let meanMid: Double
    private let midCounts: Bool

    /// The first `seconds` of the kept envelopes, from the first hop with any onset strength;
    /// `floorQuarterOctaves`, the track's onset floor (`TempoEstimator.onsetFloorQuarterOctaves`).
    package init(_ summary: OnsetPeriodicity.Summary, floorQuarterOctaves: Int) {
        let table = BeatEnvelope.values
        let start = summary.beatEnvelope.firstIndex { $0 != 0 } ?? summary.beatEnvelope.count
        let end = min(summary.beatEnvelope.count, start + Int(Self.seconds * summary.frameRate))
        // Hops an envelope does not reach count as 0 (the mid one is kept for the first hops only,
        // `OnsetPeriodicity.levelFrames`).
        func decoded(_ codes: [UInt8]) -> [Double] { (start..<end).map { $0 < codes.count ? Double(table[Int(codes[$0])]) : 0 } }
        e = decoded(summary.beatEnvelope)
        let l = summary.lowBeatEnvelope.count == summary.beatEnvelope.count ? decoded(summary.lowBeatEnvelope)
                                                                            : [Double](repeating: 0, count: e.count)
        full = BeatEnvelope.standardised(e) ?? e
        low = BeatEnvelope.standardised(l) ?? l
        meanE = e.reduce(0, +) / Double(max(1, e.count))
        mid = decoded(summary.midBeatEnvelope)
        meanMid = mid.reduce(0, +) / Double(max(1, mid.count))
        // Code 80 + 2q decodes to 2^(q/4): the floor in the envelope's own steps.
        let floorCode = 80 + 2 * floorQuarterOctaves
        let floorValue = floorCode < 1 ? Double.leastNonzeroMagnitude : floorCode > 255 ? .infinity : Double(table[floorCode])
        midCounts = meanMid > 0 && mid.reduce(0) { $1 >= floorValue ? $0 + 1 : $0 } * 100 >= e.count
    }

    /// The on-beat ratio of the onset strength summed over the last `slowAttackHops` hops, beats tracked
    /// on that sum at `period`: the higher of the full band's and the mid band's (where it counts). A
    /// string section or an organ rises over 50–200 ms, so its onsets are no sharper on the beat than a
    /// pad's ripple is anywhere, and r misses them; summed over the attack, the beat's whole rise counts
    /// while a ripple's blips average out.
    package func slowOnsetRatio(period: Double) -> Double {
        func ratio(_ v: [Double]) -> Double {
            let summed = Self.movingSum(v, Self.slowAttackHops)
            let mean = summed.reduce(0, +) / Double(max(1, summed.count))
            guard mean > 0 else { return 0 }
            let beats = Self.beats(BeatEnvelope.standardised(summed) ?? summed, period: period)
            return beats.count < 3 ? 0 : Self.onBeatRatio(summed, beats: beats, mean: mean)
        }
        return max(ratio(e), midCounts ? ratio(mid) : 0)
    }

    /// How much more the full-band onset strength gathers on one phase of `period` than on one phase of
    /// periods no metrical relation explains, and how steadily it does so.
    package struct SteadyPulse: Equatable {
        /// The windows' mean score at `period` over its mean at the unrelated periods (1: no pulse).
        package var ratio: Double
        /// (ratio − 1) · √k / sd⁻ over the k windows' own ratios, sd⁻ their lower semideviation
        /// √(2 Σ min(0, vᵢ − ratio)² / (k − 1)): how many standard errors the pulse stands above none,
        /// counting only the windows where it is weaker than its mean. 0 with fewer than two windows.
        package var consistency: Double
    }

    /// Each 10 s window is folded onto 24 phase bins (each bin summed with its two neighbours, around
    /// the circle); a window scores its peak bin over its mean bin, and a period the mean over
    /// windows, best of 9 periods within ±1 % (a candidate's tempo is not exact). The ratio is that
    /// score at `period` over its mean at the `unrelatedPeriodRatios`; the consistency compares the
    /// windows' ratios with their spread below it. Soft attacks on a steady grid pile up on one phase
    /// window after window, where neither r nor the slow-onset ratio sees them beat by beat; notes at
    /// random times (a pad's chords, bells) fold about as flat at every period, and a pad's swells line
    /// up with a period in some windows but not in the others. A song's louder passages (a fuller
    /// accompaniment) lift some windows far above its mean; only the windows that sag below it say
    /// the pulse is not there.
    package func steadyPulse(period: Double) -> SteadyPulse {
        var bins = [Double](repeating: 0, count: Self.pulsePhaseBins)
        var scores: [Double] = []
        func folded(_ p: Double, into windowScores: inout [Double]) -> Double {
            windowScores.removeAll(keepingCapacity: true)
            var start = 0
            let cycles = 1 / p
            while start < e.count - Self.pulseWindowHops / 2 {
                let end = min(start + Self.pulseWindowHops, e.count)
                for i in bins.indices { bins[i] = 0 }
                var sum = 0.0
                for t in start..<end {
                    let x = Double(t - start) * cycles
                    let phase = (x - x.rounded(.down)) * Double(Self.pulsePhaseBins)
                    bins[min(Self.pulsePhaseBins - 1, Int(phase))] += e[t]
                    sum += e[t]
                }
                if sum > 0 {
                    var peak = 0.0
                    for i in bins.indices {
                        let b = bins[i] + bins[(i + Self.pulsePhaseBins - 1) % Self.pulsePhaseBins] + bins[(i + 1) % Self.pulsePhaseBins]
                        peak = max(peak, b)
                    }
                    windowScores.append(peak / (3 * sum / Double(Self.pulsePhaseBins)))
                }
                start += Self.pulseWindowHops
            }
            return windowScores.isEmpty ? 0 : windowScores.reduce(0, +) / Double(windowScores.count)
        }
        /// The best of the 9 periods around `p`: its mean score, its windows' scores left in `best`.
        func best(_ p: Double, windows best: inout [Double]) -> Double {
            var top = -Double.infinity
            for k in 0...8 {
                let score = folded(p * (1 + (-0.01 + Double(k) * 0.0025)), into: &scores)
                if score > top { top = score; best = scores }
            }
            return top
        }
        var ignored: [Double] = [], windows: [Double] = []
        let unrelated = Self.unrelatedPeriodRatios.reduce(0.0) { $0 + best(period * $1, windows: &ignored) }
            / Double(Self.unrelatedPeriodRatios.count)
        let score = best(period, windows: &windows)
        guard unrelated > 0 else { return SteadyPulse(ratio: 0, consistency: 0) }
        let ratio = score / unrelated
        guard windows.count >= 2 else { return SteadyPulse(ratio: ratio, consistency: 0) }
        // `score` is the windows' mean; only the windows below it count against the pulse.
        let k = Double(windows.count)
        let below = windows.reduce(0.0) { $0 + min(0, $1 - score) * min(0, $1 - score) }
        let semideviation = (2 * below / (k - 1)).squareRoot() / unrelated
        return SteadyPulse(ratio: ratio, consistency: semideviation > 0 ? max(0, (ratio - 1) * k.squareRoot() / semideviation) : 0)
    }

    /// The mean of `v` at the beats (each the maximum over its hop and the two beside it) over `mean`.
    static func onBeatRatio(_ v: [Double], beats: [Int], mean: Double) -> Double {
        mean > 0 ? beats.reduce(0) { $0 + BeatEnvelope.peak(v, at: $1, reach: 1) } / Double(max(1, beats.count)) / mean : 0
    }

    /// y[t] = x[t − w + 1] + … + x[t] (the first hops sum what there is).
    static func movingSum(_ x: [Double], _ w: Int) -> [Double] {
        var y = [Double](repeating: 0, count: x.count)
        var sum = 0.0
        for t in x.indices {
            sum += x[t]
            if t >= w { sum -= x[t - w] }
            y[t] = sum
        }
        return y
    }

    /// The level scores and on-beat ratio of tempo `bpm` (period `period` hops), with `autocorrelation`
    /// the candidate's 20 autocorrelation features and `sixthOfBeat` the full region's autocorrelation at
    /// a sixth of its beat.
    package func evidence(bpm: Double, period: Double, autocorrelation: [Double], sixthOfBeat: Double) -> Evidence {
        let beats = Self.beats(full, period: period)
        let x = log2(bpm / 110)
        var features: [Double]
        var ratio = 0.0
        if beats.count < 3 {
            features = [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
        } else {
            func w(_ v: [Double], _ h: Int) -> Double { BeatEnvelope.peak(v, at: h, reach: 1) }
            let mids = zip(beats, beats.dropFirst()).map { ($0 + $1) / 2 }
            let aE = beats.map { w(full, $0) }, aL = beats.map { w(low, $0) }
            func mean(_ v: [Double]) -> Double { v.reduce(0, +) / Double(max(1, v.count)) }
            let intervals = zip(beats, beats.dropFirst()).map { Double($1 - $0) }
            let meanInterval = mean(intervals)
            let sd = (intervals.reduce(0) { $0 + ($1 - meanInterval) * ($1 - meanInterval) } / Double(intervals.count)).squareRoot()
            let cost = mean(intervals.map { log($0 / period) * log($0 / period) })
            features = [mean(aE), mean(mids.map { w(full, $0) }), mean(aL), mean(mids.map { w(low, $0) }),
                        sd / meanInterval, cost,
                        Self.contrast(aL, 2), Self.contrast(aL, 3), Self.contrast(aL, 4), Self.contrast(aE, 2)]
            ratio = max(Self.onBeatRatio(e, beats: beats, mean: meanE),
                        midCounts ? Self.onBeatRatio(mid, beats: beats, mean: meanMid) : 0)
        }
        var z = Self.tempoWeights.x * x + Self.tempoWeights.x2 * x * x
        for (f, weight) in zip(features, Self.beatWeights) { z += f * weight }
        for (f, weight) in zip(autocorrelation, Self.autocorrelationWeights) { z += f * weight }
        return Evidence(score: z, levelScore: z + Self.sixthOfBeatWeight * sixthOfBeat, onBeatRatio: ratio)
    }

    /// (max − min) of the mean accent at each of m positions, over the mean accent; 0 with fewer
    /// than 2m beats.
    static func contrast(_ a: [Double], _ m: Int) -> Double {
        let mean = a.reduce(0, +) / Double(max(1, a.count))
        guard a.count >= 2 * m, mean > 0 else { return 0 }
        var sums = [Double](repeating: 0, count: m), counts = [Double](repeating: 0, count: m)
        for (i, v) in a.enumerated() { sums[i % m] += v; counts[i % m] += 1 }
        let phases = (0..<m).map { sums[$0] / counts[$0] }
        return (phases.max()! - phases.min()!) / mean
    }

    /// Beat hops by the dynamic programme above (`BeatTracker.cumulativeScore`), read back from the
    /// best score of the last period (the earliest on ties).
    static func beats(_ x: [Double], period p: Double) -> [Int] {
        guard !x.isEmpty else { return [] }
        let (c, back) = BeatTracker.cumulativeScore(x, period: p, tightness: tightness)
        let last = max(0, x.count - Int(p.rounded()))
        var t = last
        for i in last..<x.count where c[i] > c[t] { t = i }
        return BeatTracker.backtrace(back, from: t)
    }
}
