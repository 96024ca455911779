import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Loudness is physically possible or null, whatever the source holds")
struct HostileLoudnessTests {
    func profile(of signal: TestSignal, format: AudioFileWriter.Format = .wav16, truePeak: Bool = false) throws -> TrackProfile {
        let scratch = try ScratchDirectory()
        let path = scratch.file("s.\(format.fileExtension)")
        try AudioFileWriter.write(signal, to: path, format: format)
        var config = ProfileConfig()
        config.loudness.truePeak = truePeak
        let analysis = try TrackAnalyzer(options: AnalysisOptions(profile: config), logger: testLogger).analyze(path: path)
        let profile = TrackProfile(relativePath: "s", analysis: analysis, config: config)
        _ = try profile.jsonData()   // encodes: every number finite
        try profile.checkRanges()
        return profile
    }

    @Test("Sources below 8 kHz are measured resampled: the same loudness as at 48 kHz", arguments: [1000, 2000, 3000, 3200, 4000, 6000])
    func lowRate(rate: Int) throws {
        let low = try profile(of: .sine(frequency: 300, dBFS: -12, duration: 6, sampleRate: rate))
        let reference = try profile(of: .sine(frequency: 300, dBFS: -12, duration: 6, sampleRate: 48_000))
        let lufs = try #require(low.lufs)
        #expect(abs(lufs - reference.lufs!) < 0.5, "\(rate) Hz: \(lufs) LUFS, 48 kHz: \(reference.lufs!) LUFS")
        #expect(low.gainDB! > -60)
        #expect(low.loudnessNote?.contains("resampled") == true)
        #expect(reference.loudnessNote == nil)
    }

    @Test("8 kHz and above are measured at the native rate")
    func nativeRate() throws {
        let p = try profile(of: .sine(frequency: 300, dBFS: -12, duration: 6, sampleRate: 8000))
        #expect(p.loudnessNote == nil && p.lufs! < 0)
    }

    @Test("A float WAV holding NaN, an infinity or 1e30 is a corrupt file that names itself", arguments: [Float.nan, .infinity, 1e30])
    func nonFiniteSamples(value: Float) throws {
        var signal = TestSignal.sine(frequency: 440, dBFS: -12, duration: 3)
        signal.samples[50_000] = value
        let scratch = try ScratchDirectory()
        let path = scratch.file("broken.wav")
        try AudioFileWriter.write(signal, to: path, format: .wavFloat)
        for options in [AnalysisOptions(profile: ProfileConfig()), AnalysisOptions(visualizer: VisualizerConfig())] {
            #expect {
                _ = try TrackAnalyzer(options: options, logger: testLogger).analyze(path: path, visOutput: scratch.file("o.vis"))
            } throws: { error in
                guard case .corrupt(let p, let reason)? = error as? DecodeError else { return false }
                return p == path && reason.contains("sample 50000")
            }
            #expect(!FileManager.default.fileExists(atPath: scratch.file("o.vis")))
        }
    }

    @Test("A float file above full scale keeps its real loudness, with a note saying why it is above 0")
    func overFullScale() throws {
        let p = try profile(of: .sine(frequency: 440, dBFS: 12, duration: 4), format: .wavFloat, truePeak: true)
        #expect(p.lufs! > 0 && p.lufs! < 20)
        #expect(p.loudnessNote?.contains("full scale") == true)
        #expect(p.truePeakDB! > 11)
    }
}
