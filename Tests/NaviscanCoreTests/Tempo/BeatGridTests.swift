import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Beat grid")
struct BeatGridTests {
    /// F-measure of `estimated` against `reference` beats at ±70 ms, each reference beat matched at
    /// most once, the first 5 s left out (the MIREX / mir_eval convention).
    static func fMeasure(_ reference: [Double], _ estimated: [Double], tolerance: Double = 0.07, skip: Double = 5) -> Double {
        let ref = reference.filter { $0 >= skip }, est = estimated.filter { $0 >= skip }
        if ref.isEmpty && est.isEmpty { return 1 }
        guard !ref.isEmpty, !est.isEmpty else { return 0 }
        var used = Set<Int>(), hits = 0
        for r in ref {
            let match = est.indices.filter { !used.contains($0) && abs(est[$0] - r) <= tolerance }
                .min { abs(est[$0] - r) < abs(est[$1] - r) }
            if let match { used.insert(match); hits += 1 }
        }
        guard hits > 0 else { return 0 }
        let precision = Double(hits) / Double(est.count), recall = Double(hits) / Double(ref.count)
        return 2 * precision * recall / (precision + recall)
    }

    static func grid(_ signal: TestSignal, soundStart: Double = 0) throws -> BeatGrid {
        try TempoEstimatorTests.estimate(signal, soundStart: soundStart).grid
    }

    @Test("Beats and bar lines of a groove in 4/4 and in 3/4", arguments: [(4, 118.0), (3, 138.0)])
    func bars(meter: Int, bpm: Double) throws {
        let beats = stride(from: 0.8, to: 40, by: 60 / bpm).map { $0 }
        let grid = try Self.grid(.barGroove(beats: beats, beatsPerBar: meter, duration: 40))
        let f = Self.fMeasure(beats, grid.beats)
        #expect(f >= 0.9, "beat F-measure \(f)")
        // Constant tempo: one run, which players can extrapolate from first_beat and interval.
        let interval = try #require(grid.interval, "\(grid.segments.count) segments for a steady groove")
        #expect(abs(interval - 60 / bpm) / (60 / bpm) < 0.005)
        #expect(grid.meter == meter)
        let barLines = stride(from: 0, to: beats.count, by: meter).map { beats[$0] }
        let downbeatF = Self.fMeasure(barLines, grid.downbeats)
        #expect(downbeatF >= 0.9, "downbeat F-measure \(downbeatF), first bar line at index \(grid.firstDownbeat ?? -1)")
        #expect(grid.confidence > 0.5)
        // Monotonic, one per beat.
        #expect(zip(grid.beats, grid.beats.dropFirst()).allSatisfy { $1 - $0 > 0.5 * 60 / bpm })
    }

    @Test("Four on the floor: the chord changes alone place the bar lines", arguments: [(4, 124.0), (3, 132.0)])
    func barsFromChordChanges(meter: Int, bpm: Double) throws {
        let grid = try Self.grid(.chordChangeGroove(bpm: bpm, first: 0.5, beatsPerBar: meter, duration: 40))
        let beats = stride(from: 0.5, to: 40, by: 60 / bpm).map { $0 }
        #expect(Self.fMeasure(beats, grid.beats) >= 0.9)
        #expect(grid.meter == meter)
        let barLines = stride(from: 0, to: beats.count, by: meter).map { beats[$0] }
        let downbeatF = Self.fMeasure(barLines, grid.downbeats)
        #expect(downbeatF >= 0.9, "downbeat F-measure \(downbeatF), first bar line at index \(grid.firstDownbeat ?? -1)")
    }

    @Test("A backbeat with nothing marking the one is not read as 3/4 from the start of the sound")
    func backbeatMeter() throws {
        // The accents repeat every two beats (the clap on 2 and 4), and only the change from silence
        // at the first beat marks a bar: bars of 4 from there, or none, but not bars of 3.
        let grid = try Self.grid(.houseLoop(bpm: 124, first: 0.5, duration: 40))
        let beats = stride(from: 0.5, to: 40, by: 60 / 124.0).map { $0 }
        #expect(Self.fMeasure(beats, grid.beats) >= 0.9)
        #expect(grid.meter != 3, "meter \(String(describing: grid.meter)), first bar line \(String(describing: grid.firstDownbeat))")
    }

    @Test("Bar lines from accents: the phase where the accents stand out; flat accents name no bars")
    func barLinesFromAccents() {
        // Kick (low) on every third beat from beat 1, spectral change on the same beats.
        let count = 24
        let marked = (0..<count).map { $0 % 3 == 1 ? 2.0 : 1.0 }
        let flat = [Double](repeating: 1, count: count)
        let bars = BarLines.choose(accents: [marked, flat, marked, marked, marked])
        #expect(bars?.meter == 3 && bars?.firstDownbeat == 1, "\(String(describing: bars))")
        #expect(BarLines.choose(accents: [flat, flat, flat, flat, flat]) == nil)
        // Fewer than four bars of three: none.
        #expect(BarLines.choose(accents: [Array(marked.prefix(11)), Array(flat.prefix(11)), Array(marked.prefix(11)),
                                          Array(marked.prefix(11)), Array(marked.prefix(11))]) == nil)
    }

    @Test("Spectral change: a chord held for two beats changes at every other beat")
    func spectralChange() {
        // 20 blocks a second at 100 hops/s; beats every 10 blocks; the mid groups alternate between
        // two levels every 20 blocks, so the change is at beats 0, 2, 4 …
        let blocks = 200, groups = BandLevels.groupCount
        var codes = [UInt8](repeating: 32, count: blocks * groups)
        for b in 0..<blocks where (b / 20) % 2 == 1 {
            for g in BandLevels.midGroups { codes[b * groups + g] = 96 }
        }
        let frameRate = 100.0
        let beats = (0..<20).map { Double($0 * 10 * BandLevels.blockHops) / frameRate }
        let change = BarLines.spectralChange(BandLevels.Summary(codes: codes), beats: beats, frameRate: frameRate)
        #expect(change.all.count == 20)
        for i in 1..<19 {
            if i % 2 == 0 { #expect(change.mid[i] > 3.9 && change.low[i] == 0, "beat \(i): \(change.mid[i])") } else { #expect(change.all[i] == 0) }
        }
        // Beats past the kept levels are left out.
        #expect(BarLines.spectralChange(BandLevels.Summary(codes: codes), beats: beats + [30, 31], frameRate: frameRate).all.count == 20)
    }

    @Test("An accelerating groove: the grid follows the tempo in several runs")
    func accelerating() throws {
        let beats = TestSignal.rampBeats(first: 0.5, fromBPM: 110, toBPM: 126, duration: 60)
        let result = try TempoEstimatorTests.estimate(.barGroove(beats: beats, beatsPerBar: 4, duration: 60))
        let grid = result.grid
        #expect(result.bpm != nil, "no tempo, confidence \(result.confidence)")
        let f = Self.fMeasure(beats, grid.beats)
        #expect(f >= 0.9, "beat F-measure \(f)")
        #expect(grid.segments.count >= 2)
        #expect(grid.interval == nil)
        let first = try #require(grid.segments.first), last = try #require(grid.segments.last)
        #expect(last.interval < first.interval * 0.93, "intervals \(first.interval) → \(last.interval)")
    }

    @Test("After a silent intro the first beat is the music's first")
    func silentIntro() throws {
        let bpm = 112.0
        let beats = stride(from: 0.25, to: 30, by: 60 / bpm).map { $0 }
        let signal = TestSignal.silence(duration: 8).appending(.barGroove(beats: beats, beatsPerBar: 4, duration: 30))
        let grid = try Self.grid(signal, soundStart: 8.25)
        let first = try #require(grid.firstBeat)
        #expect(first >= 8.2 && abs(first - 8.25) < 0.07, "first beat \(first)")
        #expect(Self.fMeasure(beats.map { $0 + 8 }, grid.beats) >= 0.9)
    }

    @Test("Bass and kick between the beats: the grid is on the hi-hats' beats, not on the off-beats")
    func offbeatBass() throws {
        let bpm = 84.0
        let beats = stride(from: 0.5, to: 40, by: 60 / bpm).map { $0 }
        let result = try TempoEstimatorTests.estimate(.offbeatGroove(bpm: bpm, first: 0.5, duration: 40))
        let tempo = try #require(result.bpm, "no tempo, confidence \(result.confidence)")
        #expect(abs(tempo - bpm) / bpm < 0.04, "tempo \(tempo)")
        let offbeats = beats.map { $0 + 30 / bpm }
        let f = Self.fMeasure(beats, result.grid.beats)
        #expect(f >= 0.9, "beat F-measure \(f); against the off-beats \(Self.fMeasure(offbeats, result.grid.beats))")
    }

    @Test("The phase step moves each run to the offset whose beats carry the high-band onsets")
    func phaseOfRuns() {
        // Hops: hi-hats every 50 hops from 0; loud bass between them (25, 75, …) until hop 1000,
        // then on the hi-hats. Two runs tracked on the bass, each 50 hops apart.
        let n = 2000
        var low = [Float](repeating: 0.01, count: n), high = [Float](repeating: 0.01, count: n)
        for h in stride(from: 0, to: n, by: 50) { high[h] = 1 }
        for h in stride(from: 25, to: 1000, by: 50) { low[h] = 4 }
        for h in stride(from: 1000, to: n, by: 50) { low[h] = 4 }
        let frameRate = 100.0, start = 10
        func seconds(_ hop: Int) -> Double { Double(start + hop) / frameRate }
        let runs = [BeatGrid.Segment(start: seconds(25), interval: 0.5, count: 20),
                    BeatGrid.Segment(start: seconds(1000), interval: 0.5, count: 20)]
        let aligned = BeatPhase.align(runs, low: low, high: high, start: start, frameRate: frameRate)
        #expect(aligned.count == 2)
        // The first run moves half a beat (onto hops 50, 100, …; its last beat would reach the second
        // run and is dropped); the second, already on the hi-hats, stays.
        #expect(abs(aligned[0].start - seconds(50)) < 1e-9, "first run starts at \(aligned[0].start)")
        #expect(aligned[0].count == 19)
        #expect(aligned[1] == runs[1])
        // Constant envelopes say nothing: the runs are kept as tracked.
        let flat = [Float](repeating: 1, count: n)
        #expect(BeatPhase.align(runs, low: flat, high: flat, start: start, frameRate: frameRate) == runs)
    }

    @Test("Off-beat hi-hats over a kick with a click: the kick, low and high at once, keeps the grid on the beat")
    func kickUnderOffbeatHats() {
        // Hops: a kick on every beat (every 50 hops from 0) with its thump in the low band and its
        // beater's click in the high band; open hi-hats between the beats, louder in the high band
        // than the click. A run tracked on the beats must stay there. With the high band weighed
        // alone against the low (0.30 : 1.05, before the kick term) the hats won and the run moved
        // half a beat.
        let n = 2000
        var low = [Float](repeating: 0.01, count: n), high = [Float](repeating: 0.01, count: n)
        for h in stride(from: 0, to: n, by: 50) { low[h] = 4; high[h] = 1.5 }
        for h in stride(from: 25, to: n, by: 50) { high[h] = 2.5 }
        let frameRate = 100.0, start = 10
        let run = [BeatGrid.Segment(start: Double(start + 50) / frameRate, interval: 0.5, count: 30)]
        #expect(BeatPhase.align(run, low: low, high: high, start: start, frameRate: frameRate) == run)
        // Moved half a beat by hand, onto the hats, it comes back to the kicks.
        var moved = run
        moved[0].start += 0.25
        let back = BeatPhase.align(moved, low: low, high: high, start: start, frameRate: frameRate)
        #expect(back.count == 1 && abs(back[0].start - (run[0].start + 0.5)) < 1e-9, "moved run starts at \(back.first?.start ?? -1)")
    }

    @Test("A drone has an empty grid")
    func drone() throws {
        let result = try TempoEstimatorTests.estimate(.ambientPad(duration: 40))
        #expect(result.grid == .empty)
        #expect(result.grid.beats.isEmpty && result.grid.downbeats.isEmpty && result.grid.firstBeat == nil)
        let silence = try TempoEstimatorTests.estimate(.silence(duration: 20))
        #expect(silence.grid.beatCount == 0)
    }

    @Test("Runs: jitter and a lone stray beat stay in one run, a tempo change starts another")
    func segments() {
        var jitter: UInt32 = 7
        func wobble() -> Double {
            jitter = jitter &* 1_664_525 &+ 1_013_904_223
            return (Double(jitter % 1000) / 1000 - 0.5) * 0.01
        }
        var steady: [Double] = []
        for k in 0..<200 { steady.append(1.0 + Double(k) * 0.5 + wobble()) }
        #expect(BeatGrid.segments(of: steady).count == 1)
        steady[100] += 0.06
        let withStray = BeatGrid.segments(of: steady)
        #expect(withStray.count == 1 && withStray[0].count == 200)
        let slower: [Double] = (0..<100).map { 1.0 + Double($0) * 0.5 }
        let faster: [Double] = (1...100).map { 50.5 + Double($0) * 0.45 }
        let change = slower + faster
        let two = BeatGrid.segments(of: change)
        #expect(two.count == 2)
        #expect(two.reduce(0) { $0 + $1.count } == 200)
        #expect(abs(two[0].interval - 0.5) < 1e-6 && abs(two[1].interval - 0.45) < 1e-6)
        // A stretch where the tracker wandered is bridged when the run after it continues the one before.
        let before: [Double] = (0..<40).map { 1.0 + Double($0) * 0.5 }
        let astray: [Double] = (0..<8).map { 21.0 + Double($0) * 0.44 }
        let after: [Double] = (0..<40).map { 25.0 + Double($0) * 0.5 }
        let wandering = before + astray + after
        let bridged = BeatGrid.bridged(BeatGrid.segments(of: wandering))
        #expect(bridged.count == 1 && bridged[0].count == 88, "\(bridged)")
        // A line whose first beat falls a hair before the track starts loses that beat; a grid never
        // lists a beat before 0 (a stored profile with one would be refused as damaged).
        let early = BeatGrid.extend([BeatGrid.Segment(start: -0.0022, interval: 0.5, count: 10)], from: 0, to: 4.6)
        #expect(early == [BeatGrid.Segment(start: 0.4978, interval: 0.5, count: 9)], "\(early)")
    }

    @Test("A 3-hour steady track's grid stays small, and round-trips through JSON")
    func compact() throws {
        let beats = (0..<(3 * 3600 * 2)).map { 0.25 + Double($0) * 0.5 }
        let grid = BeatGrid(segments: BeatGrid.segments(of: beats), meter: 4, firstDownbeat: 1, confidence: 0.9)
        #expect(grid.segments.count == 1 && grid.beatCount == beats.count)
        let data = try JSONEncoder().encode(grid)
        #expect(data.count < 400, "\(data.count) bytes")
        let back = try JSONDecoder().decode(BeatGrid.self, from: data)
        #expect(back == grid)
        #expect(abs(back.beats.last! - beats.last!) < 0.001)
        #expect(back.downbeats.count == beats.count / 4)
        // A grid of a version this naviscan does not know is refused.
        let future = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\"version\":1", with: "\"version\":2")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BeatGrid.self, from: Data(future.utf8)) }
    }

    @Test("A stored profile whose grid names more beats than the track can hold is refused")
    func damagedGrid() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("groove.wav")
        let beats = stride(from: 0.5, to: 20, by: 0.5).map { $0 }
        try AudioFileWriter.write(.barGroove(beats: beats, beatsPerBar: 4, duration: 20), to: path, format: .wav16)
        let json = try TrackProfileTests.profile(of: path).1
        #expect(try StoredProfile.read(JSONSerialization.data(withJSONObject: json)).beatGrid?.beatCount ?? 0 > 30)
        for segment: [String: Any] in [["start": 0.5, "interval": 0.5, "count": 1_000_000_000_000],
                                        ["start": 0.5, "interval": 0.5, "count": 200], ["start": -1, "interval": 0.5, "count": 4]] {
            var damaged = json
            var grid = try #require(damaged["beat_grid"] as? [String: Any])
            grid["segments"] = [segment]
            damaged["beat_grid"] = grid
            #expect(throws: StoredProfileError.self) { try StoredProfile.read(JSONSerialization.data(withJSONObject: damaged)) }
        }
    }
}
