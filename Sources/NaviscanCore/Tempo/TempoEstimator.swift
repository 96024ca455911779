import Foundation

/// Tempo from an onset envelope: autocorrelation → comb salience → octave decision → phase.
public struct TempoEstimator {
    public struct Config: Sendable, Hashable, Codable {
        /// Reported tempi lie in this range (BPM).
        public var minBPM: Double = 60
        public var maxBPM: Double = 200
        /// Below this confidence the track is reported as having no tempo (bpm: null).
        public var minConfidence: Double = 0.2
        public init() {}
    }

    public struct Candidate: Sendable, Equatable {
        public var bpm: Double
        /// Salience relative to the chosen tempo's (1 = as strong).
        public var score: Double
    }

    public struct Result: Sendable, Equatable {
        /// Tempo in BPM (to 0.01), nil for music without a steady beat.
        public var bpm: Double?
        /// How periodic the onsets are at the chosen tempo, in [0, 1] (see docs/profile-format.md).
        public var confidence: Double
        /// The metrically related tempi (×½, ×2, ×⅔, ×³⁄₂) with their relative scores.
        public var alternates: [Candidate]
        /// Time of the first beat at or after the start of the sound, seconds; nil without a tempo.
        public var firstBeat: Double?
    }

    public let config: Config

    public init(config: Config) { self.config = config }

    public func estimate(envelope: OnsetEnvelope, soundStart: Double = 0) -> Result {
        estimate(flux: envelope.flux, lowFlux: envelope.lowFlux, frameRate: envelope.frameRate, soundStart: soundStart)
    }

    public func estimate(flux: [Float], lowFlux: [Float], frameRate: Double, soundStart: Double = 0) -> Result {
        let none = Result(bpm: nil, confidence: 0, alternates: [], firstBeat: nil)
        let x = Self.emphasizePeaks(flux, frameRate: frameRate)
        let maxLag = Int(frameRate * 60 / 30 * 4) + 2      // four periods of 30 BPM
        guard x.count > Int(frameRate * 4), let acf = Self.autocorrelation(x, maxLag: min(maxLag, x.count / 2)) else {
            return none
        }
        func salience(_ bpm: Double) -> Double {
            let lag = frameRate * 60 / bpm
            var s = 0.0
            for k in 1...4 {
                let l = lag * Double(k)
                guard l < Double(acf.count - 1) else { break }
                s += Self.interpolate(acf, at: l) / Double(k)
            }
            return s
        }
        // Coarse search with a log-Gaussian prior on tempo, then a fine search around the winner.
        var best = config.minBPM
        var bestScore = -Double.infinity
        var bpm = config.minBPM
        while bpm <= config.maxBPM {
            let prior = exp(-0.5 * pow(log2(bpm / 120) / 1.0, 2))
            let score = salience(bpm) * prior
            if score > bestScore { bestScore = score; best = bpm }
            bpm += 0.5
        }
        var refined = best
        var refinedScore = salience(best)
        var fine = best - 0.6
        while fine <= best + 0.6 {
            let s = salience(fine)
            if s > refinedScore { refinedScore = s; refined = fine }
            fine += 0.01
        }
        let confidence = max(0, min(1, refinedScore / 1.0))
        let alternates = [0.5, 2, 2.0 / 3, 1.5].map { f -> Candidate in
            let b = refined * f
            return Candidate(bpm: (b * 100).rounded() / 100, score: refinedScore > 0 ? max(0, salience(b)) / refinedScore : 0)
        }
        guard confidence >= config.minConfidence else {
            return Result(bpm: nil, confidence: confidence, alternates: [], firstBeat: nil)
        }
        let firstBeat = Self.firstBeat(x, frameRate: frameRate, bpm: refined, soundStart: soundStart)
        return Result(bpm: (refined * 100).rounded() / 100, confidence: confidence, alternates: alternates, firstBeat: firstBeat)
    }

    /// Removes the slowly varying part (a 1 s moving mean), keeps positive peaks, scales to unit RMS.
    static func emphasizePeaks(_ e: [Float], frameRate: Double) -> [Double] {
        let n = e.count
        guard n > 0 else { return [] }
        let half = max(1, Int(frameRate * 0.5))
        var prefix = [Double](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] + Double(e[i]) }
        var out = [Double](repeating: 0, count: n)
        var sumSquares = 0.0
        for i in 0..<n {
            let lo = max(0, i - half), hi = min(n, i + half + 1)
            let mean = (prefix[hi] - prefix[lo]) / Double(hi - lo)
            let v = max(0, Double(e[i]) - mean)
            out[i] = v
            sumSquares += v * v
        }
        let rms = (sumSquares / Double(n)).squareRoot()
        if rms > 0 { for i in 0..<n { out[i] /= rms } }
        return out
    }

    /// Normalised autocorrelation (mean removed) for lags 0…maxLag; r[0] = 1.
    static func autocorrelation(_ x: [Double], maxLag: Int) -> [Double]? {
        let n = x.count
        guard maxLag > 1, n > maxLag else { return nil }
        let mean = x.reduce(0, +) / Double(n)
        let centered = x.map { $0 - mean }
        var r = [Double](repeating: 0, count: maxLag + 1)
        centered.withUnsafeBufferPointer { c in
            for lag in 0...maxLag {
                var s = 0.0
                for t in 0..<(n - lag) { s += c[t] * c[t + lag] }
                r[lag] = s / Double(n - lag)
            }
        }
        guard r[0] > 0 else { return nil }
        let r0 = r[0]
        return r.map { $0 / r0 }
    }

    static func interpolate(_ a: [Double], at x: Double) -> Double {
        let i = Int(x)
        guard i + 1 < a.count else { return a[min(i, a.count - 1)] }
        let f = x - Double(i)
        return a[i] * (1 - f) + a[i + 1] * f
    }

    /// The beat phase that collects the most onset strength, expressed as the first beat at or after
    /// the start of the sound.
    static func firstBeat(_ x: [Double], frameRate: Double, bpm: Double, soundStart: Double) -> Double {
        let period = frameRate * 60 / bpm
        var bestPhase = 0.0
        var bestSum = -1.0
        var phase = 0.0
        while phase < period {
            var sum = 0.0
            var t = phase
            while t < Double(x.count - 1) {
                sum += interpolate(x, at: t)
                t += period
            }
            if sum > bestSum { bestSum = sum; bestPhase = phase }
            phase += 0.25
        }
        let periodSeconds = 60 / bpm
        var beat = bestPhase / frameRate
        let earliest = soundStart - 0.05
        if beat < earliest { beat += ((earliest - beat) / periodSeconds).rounded(.up) * periodSeconds }
        return (beat * 1000).rounded() / 1000
    }
}
