import Foundation
import Logging
import NaviscanCore
import NaviscanTestSupport
import Testing

/// A decoder that hands out whatever it is given: a backend that lets a hostile value through.
final class ScriptedDecoder: AudioDecoder {
    let info: AudioStreamInfo
    private var samples: [Float]
    private var position = 0

    init(_ samples: [Float], sampleRate: Int = 44_100, channels: Int = 1) {
        self.samples = samples
        info = AudioStreamInfo(sampleRate: sampleRate, channels: channels, frameCount: Int64(samples.count / channels),
                               codec: "pcm_f32", container: "test")
    }

    func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int {
        let frames = min(maxFrames, (samples.count - position) / info.channels)
        for i in 0..<frames * info.channels { buffer[i] = samples[position + i] }
        position += frames * info.channels
        return frames
    }
}

@Suite("Hostile streams: header limits, the sample gate, conversions that cannot trap")
struct HostileStreamTests {
    static let hostileValues: [Float] = [1e17, -1e30, .nan, .infinity, -.infinity, .greatestFiniteMagnitude]

    @Test("Rates of 0, 1 and 2 Hz, 0 or 33 channels, and lengths no file of that size holds are refused; the limits themselves pass")
    func headerLimits() throws {
        func check(rate: Int = 44_100, channels: Int = 2, frames: Int64? = 1000, size: Int = 10_000) throws -> AudioStreamInfo {
            try StreamLimits.check(AudioStreamInfo(sampleRate: rate, channels: channels, frameCount: frames, codec: "pcm_s16", container: "wav"),
                                   fileSize: size, path: "/music/x.wav")
        }
        for rate in [0, 1, 2, 999, 768_001, -44_100] {
            #expect(throws: DecodeError.self, "\(rate) Hz") { try check(rate: rate) }
        }
        for channels in [0, 33, -1] {
            #expect(throws: DecodeError.self, "\(channels) channels") { try check(channels: channels) }
        }
        #expect(throws: DecodeError.self) { try check(frames: 1 << 40, size: 6_500) }
        #expect(throws: DecodeError.self) { try check(frames: -5) }
        for rate in [1_000, 8_000, 768_000] { _ = try check(rate: rate) }
        _ = try check(channels: 32)
        // The densest real case: 65,536 frames of FLAC silence in about ten bytes.
        _ = try check(frames: 65_536 * 100, size: 1_000)
        do {
            _ = try check(rate: 1)
        } catch let error as DecodeError {
            #expect(error.description.contains("/music/x.wav") && error.description.contains("1 Hz"))
        }
        // An estimate only drives progress: an implausible one is dropped, not refused.
        var estimated = AudioStreamInfo(sampleRate: 44_100, channels: 2, frameCount: nil, codec: "mp3", container: "mp3")
        estimated.estimatedFrameCount = 1 << 50
        #expect(try StreamLimits.check(estimated, fileSize: 4_000, path: "x.mp3").estimatedFrameCount == nil)
    }

    @Test("The gate refuses the block with a hostile value, naming the file, the sample and its time", arguments: hostileValues)
    func gate(value: Float) throws {
        var samples = [Float](repeating: 0.25, count: 2 * 44_100 * 3)
        samples[2 * 44_100 * 2 + 1] = value    // 2 s into the right channel
        let gate = SampleGate(ScriptedDecoder(samples, channels: 2), info: ScriptedDecoder(samples, channels: 2).info, path: "/music/f.wv")
        let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * 2)
        defer { block.deallocate() }
        do {
            while try gate.read(into: block, maxFrames: 4096) > 0 {}
            Issue.record("\(value) passed the gate")
        } catch let error as DecodeError {
            guard case .corrupt = error else { Issue.record("\(error)"); return }
            #expect(error.description.contains("/music/f.wv") && error.description.contains("sample \(2 * 44_100 * 2 + 1)")
                    && error.description.contains("0:02.0"), "\(error)")
        }
    }

    @Test("Full scale and +24 dBFS pass the gate unchanged")
    func gateKeepsLoudAudio() throws {
        let samples: [Float] = [1, -1, 15.9, -16, 0.5]
        let gate = SampleGate(ScriptedDecoder(samples), info: ScriptedDecoder(samples).info, path: "x")
        var out = [Float](repeating: 0, count: 8)
        #expect(try gate.read(into: &out, maxFrames: 8) == 5)
        #expect(Array(out.prefix(5)) == samples)
    }

    @Test("Every stage and writer survives hostile samples that no gate stopped: no trap, finite stored values", arguments: hostileValues)
    func stagesWithoutGate(value: Float) throws {
        var samples = TestSignal.sine(frequency: 440, dBFS: -12, duration: 3, sampleRate: 44_100).samples
        for i in stride(from: 5_000, to: samples.count, by: 9_001) { samples[i] = value }
        let scratch = try ScratchDirectory()
        var analysis: TrackAnalysis?
        for encoding in [VisSampleEncoding.uint8, .float16] {
            var config = VisualizerConfig()
            config.encoding = encoding
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: config, profile: ProfileConfig()), logger: Logger(label: "test"))
            let writer = try VisFrameWriter(path: scratch.file("f.vis"), config: config, durability: .deferred)
            let result = try analyzer.analyze(decoder: ScriptedDecoder(samples), visSink: writer)
            try writer.finish(duration: result.duration, sourceSampleRate: 44_100, sourceChannels: 1)
            analysis = result
        }
        let waveform = try #require(analysis?.waveform)
        for bits in [8, 16] {
            let dat = WaveformFile.datBytes(waveform, bits: bits)
            #expect(dat.count > 24)
            _ = WaveformFile.rmsBytes(waveform, bits: bits)
        }
        _ = TrackProfile(relativePath: "x.wav", analysis: try #require(analysis), config: ProfileConfig(), tags: nil)
    }

    @Test("Saturating conversions: NaN is 0, infinities and huge values hold at Int's ends")
    func saturating() {
        #expect(Int(saturating: Double.nan) == 0)
        #expect(Int(saturating: Double.infinity) == .max)
        #expect(Int(saturating: -Double.infinity) == .min)
        #expect(Int(saturating: 1e30) == .max)
        #expect(Int(saturating: Float(-1e17)) == -100_000_000_000_000_000 || Int(saturating: Float(-1e17)) < -99_999_990_000_000_000)
        #expect(Int(saturating: 12.9) == 12)
        #expect(Int(saturating: -12.9) == -12)
    }

    @Test("Log lines: control characters in a message or a metadata value are escaped, one call stays one line")
    func logEscaping() {
        #expect(EscapingLogHandler.escaped("Artist/a\nb.flac") == "Artist/a\\nb.flac")
        #expect(EscapingLogHandler.escaped("x\r\t\u{1B}[31m\u{7F}\u{85}\u{2028}y") == "x\\r\\t\\u{1B}[31m\\u{7F}\\u{85}\\u{2028}y")
        #expect(EscapingLogHandler.escaped("Beyoncé – Halo.flac") == "Beyoncé – Halo.flac")
        final class Capture: @unchecked Sendable { var lines: [String] = [] }
        let capture = Capture()
        struct Recorder: LogHandler {
            let capture: Capture
            var logLevel: Logger.Level = .trace
            var metadata: Logger.Metadata = [:]
            subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
            func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
                capture.lines.append("\(message) \(metadata?["path"].map { "\($0)" } ?? "")")
            }
        }
        let logger = Logger(label: "t") { _ in EscapingLogHandler(Recorder(capture: capture)) }
        logger.warning("failed a\nFAKE error line", metadata: ["path": "x\ny.flac"])
        #expect(capture.lines == ["failed a\\nFAKE error line x\\ny.flac"])
    }

    @Test("Float WavPack, Matroska and CAF files holding 1e17, 1e30, NaN or Inf are refused with a DecodeError, never a trap")
    func hostileFloatFiles() throws {
        let files = FixturePaths.hostile("float-")
        #expect(files.count >= 8, "\(files)")
        let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * 8)
        defer { block.deallocate() }
        for file in files {
            do {
                let decoder = try AudioDecoderFactory.open(path: file)
                while try decoder.read(into: block, maxFrames: 4096) > 0 {}
                Issue.record("\(file) decoded without an error")
            } catch let error as DecodeError {
                #expect(error.description.contains(file), "\(error)")
            }
        }
    }

    @Test("WAV, FLAC and a libavformat container stating 0, 1 or 2 Hz are refused at open, before any decoding")
    func hostileRateFiles() throws {
        let files = FixturePaths.hostile("rate-")
        #expect(files.count >= 7, "\(files)")
        for file in files {
            #expect(throws: DecodeError.self, "\(file)") { _ = try AudioDecoderFactory.open(path: file) }
        }
    }
}
