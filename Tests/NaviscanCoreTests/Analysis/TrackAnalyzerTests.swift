import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Track analysis, end to end")
struct TrackAnalyzerTests {
    @Test("Every format and odd rates/layouts analyse to a readable frame file")
    func everyFormat() throws {
        let scratch = try ScratchDirectory()
        let cases: [(AudioFileWriter.Format, Int, Int)] = [
            (.wav16, 8_000, 1), (.wav24, 192_000, 2), (.wavFloat, 44_100, 6), (.flac16, 48_000, 2),
            (.aiff16, 22_050, 2), (.oggVorbis, 44_100, 2), (.opus, 48_000, 1),
        ]
        let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig()), logger: testLogger)
        for (format, rate, channels) in cases {
            let input = scratch.file("in-\(rate)-\(channels).\(format.fileExtension)")
            let output = scratch.file("out-\(rate)-\(channels).vis")
            try AudioFileWriter.write(.sine(frequency: 1000, dBFS: -6, duration: 2, sampleRate: rate, channels: channels),
                                      to: input, format: format)
            let result = try analyzer.analyze(path: input, visOutput: output)
            let buffer = try VisFrameBuffer(path: output)
            #expect(buffer.frameCount == result.visFrameCount)
            #expect(abs(buffer.duration - 2) < 0.03, "\(format) \(rate) Hz: \(buffer.duration) s")
            #expect(buffer.header.sourceSampleRate == rate && buffer.header.sourceChannels == channels)
            // The tone shows in its band in the middle of the track, whatever the source format.
            var frame = [Float](repeating: 0, count: buffer.bandCount)
            buffer.copyFrame(at: buffer.frameIndex(at: 1.0), into: &frame)
            #expect(frame.firstIndex(of: frame.max()!) == bandIndex(containing: 1000, config: VisualizerConfig()),
                    "\(format) \(rate) Hz × \(channels)")
        }
    }

    @Test("The MP3 fixture's frames cover exactly its gapless duration")
    func mp3Frames() throws {
        let scratch = try ScratchDirectory()
        let output = scratch.file("sine.vis")
        let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig()), logger: testLogger)
        let result = try analyzer.analyze(path: FixturePaths.fixture("mp3/sine_440_660_2s.mp3"), visOutput: output)
        #expect(result.decodedFrames == 88_200)
        #expect(result.visFrameCount == 60)
        let buffer = try VisFrameBuffer(path: output)
        #expect(buffer.duration == 2.0)
        var frame = [Float](repeating: 0, count: 64)
        buffer.copyFrame(at: 30, into: &frame)
        let config = VisualizerConfig()
        // Both tones of the fixture (440 Hz left, 660 Hz right) stand out of the downmix.
        #expect(frame[bandIndex(containing: 440, config: config)] > 0.9)
        #expect(frame[bandIndex(containing: 660, config: config)] > 0.9)
    }

    @Test("A failing input leaves no output file")
    func failureLeavesNothing() throws {
        let scratch = try ScratchDirectory()
        let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig()), logger: testLogger)
        for name in ["broken/truncated.mp3", "broken/random_bytes.flac", "broken/empty.mp3"] {
            #expect(throws: DecodeError.self) {
                try analyzer.analyze(path: FixturePaths.fixture(name), visOutput: scratch.file("out.vis"))
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }
}

@Suite("One decode, every analyser")
struct SinglePassTests {
    @Test("--vis and --dj run in one pass on every format")
    func visAndProfileTogether() throws {
        let scratch = try ScratchDirectory()
        let signal = TestSignal.silence(duration: 1, sampleRate: 48_000, channels: 2)
            .appending(.sine(frequency: 1000, dBFS: -20, duration: 4, sampleRate: 48_000, channels: 2))
        let options = AnalysisOptions(visualizer: VisualizerConfig(), profile: ProfileConfig())
        for format in AudioFileWriter.Format.allCases {
            let input = scratch.file("in.\(format.fileExtension)")
            try AudioFileWriter.write(signal, to: input, format: format)
            let result = try TrackAnalyzer(options: options, logger: testLogger).analyze(path: input, visOutput: scratch.file("out.vis"))
            let frames = try VisFrameBuffer(path: scratch.file("out.vis"))
            #expect(frames.frameCount == result.visFrameCount)
            // A stereo 1 kHz sine at −20 dBFS reads −20 LUFS (the EBU Tech 3341 convention); lossy codecs stray a little.
            let lufs = try #require(result.loudness?.integratedLUFS, "\(format)")
            #expect(abs(lufs - (-20)) < 0.3, "\(format): \(lufs)")
            #expect(abs(result.silence!.silenceEnd - 1) < 0.03, "\(format): \(result.silence!.silenceEnd)")
            #expect(result.tempo?.bpm == nil, "a steady sine has no tempo")
            // The sample peak comes from the silence pass: the same as a meter measuring it itself.
            let meter = try LoudnessMeter(config: .init(), sampleRate: result.stream.sampleRate, layout: result.stream.channelLayout)
            let decoded = try decodeAll(input)
            decoded.samples.withUnsafeBufferPointer {
                meter.process(AudioBlock(samples: $0.baseAddress!, frameCount: $0.count / decoded.info.channels, channels: decoded.info.channels))
            }
            let peak = try #require(result.loudness?.samplePeakDB, "\(format)")
            #expect(peak == meter.finish().samplePeakDB, "\(format)")
            // Lossy codecs ring at the step from silence into the tone: only lossless ones peak at −20 dBFS.
            if ![.oggVorbis, .opus].contains(format) { #expect(abs(peak - (-20)) < 0.01, "\(format): \(peak)") }
        }
        // And the MP3 path.
        let mp3 = try TrackAnalyzer(options: options, logger: testLogger)
            .analyze(path: FixturePaths.fixture("mp3/sine_440_660_2s.mp3"), visOutput: scratch.file("mp3.vis"))
        #expect(mp3.visFrameCount == 60 && mp3.loudness?.integratedLUFS != nil)
    }
}
