import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("Album gain: measured from stored gating data after each scan")
struct AlbumGainTests {
    /// A 1 kHz stereo tone at `dBFS` on both channels: that many LUFS (EBU Tech 3341 case 1).
    static func tone(lufs: Double, seconds: Double, rate: Int) -> TestSignal {
        .sine(frequency: 1000, dBFS: lufs, duration: seconds, sampleRate: rate, channels: 2)
    }

    final class Library {
        let scratch: String
        var root: String { scratch + "/Music" }
        var out: String { scratch + "/out" }

        init() throws {
            scratch = try FixturePaths.makeTemporaryDirectory()
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: scratch) }

        func write(_ relative: String, _ signal: TestSignal, album: String? = nil, artist: String? = nil) throws {
            let path = root + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var tags: [AudioFileWriter.Tag: String] = [:]
            tags[.album] = album
            tags[.artist] = artist
            try AudioFileWriter.write(signal, to: path, format: .flac16, tags: tags)
        }

        func scan(prune: Bool = false) throws -> ScanSummary {
            var options = ScanOptions(library: root, output: out, visualizer: nil, profile: ProfileConfig(), jobs: 2)
            options.prune = prune
            return try LibraryScanner(options: options, logger: libraryTestLogger).run()
        }

        /// The profile as served (the store's copy), checked equal to the file on disk.
        func profile(_ relative: String) throws -> TrackProfile {
            let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
            let record = try #require(try store.track(relativePath: relative))
            let json = try #require(record.profileJSON)
            let file = try Data(contentsOf: URL(fileURLWithPath: OutputLayout(root: out).profilePath(key: record.key)))
            #expect(file == Data(json.utf8), "the profile file and the store's copy differ for \(relative)")
            return try StoredProfile.read(file)
        }
    }

    @Test("Members at −20 and −10 LUFS and different rates, joined by their tags across folders: libebur128's global-multiple loudness")
    func albumByTags() throws {
        let library = try Library()
        let quiet = Self.tone(lufs: -20, seconds: 12, rate: 44_100), loud = Self.tone(lufs: -10, seconds: 8, rate: 48_000)
        try library.write("Band/Record/01.flac", quiet, album: "Record", artist: "Band")
        try library.write("Band/Record (bonus)/02.flac", loud, album: "Record", artist: "Band")
        try library.write("Loose/03.flac", Self.tone(lufs: -30, seconds: 6, rate: 44_100))
        let summary = try library.scan()
        #expect(summary.analysed == 3 && summary.albumsMeasured == 2)

        let reference = try LoudnessReference.albumLoudness([quiet, loud])
        for path in ["Band/Record/01.flac", "Band/Record (bonus)/02.flac"] {
            let profile = try library.profile(path)
            let album = try #require(profile.album)
            #expect(album.key == "album: Band — Record" && album.tracks == 2 && album.silentTracks == 0)
            #expect(abs(try #require(album.lufs) - reference) < 0.01, "\(album.lufs!) LUFS, libebur128 \(reference) LUFS")
            let gain = try #require(profile.replayGain)
            #expect(abs(try #require(gain.albumGain) - (-18 - reference)) < 0.011)
            // The album peak is the louder member's: −10 dBFS.
            #expect(abs(try #require(gain.albumPeak) - TestSignal.amplitude(dBFS: -10)) < 0.001)
        }
        let quietGain = try #require(try library.profile("Band/Record/01.flac").replayGain)
        let quietTrackGain = try #require(quietGain.trackGain)
        #expect(abs(quietTrackGain - 2) < 0.05 && quietGain.fallbackGain == quietGain.trackGain)
        #expect(abs(try #require(quietGain.trackPeak) - TestSignal.amplitude(dBFS: -20)) < 0.001)

        // Untagged: the folder is the album, and a lone track's album gain is its track gain.
        let loose = try library.profile("Loose/03.flac")
        #expect(loose.album?.key == "folder: Loose")
        #expect(abs(try #require(loose.replayGain?.albumGain) - (try #require(loose.replayGain?.trackGain))) < 0.015)
    }

    @Test("A changed member re-measures its album without analysing the others again; nothing changed measures nothing")
    func incremental() throws {
        let library = try Library()
        let first = Self.tone(lufs: -20, seconds: 10, rate: 44_100)
        try library.write("A/01.flac", first, album: "Same", artist: "X")
        try library.write("A/02.flac", Self.tone(lufs: -16, seconds: 10, rate: 44_100), album: "Same", artist: "X")
        _ = try library.scan()
        let before = try library.profile("A/01.flac")

        let unchanged = try library.scan()
        #expect(unchanged.analysed == 0 && unchanged.albumsMeasured == 0)
        #expect(try library.profile("A/01.flac") == before)

        let louder = Self.tone(lufs: -8, seconds: 6, rate: 48_000)
        try library.write("A/02.flac", louder, album: "Same", artist: "X")
        let path = library.root + "/A/02.flac"
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 10)], ofItemAtPath: path)
        let rescan = try library.scan()
        #expect(rescan.analysed == 1 && rescan.albumsMeasured == 1)
        let after = try library.profile("A/01.flac")
        #expect(after.analyzedAt == before.analyzedAt)
        let reference = try LoudnessReference.albumLoudness([first, louder])
        #expect(abs(try #require(after.album?.lufs) - reference) < 0.01)
        #expect(after.replayGain?.albumGain != before.replayGain?.albumGain)

        // Removing a member re-measures what is left (half the library vanishing needs --prune).
        try FileManager.default.removeItem(atPath: path)
        #expect(try library.scan(prune: true).albumsMeasured == 1)
        let alone = try library.profile("A/01.flac")
        let aloneLUFS = try #require(alone.album?.lufs)
        #expect(alone.album?.tracks == 1 && abs(aloneLUFS - -20) < 0.05)
    }

    @Test("A silent member is left out of its album's loudness and counted as such")
    func silentMember() throws {
        let library = try Library()
        let music = Self.tone(lufs: -14, seconds: 8, rate: 44_100)
        try library.write("B/01.flac", music, album: "Quiet", artist: "Y")
        try library.write("B/02.flac", .silence(duration: 5, channels: 2), album: "Quiet", artist: "Y")
        _ = try library.scan()
        let silent = try library.profile("B/02.flac")
        #expect(silent.silent && silent.replayGain?.trackGain == nil)
        let album = try #require(silent.album)
        #expect(album.tracks == 1 && album.silentTracks == 1)
        #expect(abs(try #require(album.lufs) - -14) < 0.05)
        let member = try library.profile("B/01.flac")
        #expect(silent.replayGain?.albumGain == member.replayGain?.albumGain)
    }

    @Test("The album key: album artist, else artist, and album; the disc only when asked; else the folder")
    func albumKey() {
        var tags = TrackTags()
        tags.artist = "Artist"
        tags.album = "Album"
        tags.discNumber = 2
        #expect(AlbumGain.albumKey(tags: tags, relativePath: "x/1.flac", perDisc: false) == "album: Artist — Album")
        #expect(AlbumGain.albumKey(tags: tags, relativePath: "x/1.flac", perDisc: true) == "album: Artist — Album — disc 2")
        tags.albumArtist = "Various"
        #expect(AlbumGain.albumKey(tags: tags, relativePath: "x/1.flac", perDisc: false) == "album: Various — Album")
        #expect(AlbumGain.albumKey(tags: nil, relativePath: "x/y/1.flac", perDisc: false) == "folder: x/y")
        #expect(AlbumGain.albumKey(tags: nil, relativePath: "1.flac", perDisc: false) == "folder: .")
    }
}
