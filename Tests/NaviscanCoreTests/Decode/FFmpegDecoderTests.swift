import Foundation
import Logging
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The libavformat/libavcodec backend on the committed fixtures (Fixtures/make-formats.sh): a 3.000 s
/// 997 Hz sine at -20 dBFS (right channel negated) for the lossless formats, and for AAC the same sine
/// from 0.5 s to 2.5 s with a one-sample click at 2.750 s.
@Suite("FFmpeg decoder")
struct FFmpegDecoderTests {
    static let sourceFrames = 132_300

    /// The fixture's left channel, exactly as the script computed it.
    static func sine(_ n: Int) -> Float {
        Float((3276.8 * sin(2 * Double.pi * 997 * Double(n) / 44_100)).rounded()) / 32_768
    }

    @Test("Lossless files decode sample-exact: length, every sample, channel order",
          arguments: [("formats/alac.m4a", "alac", "mp4"), ("formats/monkeys.ape", "ape", "ape"),
                      ("formats/wavpack.wv", "wavpack", "wavpack"), ("formats/tta.tta", "tta", "tta")])
    func losslessIsExact(fixture: String, codec: String, container: String) throws {
        let (info, samples) = try decodeAll(FixturePaths.fixture(fixture))
        #expect(info.codec == codec)
        #expect(info.container == container)
        #expect(info.sampleRate == 44_100 && info.channels == 2)
        #expect(info.channelLayout == [.left, .right])
        #expect(info.frameCount == Int64(Self.sourceFrames))
        #expect(samples.count == Self.sourceFrames * 2)
        var mismatches = 0
        for n in 0..<min(Self.sourceFrames, samples.count / 2)
        where samples[2 * n] != Self.sine(n) || samples[2 * n + 1] != -Self.sine(n) {
            mismatches += 1
        }
        #expect(mismatches == 0, "\(fixture): \(mismatches) frames differ from the source")
    }

    @Test("AAC in MP4 is gapless with an edit list or iTunSMPB: exact length, the click within 1 ms",
          arguments: ["formats/aac_editlist.m4a", "formats/aac_itunsmpb.m4a"])
    func aacIsGapless(fixture: String) throws {
        let (info, samples) = try decodeAll(FixturePaths.fixture(fixture))
        #expect(info.codec == "aac" && info.container == "mp4")
        #expect(info.frameCount == Int64(Self.sourceFrames))
        #expect(samples.count == Self.sourceFrames * 2, "\(fixture): \(samples.count / 2) frames")
        // The click is the largest sample after the sine ends (2.5 s); its source position is 121,275.
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let after = 110_250 + 441
        let peak = left[after...].indices.max { abs(left[$0]) < abs(left[$1]) }!
        #expect(abs(peak - 121_275) <= 44, "\(fixture): click at frame \(peak)")
        // Priming removed: the sine's onset is at 0.5 s, not 1024 or 2112 samples later.
        let onset = left.firstIndex { abs($0) > 0.01 }!
        #expect(abs(onset - 22_050) <= 44, "\(fixture): onset at frame \(onset)")
    }

    @Test("Loudness of the -20 dBFS sine is -20.0 LUFS in every format within 0.1 LU",
          arguments: ["formats/alac.m4a", "formats/monkeys.ape", "formats/wavpack.wv", "formats/tta.tta",
                      "formats/wma.wma", "formats/opus.mka"])
    func loudnessOfKnownSine(fixture: String) throws {
        let analyzer = TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger)
        let analysis = try analyzer.analyze(path: FixturePaths.fixture(fixture))
        let lufs = try #require(analysis.loudness?.integratedLUFS)
        #expect(abs(lufs - -20) <= 0.1, "\(fixture): \(lufs) LUFS")
        // Lossy codecs may trim or pad a little; within 50 ms of 3 s.
        #expect(abs(analysis.duration - 3) < 0.05, "\(fixture): \(analysis.duration) s")
    }

    @Test("WMA and Opus in Matroska decode through libavformat with their codec names")
    func lossyContainers() throws {
        for (fixture, codec, container, rate) in [("formats/wma.wma", "wmav2", "asf", 44_100), ("formats/opus.mka", "opus", "mka", 48_000)] {
            let (info, samples) = try decodeAll(FixturePaths.fixture(fixture))
            #expect(info.codec == codec && info.container == container && info.sampleRate == rate && info.channels == 2)
            #expect(abs(samples.count / 2 - 3 * rate) < rate / 20, "\(fixture): \(samples.count / 2) frames")
        }
    }

    @Test("The sniffer sends the new magic numbers to libavformat", arguments: [
        ("formats/alac.m4a", "MP4/M4A"), ("formats/wma.wma", "WMA/ASF"), ("formats/monkeys.ape", "Monkey's Audio"),
        ("formats/wavpack.wv", "WavPack"), ("formats/tta.tta", "TTA"), ("formats/opus.mka", "Matroska"),
    ])
    func sniffing(fixture: String, name: String) throws {
        #expect(try FormatSniffer.sniff(path: FixturePaths.fixture(fixture)) == .ffmpeg(name))
    }

    @Test("Truncated files give a typed error, never a crash or a hang", arguments: [
        "formats/aac_itunsmpb.m4a", "formats/aac_editlist.m4a", "formats/alac.m4a", "formats/monkeys.ape",
        "formats/wavpack.wv", "formats/tta.tta", "formats/wma.wma", "formats/opus.mka",
    ])
    func truncated(fixture: String) throws {
        let scratch = try ScratchDirectory()
        let data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture(fixture)))
        let cut = scratch.file("cut-" + (fixture as NSString).lastPathComponent)
        try data.prefix(data.count * 6 / 10).write(to: URL(fileURLWithPath: cut))
        let error = #expect(throws: DecodeError.self) { _ = try decodeAll(cut) }
        switch error {
        case .truncated(let path, _, _), .corrupt(let path, _): #expect(path == cut)
        default: Issue.record("\(fixture): expected .truncated or .corrupt, got \(String(describing: error))")
        }
    }

    @Test("A valid header followed by random bytes gives a typed error naming the file", arguments: [
        "formats/aac_itunsmpb.m4a", "formats/alac.m4a", "formats/monkeys.ape", "formats/wavpack.wv",
        "formats/tta.tta", "formats/wma.wma", "formats/opus.mka",
    ])
    func randomBody(fixture: String) throws {
        let scratch = try ScratchDirectory()
        let data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture(fixture)))
        var generator = SeededGenerator(seed: 7)
        var bytes = [UInt8](data.prefix(64))
        bytes += (0..<40_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = scratch.file("random-" + (fixture as NSString).lastPathComponent)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: DecodeError.self) { _ = try decodeAll(path) }
        #expect(error?.path == path)
        #expect(error.map { "\($0)" }?.hasPrefix(path) == true)
    }

    @Test("A DRM-protected (drms) MP4 is refused as unsupported, naming the file")
    func drmIsUnsupported() throws {
        let scratch = try ScratchDirectory()
        var data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("formats/aac_editlist.m4a")))
        // Rename the sample entry 'mp4a' to 'drms', as FairPlay-protected iTunes purchases carry it.
        let entry = Data("mp4a".utf8)
        let range = try #require(data.range(of: entry))
        data.replaceSubrange(range, with: Data("drms".utf8))
        let path = scratch.file("protected.m4p")
        try data.write(to: URL(fileURLWithPath: path))
        #expect(throws: DecodeError.unsupportedCodec(path: path, codec: "DRM-protected (encrypted) audio")) {
            _ = try decodeAll(path)
        }
    }
}
