import Foundation

/// Tempo from the onset envelopes: autocorrelation → comb salience → metrical candidates → beats
/// for each → level decision → beat grid.
///
/// 0. A track whose emphasised onset strength never rises above a floor at its 99th percentile
///    (steady pads, drones, hum) has no onsets to count and no tempo; without this floor the
///    scale-free autocorrelation would find "periodicity" in hop-to-hop ripple. The floor follows the
///    track's loudness below −23 LUFS (`onsetFloorQuarterOctaves`).
/// 1. Each region's flux (full band = low + mid + high) loses its slowly varying part (a 1 s moving
///    mean), keeps its positive peaks, and is autocorrelated, hop by hop (`OnsetPeriodicity`).
/// 2. Comb salience of a tempo T with beat lag τ: S(T) = Σ_{k=1…4} r(kτ) / k on the full band. The
///    strongest tempo T₀ in 40–250 BPM seeds the candidates T₀ × {¼, ⅓, ½, ⅔, ¾, 1, 4⁄3, 3⁄2, 2, 3, 4} that
///    fall in the configured range, each moved to its local salience maximum (±3 %).
/// 3. Level decision (`MetricalLevel`): beats are tracked at each candidate's period over the first
///    two minutes, and a linear model over what those beats collect (onsets on and between the beats,
///    low band and full band, regularity, bar accents) and the regions' autocorrelation at ½–4 beats
///    picks the candidate; the tempo is then measured from the autocorrelation peaks.
/// 4. Confidence = the highest of r / (r + ρ), r the onset strength on the winner's beats over its
///    mean everywhere, in the full band or the mid band (whichever is higher), s / (s + σ), s the same
///    ratio of the onset strength summed over 100 ms (slow attacks: strings, organ, pads with a
///    pulse), and t / (t + τ), t the consistency of the steady pulse at the winner's period over 10 s
///    windows (soft notes on a steady grid, `MetricalLevel.steadyPulse`); ρ, σ, τ are the model file's
///    lines (`TempoModel`): below `minConfidence` (0.5), when the beats explain the onsets no better
///    than beatless clips do, the track has no tempo.
/// 5. The beat grid: beats tracked over the whole track at the chosen tempo (`beatGrid`).
public struct TempoEstimator {
    /// The tempo stage's version: bump it when the onset front end or the tempo decision changes.
    public static let version = 1

    public struct Config: Sendable, Hashable, Codable {
        /// Reported tempi lie in this range (BPM); it must span at least an octave.
        public var minBPM: Double = 60
        public var maxBPM: Double = 200
        /// Below this confidence the track is reported as having no tempo (bpm: null).
        public var minConfidence: Double = 0.5
        public init() {}
    }

    public struct Candidate: Sendable, Equatable {
        public var bpm: Double
        /// Likelihood relative to the chosen tempo under the level model, in [0, 1].
        public var score: Double
    }

    public struct Result: Sendable, Equatable {
        /// Tempo in BPM (to 0.01), nil for music without a steady beat.
        public var bpm: Double?
        /// How well the chosen tempo's beats explain the onsets, in [0, 1] (see docs/profile-format.md).
        public var confidence: Double
        /// The tempi at ×½, ×2, ×⅔ and ×3⁄2 of the chosen one, with their relative scores.
        public var alternates: [Candidate]
        /// Time of the first beat at or after the start of the sound, seconds; nil without a tempo.
        public var firstBeat: Double?
        /// Every beat, bars where they are clear; empty without a tempo.
        public var grid: BeatGrid
    }

    static let lagMultiples: [Double] = [0.5, 1, 2, 3, 4]
    static let candidateRatios: [Double] = [1.0 / 4, 1.0 / 3, 1.0 / 2, 2.0 / 3, 3.0 / 4, 1, 4.0 / 3, 3.0 / 2, 2, 3, 4]
    static let seedRange: ClosedRange<Double> = 40...250
    /// In log-magnitude flux units (as a power of two, in quarter octaves: 2^0 = 1): about a 9 dB jump
    /// in one band. Real music, even ambient music with a few bells, reaches 3 or more.
    static let minOnsetStrengthQuarterOctaves = 0
    /// The loudness at and above which the floor is `minOnsetStrengthQuarterOctaves` (EBU R 128's target).
    static let onsetFloorReferenceLUFS = -23.0

    /// The floor for a track of integrated loudness `lufs` (nil: unknown, the full floor). Each band
    /// is compressed as ln(1 + γ·magnitude), which is linear in the magnitude for quiet sound: there
    /// the flux of the same music, and of the same ripple, falls with its amplitude, 1/6 of an octave
    /// per dB. So the floor falls with it below the reference: a ballad mastered at −50 LUFS is
    /// measured as it would be at −23, and a quiet drone is still left to the confidence rule.
    package static func onsetFloorQuarterOctaves(lufs: Double?) -> Int {
        guard let lufs, lufs.isFinite else { return minOnsetStrengthQuarterOctaves }
        let below = min(0, lufs - onsetFloorReferenceLUFS)
        return minOnsetStrengthQuarterOctaves + Int((4 * below / 20 * log2(10.0)).rounded(.down))
    }
    public let config: Config

    public init(config: Config) { self.config = config }

    /// Longest autocorrelation lag needed: four beats at the slowest seed tempo.
    static func maxLag(frameRate: Double) -> Int { Int(frameRate * 60 / seedRange.lowerBound * 4) + 2 }

    /// The tempo of a track from its onset summary (`OnsetEnvelope.finish()`); `soundStart` is where
    /// its leading silence ends and `soundEnd` where its trailing silence begins, seconds (the end of
    /// the envelope by default); `lufs`, its integrated loudness, sets the onset floor.
    public func estimate(_ summary: OnsetPeriodicity.Summary, soundStart: Double = 0, soundEnd: Double? = nil,
                         lufs: Double? = nil) -> Result {
        let none = Result(bpm: nil, confidence: 0, alternates: [], firstBeat: nil, grid: .empty)
        guard let weighing = weigh(summary, lufs: lufs) else { return none }
        let frameRate = summary.frameRate
        let n = summary.frameCount
        let candidates = weighing.candidates, evidences = weighing.evidences, level = weighing.level
        let fullACF = weighing.fullACF
        // Whether there is a beat is decided at the candidate the score without the sixth-of-beat term
        // prefers; the tempo is the one the level score prefers.
        let beatIndex = evidences.indices.max { evidences[$0].score < evidences[$1].score }!
        let bestIndex = evidences.indices.max { evidences[$0].levelScore < evidences[$1].levelScore }!
        let ratio = evidences[beatIndex].onBeatRatio
        let beatPeriod = frameRate * 60 / candidates[beatIndex]
        let slowRatio = level.slowOnsetRatio(period: beatPeriod)
        let pulse = level.steadyPulse(period: beatPeriod).consistency
        let confidence = max(ratio / (ratio + MetricalLevel.minOnBeatRatio),
                             slowRatio / (slowRatio + MetricalLevel.minSlowOnsetRatio),
                             pulse / (pulse + MetricalLevel.minSteadyPulseConsistency))
        guard confidence >= config.minConfidence else {
            return Result(bpm: nil, confidence: (confidence * 1000).rounded() / 1000, alternates: [], firstBeat: nil, grid: .empty)
        }
        let chosen = weighing.refine(candidates[bestIndex], span: 0.005, step: 0.01)
        let precise = Self.periodFromPeaks(fullACF, lag: frameRate * 60 / chosen).map { frameRate * 60 / $0 } ?? chosen
        let bpm = min(config.maxBPM, max(config.minBPM, abs(precise - chosen) < 0.01 * chosen ? precise : chosen))
        let bestScore = evidences[bestIndex].levelScore
        let alternates = [0.5, 2, 2.0 / 3, 1.5].map { f -> Candidate in
            let alternate = weighing.refine(bpm * f)
            // A candidate already weighed is not tracked again.
            let known = candidates.indices.first { abs(candidates[$0] - alternate) / alternate <= 0.03 }
            let score = known.map { evidences[$0].levelScore } ?? weighing.evidence(alternate).levelScore
            return Candidate(bpm: (alternate * 100).rounded() / 100, score: min(1, exp(score - bestScore)))
        }
        let grid = Self.beatGrid(summary, bpm: bpm, soundStart: soundStart, soundEnd: soundEnd ?? Double(n) / frameRate)
        let firstBeat = grid.firstBeat.map { ($0 * 1000).rounded() / 1000 }
        return Result(bpm: (bpm * 100).rounded() / 100, confidence: (confidence * 1000).rounded() / 1000,
                      alternates: alternates, firstBeat: firstBeat, grid: grid)
    }

    /// The candidates of a track and the level model's evidence for each (nil: no tempo before any
    /// weighing: too short, below the onset floor, or no candidate in range). Its closures measure more
    /// candidates the same way.
    package struct Weighing {
        package var candidates: [Double]
        package var evidences: [MetricalLevel.Evidence]
        var level: MetricalLevel
        var fullACF: [Double]
        var salience: (Double) -> Double
        var evidence: (Double) -> MetricalLevel.Evidence

        func refine(_ bpm: Double, span: Double = 0.03, step: Double = 0.05) -> Double {
            var best = bpm, bestScore = salience(bpm)
            var t = bpm * (1 - span)
            while t < bpm * (1 + span) {
                let s = salience(t)
                if s > bestScore { bestScore = s; best = t }
                t += step
            }
            return best
        }
    }

    package func weigh(_ summary: OnsetPeriodicity.Summary, lufs: Double?) -> Weighing? {
        let frameRate = summary.frameRate
        let n = summary.frameCount
        let acfs = summary.autocorrelations
        guard n >= Self.maxLag(frameRate: frameRate) + 2, let fullACF = acfs[0],
              fullACF.count > Self.maxLag(frameRate: frameRate) else { return nil }
        // The 99th percentile of the emphasised strength reaches the floor iff at least 1 % reach it.
        let floor = Self.onsetFloorQuarterOctaves(lufs: lufs)
        guard summary.framesReaching(quarterOctaves: floor) * 100 >= n else { return nil }
        let regionACFs = acfs.map { $0 ?? [Double](repeating: 0, count: fullACF.count) }

        func salience(_ bpm: Double) -> Double {
            let lag = frameRate * 60 / bpm
            var s = 0.0
            for k in 1...4 where lag * Double(k) < Double(fullACF.count - 1) {
                s += Self.interpolate(fullACF, at: lag * Double(k)) / Double(k)
            }
            return s
        }
        func autocorrelationFeatures(_ bpm: Double) -> [Double] {
            let lag = frameRate * 60 / bpm
            return regionACFs.flatMap { acf in Self.lagMultiples.map { Self.interpolate(acf, at: lag * $0) } }
        }
        let level = MetricalLevel(summary, floorQuarterOctaves: floor)
        func evidence(_ bpm: Double) -> MetricalLevel.Evidence {
            let lag = frameRate * 60 / bpm
            return level.evidence(bpm: bpm, period: lag, autocorrelation: autocorrelationFeatures(bpm),
                                  sixthOfBeat: Self.interpolate(fullACF, at: lag / 6))
        }
        var weighing = Weighing(candidates: [], evidences: [], level: level, fullACF: fullACF, salience: salience, evidence: evidence)

        // Seed: the strongest comb salience anywhere in the wide range.
        var seed = Self.seedRange.lowerBound, seedScore = -Double.infinity
        var t = Self.seedRange.lowerBound
        while t < Self.seedRange.upperBound {
            let s = salience(t)
            if s > seedScore { seedScore = s; seed = t }
            t += 0.5
        }
        let window = (config.minBPM * 0.95)...(config.maxBPM * 1.025)
        for ratio in Self.candidateRatios where window.contains(seed * ratio) {
            let c = weighing.refine(seed * ratio)
            if weighing.candidates.allSatisfy({ abs(c - $0) / $0 > 0.03 }) { weighing.candidates.append(c) }
        }
        guard !weighing.candidates.isEmpty else { return nil }
        weighing.evidences = weighing.candidates.map(evidence)
        return weighing
    }

    /// The beats at `bpm` over the whole kept envelope (`BeatTracker` on the full-band onset
    /// strength), as segments (`BeatGrid.segments`, runs across beatless stretches joined by
    /// `BeatGrid.bridged`) each moved to the offset `BeatPhase` chooses, extended to the sound's
    /// edges; the bars from the beats' accents (`BarLines`); the grid's confidence: with r the
    /// full-band onset strength on the tracked beats over its mean everywhere, (r − 1)/(r + 1).
    static func beatGrid(_ summary: OnsetPeriodicity.Summary, bpm: Double, soundStart: Double, soundEnd: Double) -> BeatGrid {
        let frameRate = summary.frameRate
        let full = BeatEnvelope.decode(summary.beatEnvelope)
        // A band envelope that does not follow the full one hop for hop counts as silent.
        func following(_ codes: [UInt8]) -> [Float] {
            codes.count == full.count ? BeatEnvelope.decode(codes) : [Float](repeating: 0, count: full.count)
        }
        let low = following(summary.lowBeatEnvelope), high = following(summary.highBeatEnvelope)
        let tracked = BeatTracker(envelope: full).track(period: frameRate * 60 / bpm)
        let earliest = max(0, soundStart - 0.05)
        let hops = tracked.beats.filter { (Double(summary.beatStart) + $0) / frameRate >= earliest }
        guard hops.count >= 2 else { return .empty }
        let start = Double(summary.beatStart)
        let tracks = BeatPhase.align(BeatGrid.bridged(BeatGrid.segments(of: hops.map { (start + $0) / frameRate })),
                                     low: low, high: high, start: summary.beatStart, frameRate: frameRate)
        let trackedCount = tracks.reduce(0) { $0 + $1.count }
        guard trackedCount >= 2 else { return .empty }
        let extended = BeatGrid.extend(tracks, from: earliest, to: max(earliest, soundEnd))
        // The bars from the grid's beats within the kept band levels, counted from the grid's first.
        let beats = BeatGrid.beats(of: extended)
        let change = BarLines.spectralChange(summary.bandLevels, beats: beats, frameRate: frameRate)
        let hopsOfBeats = beats.prefix(change.all.count).map { Int(($0 * frameRate - start).rounded()) }
        let bars = BarLines.choose(accents: [hopsOfBeats.map { Double(BeatEnvelope.peak(low, at: $0, reach: 2)) },
                                             hopsOfBeats.map { Double(BeatEnvelope.peak(full, at: $0, reach: 2)) },
                                             change.all, change.low, change.mid])
        let r = tracked.onBeatRatio
        let confidence = r > 1 ? (r - 1) / (r + 1) : 0
        return BeatGrid(segments: extended, meter: bars?.meter, firstDownbeat: bars?.firstDownbeat,
                        confidence: (confidence * 1000).rounded() / 1000)
    }

    /// The beat period, in hops, from the autocorrelation peaks at every multiple of `lag` that fits:
    /// each peak is found within ±2 % (at least ±1.5 hops) of k·lag and placed between hops by a
    /// parabola through its three highest values; the period is the least-squares slope of the peak
    /// positions over k. The comb's linearly interpolated maxima snap to whole hops (a 10 ms hop is
    /// 0.2 % of a beat at 125 BPM); the peaks out to 6 s pin the period to a few hundredths of a hop.
    /// Nil when fewer than two peaks are found.
    static func periodFromPeaks(_ r: [Double], lag: Double) -> Double? {
        var kk = 0.0, kp = 0.0, found = 0
        var k = 1
        while true {
            let centre = lag * Double(k)
            let halfWidth = max(1.5, 0.02 * centre)
            let lo = Int((centre - halfWidth).rounded(.down)), hi = Int((centre + halfWidth).rounded(.up))
            guard lo >= 1, hi + 1 < r.count else { break }
            var best = lo
            for i in lo...hi where r[i] > r[best] { best = i }
            if best > lo, best < hi, r[best] > 0 {
                let a = r[best - 1], b = r[best], c = r[best + 1]
                let denominator = a - 2 * b + c
                let offset = denominator < 0 ? 0.5 * (a - c) / denominator : 0
                let position = Double(best) + max(-0.5, min(0.5, offset))
                kk += Double(k * k)
                kp += Double(k) * position
                found += 1
            }
            k += 1
        }
        return found >= 2 ? kp / kk : nil
    }

    /// Linear interpolation; 0 past the end.
    static func interpolate(_ a: [Double], at x: Double) -> Double {
        let i = Int(x)
        guard i >= 0, i + 1 < a.count else { return 0 }
        let f = x - Double(i)
        return a[i] * (1 - f) + a[i + 1] * f
    }
}
