import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Tempo")
struct TempoEstimatorTests {
    static func estimate(_ signal: TestSignal, config: TempoEstimator.Config = .init(), soundStart: Double = 0) throws -> TempoEstimator.Result {
        precondition(signal.channels == 1)
        let envelope = try OnsetEnvelope(inputRate: signal.sampleRate)
        signal.samples.withUnsafeBufferPointer { envelope.process($0) }
        // The loudness the analyser measures in the same pass sets the onset floor.
        let lufs = try LoudnessMeterTests.measure(signal).integratedLUFS
        return TempoEstimator(config: config).estimate(envelope.finish(), soundStart: soundStart, lufs: lufs)
    }

    @Test("A drum groove's tempo is found to within 1 %", arguments: [92.0, 105.0, 118.0, 124.0])
    func groove(bpm: Double) throws {
        let result = try Self.estimate(.drumGroove(bpm: bpm, duration: 40))
        let found = try #require(result.bpm, "no tempo for a \(bpm) BPM groove")
        #expect(abs(found - bpm) / bpm < 0.01, "\(bpm) BPM groove read as \(found)")
        #expect(result.confidence >= 0.5)
        // The alternates are the ×½, ×2, ×⅔ and ×3⁄2 tempi, each scored no higher than the winner.
        #expect(result.alternates.count == 4)
        #expect(abs(result.alternates[0].bpm - found / 2) / found < 0.02)
        #expect(abs(result.alternates[1].bpm - found * 2) / found < 0.04)
        #expect(result.alternates.allSatisfy { $0.score >= 0 && $0.score <= 1 })
    }

    @Test("The first beat falls on the groove's first downbeat (or one beat after)")
    func firstBeat() throws {
        let bpm = 110.0
        // As in the pipeline, the search starts where the leading silence ends (1.3 s here).
        let result = try Self.estimate(.drumGroove(bpm: bpm, duration: 30, firstBeat: 1.3), soundStart: 1.3)
        #expect(abs((result.bpm ?? 0) - bpm) < 1)
        let beat = try #require(result.firstBeat)
        let period = 60 / bpm
        // On the grid of the groove's beats, at or just after the start of the sound.
        let beatsIn = (beat - 1.3) / period
        #expect(beat >= 1.25 && beat < 1.3 + 2 * period, "first beat \(beat)")
        #expect(abs(beatsIn - beatsIn.rounded()) * period < 0.03, "first beat \(beat) is off the grid")
    }

    @Test("A beatless pad gets no tempo")
    func beatless() throws {
        let result = try Self.estimate(.ambientPad(duration: 40))
        #expect(result.bpm == nil)
        #expect(result.firstBeat == nil)
        #expect(result.confidence < 0.5)
    }

    @Test("A string section's slow attacks in a hall keep their tempo: the onsets summed over the attack count")
    func stringSection() throws {
        let bpm = 120.0
        let result = try Self.estimate(.stringSection(bpm: bpm, duration: 40))
        let found = try #require(result.bpm, "no tempo (confidence \(result.confidence))")
        let related = [bpm / 2, bpm, bpm * 2].contains { abs(found - $0) / $0 < 0.02 }
        #expect(related, "read as \(found)")
        #expect(result.confidence > 0.55, "confidence \(result.confidence)")
        #expect(!result.grid.segments.isEmpty)
    }

    @Test("A drumless fast shuffle keeps its tempo: a beat split in six counts against half of it",
          arguments: [168.0, 180.0, 192.0])
    func fastShuffle(bpm: Double) throws {
        let result = try Self.estimate(.shuffle(bpm: bpm, duration: 40))
        let found = try #require(result.bpm, "no tempo (confidence \(result.confidence))")
        #expect(abs(found - bpm) / bpm < 0.01, "\(bpm) BPM shuffle read as \(found)")
        // The half tempo stays an alternate, scored below the winner.
        #expect(abs(result.alternates[0].bpm - found / 2) / found < 0.02)
        #expect(result.alternates[0].score < 1)
    }

    /// An onset summary made hop by hop: `bands(hop, &random)` gives each hop's low, mid and high
    /// onset strengths.
    static func handMadeSummary(seconds: Double, seed: UInt64,
                                bands: (Double, inout SeededGenerator) -> (low: Float, mid: Float, high: Float)) -> OnsetPeriodicity.Summary {
        let config = OnsetEnvelope.Config()
        let periodicity = OnsetPeriodicity(frameRate: config.frameRate, maxLag: Int(config.frameRate * config.maxLagSeconds) + 2,
                                           beatTrackingFrames: Int(config.frameRate * seconds))
        var random = SeededGenerator(seed: seed)
        for hop in 0..<Int(config.frameRate * seconds) {
            let strengths = bands(Double(hop), &random)
            periodicity.append(low: strengths.low, mid: strengths.mid, high: strengths.high)
        }
        return periodicity.finish()
    }

    /// A snare-like pulse on every beat in the mid band, hats on the eighths in the high band, and
    /// low-band hits every 10–40 ms at random (a sliding bass, a pad) that fill the full band between
    /// the beats.
    static func busyLowBandSummary(bpm: Double, seconds: Double) -> OnsetPeriodicity.Summary {
        let period = OnsetEnvelope.Config().frameRate * 60 / bpm
        var nextBeat = 10.0, nextEighth = 10.0, nextHit = 10.0
        return handMadeSummary(seconds: seconds, seed: 26) { t, random in
            var low = Float.random(in: 0...0.05, using: &random), mid = low, high = low
            if t >= nextBeat { mid += 8; nextBeat += period }
            if t >= nextEighth { high += 3; nextEighth += period / 2 }
            if t >= nextHit {
                low += Float.random(in: 6...12, using: &random)
                nextHit += Double.random(in: 1...4, using: &random)
            }
            return (low, mid, high)
        }
    }

    /// A dense random ripple in every band (a pad's shimmer), and on every beat a soft swell in the mid
    /// band, spread over 200 ms as a bowed note rises.
    /// With `everyOtherWindow`, the swells sound only in every other 10 s stretch (a pad whose shimmer
    /// lines up with a period now and then); the windows in `louderWindows` have swells of `louderSwell`
    /// (a fuller passage of a song).
    static func softPulseSummary(bpm: Double, seconds: Double, swell: Float, everyOtherWindow: Bool = false,
                                 louderWindows: Set<Int> = [], louderSwell: Float = 0) -> OnsetPeriodicity.Summary {
        let period = OnsetEnvelope.Config().frameRate * 60 / bpm
        let window = Double(MetricalLevel.pulseWindowHops)
        var nextBeat = 10.0, swellLeft = 0
        return handMadeSummary(seconds: seconds, seed: 43) { t, random in
            let low = Float.random(in: 0...1, using: &random), high = Float.random(in: 0...1, using: &random)
            var mid = Float.random(in: 0...1, using: &random)
            if t >= nextBeat { swellLeft = 20; nextBeat += period }
            let index = Int(t / window)
            let sounding = !everyOtherWindow || index % 2 == 0
            if swellLeft > 0 { mid += sounding ? (louderWindows.contains(index) ? louderSwell : swell) : 0; swellLeft -= 1 }
            return (low, mid, high)
        }
    }

    @Test("Soft notes on a steady grid keep their tempo: the onsets folded over many bars count", arguments: [120.0, 140.0])
    func softPulse(bpm: Double) throws {
        let summary = Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0.3)
        let result = TempoEstimator(config: .init()).estimate(summary)
        let found = try #require(result.bpm, "no tempo (confidence \(result.confidence))")
        #expect(abs(found - bpm) / bpm < 0.02, "read as \(found)")
        // Beat by beat the swells do not show: only the steady-pulse ratio keeps the tempo.
        let level = MetricalLevel(summary, floorQuarterOctaves: TempoEstimator.onsetFloorQuarterOctaves(lufs: nil))
        let period = summary.frameRate * 60 / found
        let onBeat = level.evidence(bpm: found, period: period, autocorrelation: [], sixthOfBeat: 0).onBeatRatio
        let slow = level.slowOnsetRatio(period: period), pulse = level.steadyPulse(period: period)
        #expect(onBeat < MetricalLevel.minOnBeatRatio && slow < MetricalLevel.minSlowOnsetRatio, "r \(onBeat), slow-onset ratio \(slow)")
        #expect(pulse.consistency >= MetricalLevel.minSteadyPulseConsistency, "steady pulse \(pulse)")
        let ripple = TempoEstimator(config: .init()).estimate(Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0))
        #expect(ripple.bpm == nil && ripple.grid == .empty, "the ripple alone: \(ripple.bpm ?? 0) BPM, confidence \(ripple.confidence)")
    }

    @Test("Swells on a grid in every other 10 s window only give no tempo: the pulse must hold", arguments: [120.0, 140.0])
    func pulseNowAndThen(bpm: Double) throws {
        let steady = Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0.3)
        let patchy = Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0.6, everyOtherWindow: true)
        let period = steady.frameRate * 60 / bpm
        let floor = TempoEstimator.onsetFloorQuarterOctaves(lufs: nil)
        let full = MetricalLevel(steady, floorQuarterOctaves: floor).steadyPulse(period: period)
        let half = MetricalLevel(patchy, floorQuarterOctaves: floor).steadyPulse(period: period)
        // Stronger swells in half the windows gather about as much on the grid's phase, in the windows'
        // mean, as the steady track's (kept); their spread shows that the pulse comes and goes.
        #expect(half.ratio - 1 > 0.8 * (full.ratio - 1), "steady \(full), every other window \(half)")
        #expect(half.consistency < MetricalLevel.minSteadyPulseConsistency, "every other window \(half)")
        let result = TempoEstimator(config: .init()).estimate(patchy)
        #expect(result.bpm == nil && result.grid == .empty, "\(result.bpm ?? 0) BPM, confidence \(result.confidence)")
    }

    @Test("Soft notes on a steady grid with two louder passages keep their tempo: only weak windows count against the pulse", arguments: [120.0, 140.0])
    func pulseWithLouderPassages(bpm: Double) throws {
        let summary = Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0.3, louderWindows: [3, 8], louderSwell: 1.5)
        let period = summary.frameRate * 60 / bpm
        let floor = TempoEstimator.onsetFloorQuarterOctaves(lufs: nil)
        let pulse = MetricalLevel(summary, floorQuarterOctaves: floor).steadyPulse(period: period)
        let steady = MetricalLevel(Self.softPulseSummary(bpm: bpm, seconds: 120, swell: 0.3), floorQuarterOctaves: floor).steadyPulse(period: period)
        // The louder windows lift the mean and spread the windows far above it, not below.
        #expect(pulse.ratio > steady.ratio, "steady \(steady), with louder passages \(pulse)")
        #expect(pulse.consistency >= MetricalLevel.minSteadyPulseConsistency, "with louder passages \(pulse)")
        let result = TempoEstimator(config: .init()).estimate(summary)
        let found = try #require(result.bpm, "no tempo (confidence \(result.confidence))")
        #expect(abs(found - bpm) / bpm < 0.02, "read as \(found)")
    }

    @Test("A steady pulse under a busy low band keeps its tempo: the mid band's beats count")
    func busyLowBand() throws {
        let summary = Self.busyLowBandSummary(bpm: 150, seconds: 60)
        let result = TempoEstimator(config: .init()).estimate(summary)
        let found = try #require(result.bpm, "no tempo (confidence \(result.confidence))")
        let related = [75.0, 150.0, 300.0].contains { (level: Double) -> Bool in abs(found - level) / level < 0.02 }
        #expect(related, "read as \(found)")
        #expect(result.confidence > 0.7, "confidence \(result.confidence)")
        // Beat by beat the full band alone does not show the pulse here (its r is below the line); the
        // mid band's r does. Folded over many bars the full band shows it too (the steady-pulse ratio).
        var fullOnly = summary
        fullOnly.midBeatEnvelope = []
        let period = summary.frameRate * 60 / found
        let floor = TempoEstimator.onsetFloorQuarterOctaves(lufs: nil)
        let withMid = MetricalLevel(summary, floorQuarterOctaves: floor)
            .evidence(bpm: found, period: period, autocorrelation: [], sixthOfBeat: 0)
        let fullBand = MetricalLevel(fullOnly, floorQuarterOctaves: floor)
            .evidence(bpm: found, period: period, autocorrelation: [], sixthOfBeat: 0)
        #expect(withMid.onBeatRatio >= MetricalLevel.minOnBeatRatio && fullBand.onBeatRatio < MetricalLevel.minOnBeatRatio,
                "r \(withMid.onBeatRatio) with the mid band, \(fullBand.onBeatRatio) without")
    }

    @Test("The onset floor follows the level: a very quiet ballad keeps its tempo, a very quiet pad stays beatless")
    func quiet() throws {
        #expect(TempoEstimator.onsetFloorQuarterOctaves(lufs: -10) == TempoEstimator.onsetFloorQuarterOctaves(lufs: nil))
        #expect(TempoEstimator.onsetFloorQuarterOctaves(lufs: -23) == 0)
        #expect(TempoEstimator.onsetFloorQuarterOctaves(lufs: -53) == -20)   // 30 dB below: 5 octaves
        let bpm = 96.0
        let ballad = TestSignal.softBallad(bpm: bpm, duration: 40, attack: 0.08, dBFS: -44)
        let lufs = try #require(try LoudnessMeterTests.measure(ballad).integratedLUFS)
        #expect(lufs < -55, "the ballad measures \(lufs) LUFS")
        let tempo = try #require(try Self.estimate(ballad).bpm, "no tempo at \(lufs) LUFS")
        #expect(abs(tempo - bpm) / bpm < 0.01 || abs(tempo - 2 * bpm) / bpm < 0.02, "tempo \(tempo)")
        // Down to −60 dBFS the floor lets the pad's ripple through; what is left of its mid band is a few
        // sparse blips that must not count as beats.
        for dBFS in [-35.0, -45, -50, -55, -60] {
            for duration in [40.0, 90] {
                let pad = try Self.estimate(.ambientPad(duration: duration, dBFS: dBFS))
                #expect(pad.bpm == nil && pad.grid == .empty, "a \(duration) s pad at \(dBFS) dBFS got \(pad.bpm ?? 0) BPM")
            }
        }
    }

    @Test("Silence and very short input get no tempo")
    func degenerate() throws {
        #expect(try Self.estimate(.silence(duration: 20)).bpm == nil)
        #expect(try Self.estimate(.drumGroove(bpm: 120, duration: 3)).bpm == nil)
    }

    @Test("Reported tempi stay inside the configured range")
    func range() throws {
        var config = TempoEstimator.Config()
        config.minBPM = 100
        config.maxBPM = 200
        let result = try Self.estimate(.drumGroove(bpm: 92, duration: 40), config: config)
        let found = try #require(result.bpm)
        #expect(found >= 100 && found <= 200)
        #expect(abs(found - 184) / 184 < 0.02, "92 BPM folded into 100–200 should read 184, got \(found)")
    }
}
