import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("DJ profile JSON")
struct TrackProfileTests {
    nonisolated(unsafe) static let schema: [String: Any] = {
        let path = FixturePaths.fixturesDirectory + "/../docs/profile.schema.json"
        let data = try! Data(contentsOf: URL(fileURLWithPath: path))
        return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    }()

    static func profile(of path: String, config: ProfileConfig = ProfileConfig()) throws -> (TrackProfile, [String: Any]) {
        let analyzer = TrackAnalyzer(options: AnalysisOptions(profile: config), logger: testLogger)
        let analysis = try analyzer.analyze(path: path)
        let profile = TrackProfile(relativePath: URL(fileURLWithPath: path).lastPathComponent, analysis: analysis, config: config,
                                   tags: TagReader.read(path: path))
        let json = try JSONSerialization.jsonObject(with: profile.jsonData()) as! [String: Any]
        return (profile, json)
    }

    @Test("Real output validates against docs/profile.schema.json, with exactly the companion's keys")
    func schema() throws {
        let scratch = try ScratchDirectory()
        let groove = scratch.file("groove.flac")
        try AudioFileWriter.write(TestSignal.silence(duration: 1.5).appending(.drumGroove(bpm: 104, duration: 20)),
                                  to: groove, format: .flac16)
        let silent = scratch.file("silent.wav")
        try AudioFileWriter.write(.silence(duration: 5, channels: 2), to: silent, format: .wav16)
        let expectedKeys: Set<String> = [
            "relative_path", "duration", "bpm", "bpm_confidence", "bpm_alternates", "first_beat", "beat_grid", "silence_end",
            "silence_start", "lufs", "loudness_range", "peak_db", "true_peak_db", "gain_db", "loudness_note", "reference_lufs",
            "silent", "sample_rate", "channels", "codec", "analyzer", "analyzed_at", "tags", "replay_gain", "album",
            "start_ramp", "end_ramp", "outro", "audible_end", "key",
        ]
        for path in [groove, silent, FixturePaths.fixture("mp3/sine_440_660_2s.mp3"), FixturePaths.fixture("demo/ambient_pad.ogg"),
                     FixturePaths.fixture("formats/tagged.mp3"), FixturePaths.fixture("formats/alac.m4a")] {
            let (_, json) = try Self.profile(of: path)
            #expect(Set(json.keys) == expectedKeys, "\(path)")
            #expect(validate(json, against: Self.schema) == [], "\(path)")
        }
        // With its album measured (as a scan rewrites it), the profile still validates.
        var measured = try Self.profile(of: groove).0
        measured.album = TrackProfile.Album(key: "album: A — B", lufs: -12.5, tracks: 3, silentTracks: 1)
        measured.replayGain?.albumGain = -5.5
        measured.replayGain?.albumPeak = 0.9
        let measuredJSON = try JSONSerialization.jsonObject(with: measured.jsonData()) as! [String: Any]
        #expect(validate(measuredJSON, against: Self.schema) == [])
        #expect((measuredJSON["replay_gain"] as? [String: Any])?["albumGain"] as? Double == -5.5)
        // The schema is not vacuous: a wrong type and an unknown key are caught.
        var bad = try Self.profile(of: groove).1
        bad["bpm"] = "fast"
        bad["tempo"] = 120
        #expect(validate(bad, against: Self.schema).count == 2)
        // The grid's fields are checked too: a segment without a count and a meter of 1.
        var badGrid = try Self.profile(of: groove).1
        var grid = try #require(badGrid["beat_grid"] as? [String: Any])
        var segments = try #require(grid["segments"] as? [[String: Any]])
        #expect(!segments.isEmpty, "the groove has no beats")
        segments[0]["count"] = nil
        grid["segments"] = segments
        grid["meter"] = 1
        badGrid["beat_grid"] = grid
        #expect(validate(badGrid, against: Self.schema).count == 2)
    }

    @Test("A groove gets its tempo, edges and loudness; gain follows the reference")
    func grooveProfile() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("groove.wav")
        let signal = TestSignal.silence(duration: 1.5).appending(.drumGroove(bpm: 104, duration: 20, firstBeat: 0, dBFS: -8))
            .appending(.silence(duration: 2))
        try AudioFileWriter.write(signal, to: path, format: .wav16)
        var config = ProfileConfig()
        config.referenceLUFS = -14
        let (profile, _) = try Self.profile(of: path, config: config)
        #expect(abs((profile.bpm ?? 0) - 104) < 1)
        #expect(abs(profile.silenceEnd - 1.5) < 0.002)
        #expect(profile.silenceStart > 21 && profile.silenceStart <= 21.5)
        let lufs = try #require(profile.lufs)
        #expect(abs(profile.gainDB! - (-14 - lufs)) < 0.011)
        #expect(profile.referenceLUFS == -14)
        #expect(!profile.silent)
        // On by default: the peak between samples is at least the sample peak.
        #expect(try #require(profile.truePeakDB) >= profile.peakDB! - 0.01)
        #expect(abs(profile.peakDB! - (-8)) < 0.1)
    }

    @Test("Silent input: lufs and gain_db are null and silent is true, written as explicit nulls")
    func silentProfile() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("silent.wav")
        try AudioFileWriter.write(.silence(duration: 5, channels: 2), to: path, format: .wav16)
        let (profile, json) = try Self.profile(of: path)
        #expect(profile.lufs == nil && profile.gainDB == nil && profile.silent)
        #expect(profile.bpm == nil && profile.silenceEnd == 0 && profile.silenceStart == 0)
        #expect(json["lufs"] is NSNull && json["gain_db"] is NSNull && json["bpm"] is NSNull)
    }
}
