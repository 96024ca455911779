import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Crossfade ramps and the outro's kind, on generated fades and cold ends")
struct CrossfadeRampTests {
    /// A stereo 1 kHz tone whose level (dBFS, = LUFS for this tone) follows `level(t)`.
    static func tone(seconds: Double, rate: Int = 44_100, level: (Double) -> Double) -> TestSignal {
        let n = Int(seconds * Double(rate))
        var samples = [Float](repeating: 0, count: 2 * n)
        for i in 0..<n {
            let t = Double(i) / Double(rate)
            let s = Float(TestSignal.amplitude(dBFS: level(t)) * sin(2 * .pi * 1000 * t))
            samples[2 * i] = s
            samples[2 * i + 1] = s
        }
        return TestSignal(sampleRate: rate, channels: 2, samples: samples)
    }

    static func profile(_ signal: TestSignal) throws -> TrackProfile {
        let scratch = try ScratchDirectory()
        let path = scratch.file("t.wav")
        try AudioFileWriter.write(signal, to: path, format: .wavFloat)
        let analysis = try TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger).analyze(path: path)
        return TrackProfile(relativePath: "t.wav", analysis: analysis, config: ProfileConfig())
    }

    /// "dB seconds;…" as pairs.
    static func pairs(_ ramp: String?) throws -> [(db: Double, seconds: Double)] {
        try #require(ramp).split(separator: ";").map { pair in
            let parts = pair.split(separator: " ").compactMap { Double($0) }
            return (parts[0], parts[1])
        }
    }

    @Test("A fade-out: outro fade_out, audible end where the fade passes 20 LU below the track's loudness")
    func fadeOut() throws {
        // 20 s at −14, then down 8.25 dB a second for 8 s (to −80).
        let p = try Self.profile(Self.tone(seconds: 28) { $0 < 20 ? -14 : -14 - 8.25 * ($0 - 20) })
        #expect(p.outro == .fadeOut)
        let lufs = try #require(p.lufs)
        let expected = 20 + (lufs - CrossfadeRamps.audibleRange - -14) / -8.25
        #expect(abs(try #require(p.audibleEnd) - expected) < 0.5, "audible end \(p.audibleEnd!), expected \(expected)")
        // The end ramp: the louder the level, the earlier before the end it was last reached.
        let end = try Self.pairs(p.endRamp)
        #expect(end.first?.db == -60 && end.count >= 15)
        for (a, b) in zip(end, end.dropFirst()) { #expect(b.db == a.db + 3 && b.seconds >= a.seconds) }
        let at30 = try #require(end.first { $0.db == -30 })
        #expect(abs(at30.seconds - (28 - (20 + 16 / 8.25))) < 0.4, "\(at30)")
    }

    @Test("A cold end: stops from loud, one second of silence after it")
    func coldEnd() throws {
        let p = try Self.profile(Self.tone(seconds: 21) { $0 < 20 ? -12 : -200 })
        #expect(p.outro == .coldEnd)
        #expect(abs(try #require(p.audibleEnd) - 20) < 0.3)
    }

    @Test("A silence tail: music, then eight seconds of silence")
    func silenceTail() throws {
        let p = try Self.profile(Self.tone(seconds: 23) { $0 < 15 ? -12 : -200 })
        #expect(p.outro == .silenceTail)
        #expect(abs(try #require(p.audibleEnd) - 15) < 0.3)
    }

    @Test("A fade-in's start ramp: each level first reached when the fade passes it")
    func startRamp() throws {
        // From −60 up 4.8 dB a second for 10 s (to −12), then steady.
        let p = try Self.profile(Self.tone(seconds: 20) { $0 < 10 ? -60 + 4.8 * $0 : -12 })
        let start = try Self.pairs(p.startRamp)
        #expect(start.last?.db == -12)
        for (a, b) in zip(start, start.dropFirst()) { #expect(b.db == a.db + 3 && b.seconds >= a.seconds) }
        for level in [-45.0, -30, -21] {
            let pair = try #require(start.first { $0.db == level })
            #expect(abs(pair.seconds - (level + 60) / 4.8) < 0.4, "\(pair)")
        }
    }

    @Test("A silent track has no ramps and no outro")
    func silent() throws {
        let p = try Self.profile(.silence(duration: 4, channels: 2))
        #expect(p.startRamp == nil && p.endRamp == nil && p.outro == nil && p.audibleEnd == nil)
    }
}
