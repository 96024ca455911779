import Foundation

/// Where the bars start: the meter (3 or 4 beats per bar) and the beat of the first bar line.
///
/// Each beat carries five accents: the low-band and the full-band onset strength at the beat, and
/// how much the spectrum changes there (`spectralChange`: over all band groups, the low ones and the
/// mid ones) — a bar line is where the kick and the crash fall, and also where the chord and the bass
/// note change, which is often the only mark of the one in four-on-the-floor music. For each of the
/// seven candidates (4 beats per bar at phase 0…3, 3 at phase 0…2) an accent's contrast is its mean
/// at that phase of the bar minus its mean at the other phases, over its mean; the candidate's score
/// is `weights` · contrasts; the meter is that of the best candidate over the beats after the first
/// four, the phase the best of that meter's over all beats, and it names the bars when its probability
/// among the seven (softmax of the scores) is at least `minProbability`. Fewer than four bars name none.
public enum BarLines {
    /// Weights of the contrasts of: low-band onset strength, full-band onset strength, spectral change
    /// (all groups), its low groups, its mid groups. Fitted by downbeat_cv.py (a conditional
    /// logit over the seven candidates, ridge strength chosen by leave-one-source-out; removed with
    /// scripts/lab, in git history before the tempo model's package).
    static let weights: [Double] = [2.0405, -1.3631, 1.4068, 1.1177, 1.7189]
    /// Below this probability of the winner the bars are unclear (nil): flat accents give each of
    /// the seven candidates 1/7. Chosen by downbeat_cv.py where a wrong bar line costs as much as a
    /// right one gains.
    static let minProbability = 0.3
    /// Beats left out of the meter's choice at the start: a bar's worth, where the sound may start.
    static let meterSkip = 4

    /// The meter and the index of the first bar line's beat from per-beat accents (`accents[f][i]`:
    /// accent f of beat i, the five in `weights`' order, all of the same length); nil when unclear.
    /// The meter is chosen from the beats after the first `meterSkip`: the spectral change from
    /// silence where the sound starts says where a bar starts, not how long bars are. The phase within
    /// that meter is chosen from all the beats.
    public static func choose(accents: [[Double]]) -> (meter: Int, firstDownbeat: Int)? {
        precondition(accents.count == weights.count && accents.allSatisfy { $0.count == accents[0].count })
        let all = scores(accents, from: 0)
        guard let meter = scores(accents, from: meterSkip).max(by: { $0.score < $1.score })?.meter,
              let best = all.filter({ $0.meter == meter }).max(by: { $0.score < $1.score }) else { return nil }
        let top = all.map(\.score).max()!
        let probability = exp(best.score - top) / all.reduce(0.0) { $0 + exp($1.score - top) }
        guard probability >= minProbability else { return nil }
        return (best.meter, best.phase)
    }

    /// The score of each candidate with at least four bars of beats from beat `start` on (phases
    /// counted from `start`): `weights` · the accents' contrasts.
    static func scores(_ accents: [[Double]], from start: Int) -> [(meter: Int, phase: Int, score: Double)] {
        let beatCount = accents[0].count - start
        var candidates: [(meter: Int, phase: Int, score: Double)] = []
        candidates.reserveCapacity(7)
        var sums = [Double](repeating: 0, count: 4), counts = [Double](repeating: 0, count: 4)
        var phaseScores = [Double](repeating: 0, count: 4)
        for meter in stride(from: 4, through: 3, by: -1) where beatCount >= 4 * meter {
            for phase in 0..<meter { phaseScores[phase] = 0 }
            for (f, a) in accents.enumerated() {
                for phase in 0..<meter { sums[phase] = 0; counts[phase] = 0 }
                for i in start..<a.count {
                    sums[(i - start) % meter] += a[i]
                    counts[(i - start) % meter] += 1
                }
                let total = sums[0..<meter].reduce(0, +)
                let mean = total / Double(beatCount)
                guard mean > 0 else { continue }
                for phase in 0..<meter {
                    let here = sums[phase] / counts[phase]
                    var others = 0.0
                    for q in 0..<meter where q != phase { others += sums[q] / counts[q] }
                    phaseScores[phase] += weights[f] * (here - others / Double(meter - 1)) / mean
                }
            }
            for phase in 0..<meter { candidates.append((meter, phase, phaseScores[phase])) }
        }
        return candidates
    }

    /// The spectral change at each beat (seconds, increasing): the band groups' mean level over the
    /// blocks from this beat to the next, minus that from the previous beat to this one (the first
    /// and the last beat look as far as their neighbour, the time before the track is silence, and
    /// the change is 0 where a side spans no block), as a Euclidean length over all 12 groups,
    /// the low ones and the mid ones. Beats past the kept levels are left out: the arrays are as long
    /// as the beats within them.
    public static func spectralChange(_ levels: BandLevels.Summary, beats: [Double], frameRate: Double)
        -> (all: [Double], low: [Double], mid: [Double]) {
        let groups = BandLevels.groupCount
        let blockCount = levels.blockCount
        let hb = beats.map { Int(($0 * frameRate / Double(BandLevels.blockHops)).rounded()) }.prefix { $0 < blockCount }
        let n = hb.count
        guard n >= 2 else { return ([], [], []) }
        // The windows: before the first beat, each beat to the next, after the last (as long as their
        // neighbour); each group's mean level over window w at means[w * groups + g], blocks before the
        // track being silence (0). Every block between the first and the last beat is read once.
        let first = hb[0] - (hb[1] - hb[0]), last = min(blockCount, hb[n - 1] + (hb[n - 1] - hb[n - 2]))
        let edges = [first] + hb + [last]
        var means = [Double](repeating: 0, count: (n + 1) * groups)
        for w in 0...n where edges[w + 1] > edges[w] {
            for k in max(0, edges[w])..<edges[w + 1] {
                for g in 0..<groups { means[w * groups + g] += Double(levels.codes[k * groups + g]) }
            }
            let scale = 1 / (Double(BandLevels.codeScale) * Double(edges[w + 1] - edges[w]))
            for g in 0..<groups { means[w * groups + g] *= scale }
        }
        var all: [Double] = [], low: [Double] = [], mid: [Double] = []
        for i in 0..<n {
            let before = i > 0 ? hb[i - 1] : first, after = i + 1 < n ? hb[i + 1] : last
            var a = 0.0, l = 0.0, m = 0.0
            if before < hb[i] && hb[i] < after {
                for g in 0..<groups {
                    let d = means[(i + 1) * groups + g] - means[i * groups + g]
                    a += d * d
                    if BandLevels.lowGroups.contains(g) { l += d * d }
                    if BandLevels.midGroups.contains(g) { m += d * d }
                }
            }
            all.append(a.squareRoot()); low.append(l.squareRoot()); mid.append(m.squareRoot())
        }
        return (all, low, mid)
    }
}
