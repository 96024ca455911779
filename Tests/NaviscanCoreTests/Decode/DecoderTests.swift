import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Decoders")
struct DecoderTests {
    static let losslessFormats: [AudioFileWriter.Format] = [.wav16, .wav24, .wavFloat, .flac16, .flac24, .aiff16]

    @Test("WAV, AIFF and FLAC decode sample-exact at every rate and channel count",
          arguments: losslessFormats, [8_000, 44_100, 48_000, 96_000])
    func losslessLengthIsExact(format: AudioFileWriter.Format, rate: Int) throws {
        let scratch = try ScratchDirectory()
        for channels in [1, 2, 6] {
            // An odd length, so no block size divides it.
            let signal = TestSignal.sweep(from: 50, to: Double(rate) / 2.5, duration: 1.2345, sampleRate: rate, channels: channels)
            let path = scratch.file("s\(channels).\(format.fileExtension)")
            try AudioFileWriter.write(signal, to: path, format: format)
            let (info, samples) = try decodeAll(path)
            #expect(info.sampleRate == rate)
            #expect(info.channels == channels)
            #expect(info.frameCount == Int64(signal.frameCount))
            #expect(samples.count == signal.samples.count)
            // Content survives: 16-bit quantisation is the largest error allowed.
            let worst = zip(samples, signal.samples).map { abs($0 - $1) }.max() ?? 0
            #expect(worst < 1.0 / 16_384)
        }
    }

    @Test("Ogg Vorbis and Opus decode through libsndfile with the right length")
    func lossyOggFormats() throws {
        let scratch = try ScratchDirectory()
        for (format, rate) in [(AudioFileWriter.Format.oggVorbis, 44_100), (.opus, 48_000)] {
            let signal = TestSignal.sine(frequency: 440, dBFS: -12, duration: 3, sampleRate: rate, channels: 2)
            let path = scratch.file("s.\(format.fileExtension)")
            try AudioFileWriter.write(signal, to: path, format: format)
            let (info, samples) = try decodeAll(path)
            #expect(info.codec == (format == .opus ? "opus" : "vorbis"))
            #expect(info.container == "ogg")
            let frames = samples.count / info.channels
            // Within 20 ms of the source (codec priming handled by libsndfile).
            #expect(abs(frames - signal.frameCount) <= rate / 50, "\(format): \(frames) vs \(signal.frameCount)")
        }
    }

    @Test("The LAME MP3 fixture decodes gapless to its 2.000 s source length")
    func mp3IsGapless() throws {
        let (info, samples) = try decodeAll(FixturePaths.fixture("mp3/sine_440_660_2s.mp3"))
        #expect(info.codec == "mp3")
        #expect(info.sampleRate == 44_100 && info.channels == 2)
        let frames = samples.count / 2
        // Source: 88,200 frames. One MP3 frame (1,152) is the allowed slack; LAME's tag makes it exact.
        #expect(abs(frames - 88_200) <= 1_152, "decoded \(frames) frames")
        #expect(info.frameCount.map { abs($0 - 88_200) <= 1_152 } == true)
        // Encoder delay removed: the sine (phase 0) starts at sample 0, so the first samples are near 0
        // and the level is right from the first MP3 frame on.
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        #expect(abs(left[0]) < 0.05)
        let rms = sqrt(left[0..<1152].map { $0 * $0 }.reduce(0, +) / 1152)
        #expect(abs(rms - 0.25 / Float(2).squareRoot()) < 0.02, "first-frame RMS \(rms)")
    }

    @Test("The backend is chosen by content, not by extension")
    func sniffsByContent() throws {
        let scratch = try ScratchDirectory()
        let flacNamedMP3 = scratch.file("really-flac.mp3")
        try AudioFileWriter.write(.sine(frequency: 440, duration: 0.5), to: flacNamedMP3, format: .flac16)
        #expect(try AudioDecoderFactory.open(path: flacNamedMP3).info.codec == "flac")
        let mp3NamedFLAC = scratch.file("really-mp3.flac")
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("mp3/sine_440_660_2s.mp3"), toPath: mp3NamedFLAC)
        #expect(try AudioDecoderFactory.open(path: mp3NamedFLAC).info.codec == "mp3")
    }

    @Test("Broken inputs give typed errors, never a crash")
    func brokenInputs() throws {
        let empty = FixturePaths.fixture("broken/empty.mp3")
        #expect(throws: DecodeError.emptyFile(path: empty)) { try AudioDecoderFactory.open(path: empty) }

        let random = FixturePaths.fixture("broken/random_bytes.flac")
        #expect(throws: DecodeError.unrecognizedFormat(path: random)) { try AudioDecoderFactory.open(path: random) }

        let truncated = FixturePaths.fixture("broken/truncated.mp3")
        let error = #expect(throws: DecodeError.self) { _ = try decodeAll(truncated) }
        guard case .truncated(_, let expected, let decoded) = error else {
            Issue.record("expected .truncated, got \(String(describing: error))")
            return
        }
        #expect(expected == 264_600)      // the 6 s the LAME header announces
        #expect(decoded < expected / 2)

        let missing = "/nonexistent/naviscan/track.flac"
        #expect(throws: DecodeError.self) { try AudioDecoderFactory.open(path: missing) }
        #expect(throws: DecodeError.self) { try AudioDecoderFactory.open(path: FixturePaths.fixturesDirectory) }
    }

    @Test("A FLAC cut short is reported as damaged or truncated")
    func truncatedFLAC() throws {
        let scratch = try ScratchDirectory()
        let whole = scratch.file("whole.flac")
        try AudioFileWriter.write(.sweep(from: 100, to: 10_000, duration: 4, channels: 2), to: whole, format: .flac16)
        let data = try Data(contentsOf: URL(fileURLWithPath: whole))
        let cut = scratch.file("cut.flac")
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: cut))
        let error = #expect(throws: DecodeError.self) { _ = try decodeAll(cut) }
        switch error {
        case .truncated, .corrupt: break
        default: Issue.record("expected .truncated or .corrupt, got \(String(describing: error))")
        }
    }

    @Test("Known but unsupported containers are named")
    func unsupportedCodecs() throws {
        let scratch = try ScratchDirectory()
        let dsf = scratch.file("song.dsf")
        var bytes: [UInt8] = Array("DSD ".utf8) + [28, 0, 0, 0, 0, 0, 0, 0]
        bytes += [UInt8](repeating: 0, count: 64)
        try Data(bytes).write(to: URL(fileURLWithPath: dsf))
        #expect(throws: DecodeError.unsupportedCodec(path: dsf, codec: "DSD (DSF/DFF)")) {
            try AudioDecoderFactory.open(path: dsf)
        }
    }

    @Test("A 0 s WAV decodes to zero frames")
    func zeroLengthWAV() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("empty.wav")
        try AudioFileWriter.write(TestSignal(sampleRate: 44_100, channels: 2, samples: []), to: path, format: .wav16)
        let (info, samples) = try decodeAll(path)
        #expect(info.frameCount == 0)
        #expect(samples.isEmpty)
    }

    @Test("6-channel files report the 5.1 layout")
    func surroundLayout() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("surround.flac")
        try AudioFileWriter.write(.sine(frequency: 200, duration: 0.2, channels: 6), to: path, format: .flac16)
        let info = try AudioDecoderFactory.open(path: path).info
        #expect(info.channelLayout == [.left, .right, .center, .lfe, .leftSurround, .rightSurround])
    }
}
