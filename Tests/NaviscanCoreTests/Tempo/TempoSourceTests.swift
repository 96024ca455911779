import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The tempo stage runs at its own rate whatever the source's: a click track reads the same tempo,
/// to ±0.1 %, from 44.1, 48 and 96 kHz files, through lossy codecs, with and without the visualizer
/// (whose 44.1 kHz stream the onset stage then halves instead of resampling the source itself).
@Suite("Tempo across sources")
struct TempoSourceTests {
    enum Container: String, CustomStringConvertible {
        case wav, vorbis, mp3
        var description: String { rawValue }
    }

    struct Case: CustomStringConvertible {
        var container: Container
        var rate: Int
        var bpm: Double
        var description: String { "\(container) \(rate) Hz \(bpm) BPM" }
    }

    static let cases: [Case] = [
        Case(container: .wav, rate: 48_000, bpm: 123.4),
        Case(container: .wav, rate: 96_000, bpm: 97.3),
        Case(container: .wav, rate: 44_100, bpm: 141.7),
        Case(container: .vorbis, rate: 48_000, bpm: 118.6),
        Case(container: .vorbis, rate: 96_000, bpm: 132.2),
        Case(container: .mp3, rate: 44_100, bpm: 104.9),
        Case(container: .mp3, rate: 48_000, bpm: 126.1),
    ]

    @Test("Clicks read within ±0.1 % from every source rate and codec", arguments: cases, [false, true])
    func clicks(_ c: Case, withVisualizer: Bool) throws {
        let scratch = try ScratchDirectory()
        let signal = TestSignal.silence(duration: 0.4, sampleRate: c.rate, channels: 2)
            .appending(.clicks(bpm: c.bpm, duration: 40, dBFS: -12, sampleRate: c.rate, channels: 2))
        let path: String
        switch c.container {
        case .wav:
            path = scratch.file("clicks.wav")
            try AudioFileWriter.write(signal, to: path, format: .wav16)
        case .vorbis:
            path = scratch.file("clicks.ogg")
            try AudioFileWriter.write(signal, to: path, format: .oggVorbis)
        case .mp3:
            path = scratch.file("clicks.mp3")
            try AudioFileWriter.writeMP3(signal, to: path)
        }
        let options = AnalysisOptions(visualizer: withVisualizer ? VisualizerConfig() : nil, profile: ProfileConfig())
        let result = try TrackAnalyzer(options: options, logger: testLogger)
            .analyze(path: path, visOutput: withVisualizer ? scratch.file("clicks.vis") : nil)
        #expect(result.stream.sampleRate == c.rate)
        let tempo = try #require(result.tempo)
        let bpm = try #require(tempo.bpm, "\(c): no tempo")
        #expect(abs(bpm - c.bpm) <= 0.001 * c.bpm, "\(c), visualizer \(withVisualizer): read \(bpm)")
        // Every click on a beat: the beats collect several times what the beatless threshold asks.
        #expect(tempo.confidence >= 0.75, "\(c): confidence \(tempo.confidence)")
        // The first beat is the first click, after 0.4 s of silence (lossy encoders may smear it a little).
        let firstBeat = try #require(tempo.firstBeat)
        #expect(abs(firstBeat - 0.4) < 0.04, "\(c): first beat \(firstBeat)")
    }

    @Test("Stereo whose channels cancel (R = −L) still has its tempo; ordinary and one-sided stereo mix as the mean")
    func antiPhase() throws {
        let scratch = try ScratchDirectory()
        let clicks = TestSignal.clicks(bpm: 112.5, duration: 30, dBFS: -12)
        var samples = [Float](repeating: 0, count: clicks.frameCount * 2)
        for i in 0..<clicks.frameCount {
            samples[2 * i] = clicks.samples[i]
            samples[2 * i + 1] = -clicks.samples[i]
        }
        let path = scratch.file("antiphase.wav")
        try AudioFileWriter.write(TestSignal(sampleRate: 44_100, channels: 2, samples: samples), to: path, format: .wav16)
        let result = try TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger).analyze(path: path)
        let bpm = try #require(result.tempo?.bpm, "anti-phase clicks read as no tempo")
        #expect(abs(bpm - 112.5) <= 0.001 * 112.5, "read \(bpm)")

        // 21 frames: eight at a time, then one by one; every frame of the block mixes the same way.
        func mixes(_ left: Float, _ right: Float) -> (Bool, [Float]) {
            let downmixer = Downmixer(channels: 2, maxFrames: 21)
            let frames = [[Float]](repeating: [left, right], count: 21).flatMap { $0 }
            return frames.withUnsafeBufferPointer { buffer in
                let mono = downmixer.process(AudioBlock(samples: buffer.baseAddress!, frameCount: 21, channels: 2))
                return (downmixer.mixesDifference, Array(mono))
            }
        }
        for (left, right, difference, mono) in [(0.5, -0.5, true, 0.5), (0.5, 0.5, false, 0.5), (0.5, 0, false, 0.25), (0.5, -0.3, false, 0.1)] as [(Float, Float, Bool, Float)] {
            let (flipped, values) = mixes(left, right)
            #expect(flipped == difference && values.count == 21 && values.allSatisfy { abs($0 - mono) < 1e-6 },
                    "L \(left), R \(right): \(flipped) \(values)")
        }
    }

    @Test("The onset stage converts any input rate to its own and keeps the band layout")
    func ownRate() throws {
        for rate in [22_050, 44_100, 48_000, 96_000, 8_000] {
            let envelope = try OnsetEnvelope(inputRate: rate)
            #expect(envelope.bandCount == 37, "\(rate) Hz")
            #expect(abs(envelope.frameRate - 22_050.0 / 221) < 1e-9)
        }
    }

    @Test("The onset front end's parameters are part of the profile fingerprint")
    func fingerprint() {
        var config = ProfileConfig()
        let reference = AnalysisFingerprint.profile(config)
        config.onsets.hop = 220
        #expect(AnalysisFingerprint.profile(config) != reference)
        config = ProfileConfig()
        config.onsets.compression = 100
        #expect(AnalysisFingerprint.profile(config) != reference)
    }
}

/// An observer that keeps what it is shown, to check the injected band hook.
private final class BandRecorder: OnsetBandObserver {
    var hops = 0
    var values = 0
    var finished = false
    func observe(levels: UnsafeBufferPointer<Float>) {
        hops += 1
        values += levels.count
    }
    func finish() { finished = true }
}

@Suite("Onset band observer")
struct OnsetBandObserverTests {
    @Test("An injected observer sees every hop's band levels, and the dump writes them as Float32")
    func observerAndDump() throws {
        let scratch = try ScratchDirectory()
        let signal = TestSignal.drumGroove(bpm: 110, duration: 12)
        let path = scratch.file("groove.wav")
        try AudioFileWriter.write(signal, to: path, format: .wav16)
        let recorder = BandRecorder()
        let result = try TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger,
                                       onsetBandObserver: recorder).analyze(path: path)
        #expect(recorder.finished)
        // One hop per 221 samples at 22.05 kHz, 37 bands each.
        let expectedHops = Double(signal.frameCount) / 2 / 221
        #expect(abs(Double(recorder.hops) - expectedHops) < 3, "\(recorder.hops) hops")
        #expect(recorder.values == recorder.hops * 37)
        #expect(result.tempo?.bpm != nil)

        let dumpPath = scratch.file("groove.f32")
        let dump = try OnsetBandDump(path: dumpPath)
        _ = try TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger, onsetBandObserver: dump)
            .analyze(path: path)
        try dump.close()
        let size = try #require(FileManager.default.attributesOfItem(atPath: dumpPath)[.size] as? Int)
        #expect(size == recorder.values * 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) .filter { $0.contains(".tmp") }.isEmpty)
    }
}
