import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// Every fixture in Fixtures/formats carries the same tags, written by Fixtures/make-formats.sh the
/// way taggers write them in each format.
@Suite("Tag reader")
struct TagReaderTests {
    static var expected: TrackTags {
        var t = TrackTags()
        t.title = "Sine à 997 Hz"
        t.artist = "Test Artist"
        t.album = "Known Signals"
        t.albumArtist = "Various Artists"
        t.discNumber = 1
        t.discTotal = 2
        t.trackNumber = 3
        t.trackTotal = 12
        t.year = 2024
        t.genre = "Test Tone"
        t.musicBrainzTrackID = "5f4f0f49-3c2b-4a38-9b6e-0a7d1b2c3d4e"
        t.musicBrainzAlbumID = "0c3e8a2e-1d4b-4e6f-8a9b-1c2d3e4f5a6b"
        t.replayGainTrackGain = -6.5
        t.replayGainTrackPeak = 0.100006
        t.replayGainAlbumGain = -7.25
        t.replayGainAlbumPeak = 0.125
        t.bpm = 128
        return t
    }

    @Test("Tags read back exactly: ID3v2, Vorbis comments (FLAC, Ogg, Opus), APEv2 (APE, WavPack)",
          arguments: ["formats/tagged.mp3", "formats/tagged.flac", "formats/tagged.ogg", "formats/tagged.opus",
                      "formats/monkeys.ape", "formats/wavpack.wv"])
    func everyField(fixture: String) {
        #expect(TagReader.read(path: FixturePaths.fixture(fixture)) == Self.expected)
    }

    @Test("MP4 atoms and freeform atoms read back (FFmpeg 5.1 does not expose the tmpo atom)",
          arguments: ["formats/alac.m4a", "formats/aac_itunsmpb.m4a"])
    func mp4(fixture: String) {
        var expected = Self.expected
        expected.bpm = nil
        #expect(TagReader.read(path: FixturePaths.fixture(fixture)) == expected)
    }

    @Test("ASF attributes read back (WM/TrackNumber has no total)")
    func asf() {
        var expected = Self.expected
        expected.trackTotal = nil
        #expect(TagReader.read(path: FixturePaths.fixture("formats/wma.wma")) == expected)
    }

    @Test("Untagged, missing and non-audio files give empty tags, not an error")
    func noTags() throws {
        #expect(TagReader.read(path: FixturePaths.fixture("mp3/sine_440_660_2s.mp3")).isEmpty)
        #expect(TagReader.read(path: FixturePaths.fixture("broken/random_bytes.flac")).isEmpty)
        #expect(TagReader.read(path: "/nonexistent/naviscan/file.mp3").isEmpty)
    }

    @Test("Tags never change the analysis: tagged and untagged copies of the same audio analyse alike")
    func tagsDoNotChangeAnalysis() throws {
        let scratch = try ScratchDirectory()
        let tagged = FixturePaths.fixture("formats/wavpack.wv")
        // WavPack keeps its APEv2 tag at the end: cutting it off leaves the same audio, untagged.
        let data = try Data(contentsOf: URL(fileURLWithPath: tagged))
        let footer = try #require(data.range(of: Data("APETAGEX".utf8)))
        let plain = scratch.file("plain.wv")
        try data.prefix(upTo: footer.lowerBound).write(to: URL(fileURLWithPath: plain))
        #expect(TagReader.read(path: plain).isEmpty)
        let analyzer = TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger)
        let a = try analyzer.analyze(path: tagged)
        let b = try analyzer.analyze(path: plain)
        #expect(a.decodedFrames == b.decodedFrames)
        #expect(a.loudness == b.loudness)
        #expect(a.silence == b.silence)
    }

    @Test("The profile JSON carries the tags under a tags object")
    func profileJSON() throws {
        let path = FixturePaths.fixture("formats/tagged.flac")
        let analyzer = TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger)
        let profile = TrackProfile(relativePath: "tagged.flac", analysis: try analyzer.analyze(path: path),
                                   config: ProfileConfig(), tags: TagReader.read(path: path))
        let json = try #require(JSONSerialization.jsonObject(with: profile.jsonData()) as? [String: Any])
        let tags = try #require(json["tags"] as? [String: Any])
        #expect(tags["title"] as? String == "Sine à 997 Hz")
        #expect(tags["track_number"] as? Int == 3)
        #expect(tags["replaygain_album_gain"] as? Double == -7.25)
        #expect(tags.count == 17)
    }
}
