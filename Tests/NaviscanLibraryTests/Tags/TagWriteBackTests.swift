import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// `naviscan tag` through the real executable, read back with mutagen (Debian's python3-mutagen,
/// scripts/ci/tagdump.py), not with TagLib that wrote the tags.
@Suite("naviscan tag: ReplayGain and BPM into the files' own tags", .serialized)
struct TagWriteBackTests {
    /// Two albums in six containers: MP3, FLAC, Ogg Vorbis (Album A); Opus, M4A, WavPack (Album B);
    /// and the demo's 120 BPM groove, for the BPM field.
    struct TaggedLibrary {
        let root: String
        var library: String { root + "/Music" }
        static let albums = ["Album A": ["tagged.mp3", "tagged.flac", "tagged.ogg"],
                             "Album B": ["tagged.opus", "aac_itunsmpb.m4a", "wavpack.wv"],
                             "Groove": ["groove_120bpm.mp3"]]
        var files: [String] { Self.albums.sorted { $0.key < $1.key }.flatMap { album in album.value.map { "\(album.key)/\($0)" } } }

        init() throws {
            root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-tag")
            for (album, names) in Self.albums {
                try FileManager.default.createDirectory(atPath: library + "/" + album, withIntermediateDirectories: true)
                for name in names {
                    let source = album == "Groove" ? "demo/" + name : "formats/" + name
                    try FileManager.default.copyItem(atPath: FixturePaths.fixture(source), toPath: library + "/\(album)/\(name)")
                }
                guard album != "Groove" else { continue }
                let set = try Self.python(["--set-album", album, "Tester"] + names.map { library + "/\(album)/\($0)" })
                #expect(set.status == 0, "\(set.stderr)")
            }
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }

        static func python(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try NaviscanProcess.run([FixturePaths.fixturesDirectory + "/../scripts/ci/tagdump.py"] + arguments, program: "/usr/bin/python3")
        }

        /// Each file's tags as mutagen reads them.
        func tags() throws -> [String: [String: String]] {
            let run = try Self.python(files.map { library + "/" + $0 })
            #expect(run.status == 0, "\(run.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: [String: Any]])
            var result: [String: [String: String]] = [:]
            for (path, fields) in object { result[String(path.dropFirst(library.count + 1))] = fields.mapValues { "\($0)" } }
            return result
        }

        func bytes() throws -> [String: Data] {
            Dictionary(uniqueKeysWithValues: try files.map { ($0, try Data(contentsOf: URL(fileURLWithPath: library + "/" + $0))) })
        }

        /// A hash of every decoded sample (libsndfile, mpg123 or libavcodec, as a scan decodes).
        func decodedAudio() throws -> [String: Int] {
            let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * 8)
            defer { block.deallocate() }
            var result: [String: Int] = [:]
            for file in files {
                let decoder = try AudioDecoderFactory.open(path: library + "/" + file)
                var hasher = Hasher()
                var frames = 0
                while true {
                    let n = try decoder.read(into: block, maxFrames: 4096)
                    if n == 0 { break }
                    frames += n
                    for i in 0..<(n * decoder.info.channels) { hasher.combine(block[i].bitPattern) }
                }
                hasher.combine(frames)
                result[file] = hasher.finalize()
            }
            return result
        }

        /// The output gain in an Opus file's OpusHead (RFC 7845: int16 at offset 16 of the header).
        func opusOutputGain(_ file: String) throws -> Int16 {
            let data = try Data(contentsOf: URL(fileURLWithPath: library + "/" + file))
            let head = try #require(data.range(of: Data("OpusHead".utf8)))
            return Int16(bitPattern: UInt16(data[head.lowerBound + 16]) | UInt16(data[head.lowerBound + 17]) << 8)
        }

        func profiles() throws -> [String: TrackProfile] {
            let tracks = try LibraryStore(path: OutputLayout(root: library + "/.naviscan").databasePath).allTracks()
            return Dictionary(uniqueKeysWithValues: try tracks.map { ($0.relativePath, try StoredProfile.read(Data(try #require($0.profileJSON).utf8))) })
        }
    }

    static func decibels(_ text: String?) -> Double? {
        guard var text else { return nil }
        if let range = text.range(of: " dB") { text.removeSubrange(range) }
        return Double(text)
    }

    @Test("Every container gets the keys its players read, equal to the profile; audio, other tags and the Opus header untouched; a second run and the next scan change nothing")
    func writeBack() throws {
        let lib = try TaggedLibrary()
        defer { lib.remove() }
        let original = try lib.bytes()
        let audio = try lib.decodedAudio()
        let opusGain = try lib.opusOutputGain("Album B/tagged.opus")
        let before = try lib.tags()

        #expect(try NaviscanProcess.run(["scan", lib.library, "-q"]).status == 0)
        #expect(try lib.bytes() == original, "a scan changed a file")
        let dry = try NaviscanProcess.run(["tag", lib.library, "--dry-run"])
        #expect(dry.status == 0 && dry.stderr.contains("7 files would be tagged"), "\(dry.stderr)")
        #expect(try lib.bytes() == original, "--dry-run changed a file")

        let run = try NaviscanProcess.run(["tag", lib.library, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let tags = try lib.tags()
        let profiles = try lib.profiles()
        for file in lib.files {
            let fields = try #require(tags[file], "\(file)")
            let gain = try #require(profiles[file]?.replayGain, "\(file)")
            for (key, value) in [("REPLAYGAIN_TRACK_GAIN", gain.trackGain), ("REPLAYGAIN_ALBUM_GAIN", gain.albumGain)] {
                let written = try #require(Self.decibels(fields[key]), "\(file) \(key): \(fields)")
                #expect(abs(written - (try #require(value))) <= 0.01, "\(file) \(key)")
                #expect(fields[key]?.hasSuffix(" dB") == true, "\(file) \(key): Navidrome removes the first \"dB\"")
            }
            for (key, value) in [("REPLAYGAIN_TRACK_PEAK", gain.trackPeak), ("REPLAYGAIN_ALBUM_PEAK", gain.albumPeak)] {
                #expect(abs((Double(fields[key] ?? "") ?? -1) - (try #require(value))) <= 1e-6, "\(file) \(key): \(fields)")
            }
            // Everything else the file said is still there (title, artist, the album the test set).
            for key in ["TITLE", "ARTIST", "ALBUM"] {
                #expect(fields[key] == before[file]?[key], "\(file) lost \(key)")
            }
            #expect(fields["_pictures"] == before[file]?["_pictures"] ?? "0", "\(file) lost a picture")
            if !file.hasPrefix("Groove") { #expect(fields["ALBUM"] == String(file.prefix(7))) }
        }
        #expect(tags["Album A/tagged.mp3"]?["_id3_version"] == "2.4")
        #expect(before["Album A/tagged.flac"]?["_pictures"] == "1" && tags["Album A/tagged.flac"]?["_pictures"] == "1")
        // BPM rounded, as Navidrome reads it (TBPM in an MP3).
        #expect(tags["Groove/groove_120bpm.mp3"]?["BPM"] == "120", "\(tags["Groove/groove_120bpm.mp3"] ?? [:])")
        // Opus: R128 gains in Q7.8 to -23 LUFS, and the header's output gain unchanged.
        let opus = try #require(profiles["Album B/tagged.opus"])
        #expect(tags["Album B/tagged.opus"]?["R128_TRACK_GAIN"] == String(Int(((-23 - (try #require(opus.lufs))) * 256).rounded())))
        #expect(tags["Album B/tagged.opus"]?["R128_ALBUM_GAIN"] != nil)
        #expect(try lib.opusOutputGain("Album B/tagged.opus") == opusGain)
        #expect(try lib.decodedAudio() == audio, "the decoded audio changed")

        // Idempotent: nothing to write, no byte changes; the store knows the new files.
        let tagged = try lib.bytes()
        let again = try NaviscanProcess.run(["tag", lib.library])
        #expect(again.status == 0 && again.stderr.contains("0 files tagged, 7 already up to date"), "\(again.stderr)")
        #expect(try lib.bytes() == tagged)
        let scan = try NaviscanProcess.run(["scan", lib.library, "--json", "-q"])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any])
        #expect(summary["analysed"] as? Int == 0 && summary["unchanged"] as? Int == 7, "\(scan.stdout)")

        // MPD's MixRamp fields on request, equal to the profile's ramps; once written, nothing to do.
        #expect(try NaviscanProcess.run(["tag", lib.library, "--mixramp", "-q"]).status == 0)
        let ramped = try lib.tags()
        for file in lib.files {
            let profile = try #require(profiles[file])
            #expect(ramped[file]?["MIXRAMP_START"] == profile.startRamp && profile.startRamp != nil, "\(file): \(ramped[file] ?? [:])")
            #expect(ramped[file]?["MIXRAMP_END"] == profile.endRamp && profile.endRamp != nil, "\(file)")
            #expect(ramped[file]?["REPLAYGAIN_TRACK_GAIN"] == tags[file]?["REPLAYGAIN_TRACK_GAIN"])
        }
        let rampedAgain = try NaviscanProcess.run(["tag", lib.library, "--mixramp"])
        #expect(rampedAgain.stderr.contains("0 files tagged, 7 already up to date"), "\(rampedAgain.stderr)")
    }

    @Test("Why a track is not tagged: the library's words name no flag and no command (the CLI adds those), each reason its own code")
    func reasonsNameNoFlag() {
        let reasons: [TagWriteBack.Reason] = [.analysisFailed, .noProfile, .changedSinceAnalysis, .formatWithoutTags,
                                              .folderOutsideLibrary(realFolder: "/elsewhere"), .symlinkNotFollowed,
                                              .symlinkOutsideLibrary(target: "/elsewhere/a.flac"), .unreadable("r"), .writeFailed("w")]
        for reason in reasons {
            #expect(!reason.description.contains("--") && !reason.description.contains("`"), "\(reason)")
        }
        #expect(Set(reasons.map(\.code)).count == reasons.count)
    }

    @Test("A read-only file is a clear error and stays byte-identical while the others are tagged (exit 1)")
    func readOnlyFile() throws {
        let lib = try TaggedLibrary()
        defer { lib.remove() }
        #expect(try NaviscanProcess.run(["scan", lib.library, "-q"]).status == 0)
        let locked = lib.library + "/Album A/tagged.flac"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: locked))
        #expect(chmod(locked, 0o444) == 0)
        let run = try NaviscanProcess.run(["tag", lib.library])
        #expect(run.status == 1)
        #expect(run.stderr.contains("failed Album A/tagged.flac: the file is read-only"), "\(run.stderr)")
        #expect(run.stderr.contains("6 files tagged"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: locked)) == bytes)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: lib.library + "/Album A").filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("SIGKILL at any moment of a write-back leaves every file whole: the old one or the new one")
    func killedWriteBack() throws {
        let lib = try TaggedLibrary()
        defer { lib.remove() }
        #expect(try NaviscanProcess.run(["scan", lib.library, "-q"]).status == 0)
        let audio = try lib.decodedAudio()
        for delay in [0, 2_000, 5_000, 10_000, 20_000, 40_000] {
            let (process, _, _) = try NaviscanProcess.start(["tag", lib.library, "-q"])
            usleep(useconds_t(delay))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(try lib.decodedAudio() == audio, "after a kill at \(delay) µs")
            let tags = try lib.tags()
            #expect(tags.count == 7 && tags.filter { !$0.key.hasPrefix("Groove") }.values.allSatisfy { $0["TITLE"] != nil }, "after a kill at \(delay) µs")
        }
        let finish = try NaviscanProcess.run(["tag", lib.library])
        #expect(finish.status == 0, "\(finish.stderr)")
        #expect(try lib.decodedAudio() == audio)
    }
}

/// `naviscan tag --key`: the detected key into each container's key field, in the notation asked for.
@Suite("naviscan tag --key: the key into the files' own tags", .serialized)
struct TagKeyTests {
    @Test("--key writes TKEY, INITIALKEY or the initialkey atom equal to the profile's key; an equal key in another notation is not rewritten; the audio is untouched")
    func keyWriteBack() throws {
        let root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-tagkey")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let library = root + "/Music"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        // Am F C G with bass and drums: the key stage reads A minor (KeyDetectorTests).
        let loop = [TestSignal.Chord(9, minor: true), TestSignal.Chord(5, minor: false), TestSignal.Chord(0, minor: false), TestSignal.Chord(7, minor: false)]
        let source = root + "/loop.wav"
        try AudioFileWriter.write(TestSignal.chordLoop(loop, bars: 8), to: source, format: .wav16)
        let encodings = ["loop.mp3": ["-c:a", "libmp3lame", "-q:a", "2"], "loop.flac": ["-c:a", "flac"], "loop.ogg": ["-c:a", "libvorbis"],
                         "loop.opus": ["-c:a", "libopus"], "loop.m4a": ["-c:a", "aac"], "loop.wv": ["-c:a", "wavpack"]]
        let ffmpeg = try #require(["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: FileManager.default.isExecutableFile), "ffmpeg is missing: run make deps")
        for (name, codec) in encodings {
            let run = try NaviscanProcess.run(["-v", "error", "-i", source] + codec + [library + "/" + name], program: ffmpeg)
            #expect(run.status == 0, "\(name): \(run.stderr)")
        }
        let files = encodings.keys.sorted()
        #expect(try NaviscanProcess.run(["scan", library, "-q"]).status == 0)
        let store = try LibraryStore(path: OutputLayout(root: library + "/.naviscan").databasePath)
        var keys: [String: MusicalKey] = [:]
        for track in try store.allTracks() {
            let profile = try StoredProfile.read(Data(try #require(track.profileJSON).utf8))
            keys[track.relativePath] = try #require(profile.key?.musicalKey, "\(track.relativePath) has no key")
        }
        #expect(keys.count == files.count)
        func decoded(_ file: String) throws -> [Float] {
            let decoder = try AudioDecoderFactory.open(path: library + "/" + file)
            var samples: [Float] = []
            var block = [Float](repeating: 0, count: 4096 * decoder.info.channels)
            while true {
                let n = try block.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, maxFrames: 4096) }
                if n == 0 { break }
                samples += block[0..<(n * decoder.info.channels)]
            }
            return samples
        }
        let audio = try Dictionary(uniqueKeysWithValues: files.map { ($0, try decoded($0)) })

        let refused = try NaviscanProcess.run(["tag", library, "--key-notation", "camelot"])
        #expect(refused.status != 0 && refused.stderr.contains("--key-notation needs --key"), "\(refused.stderr)")
        let run = try NaviscanProcess.run(["tag", library, "--key", "--key-notation", "camelot", "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        let dump = try TagWriteBackTests.TaggedLibrary.python(files.map { library + "/" + $0 })
        let tags = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: [String: Any]])
        for file in files {
            let fields = tags[library + "/" + file] ?? [:]
            #expect(fields["INITIALKEY"] as? String == keys[file]?.camelot, "\(file): \(fields)")
            #expect(try decoded(file) == audio[file], "\(file): the decoded audio changed")
        }
        #expect(tags[library + "/loop.m4a"]?["_ATOM_INITIALKEY"] as? String == "----:com.apple.iTunes:initialkey")
        // The same key in the standard notation is the same key: nothing to rewrite.
        let again = try NaviscanProcess.run(["tag", library, "--key"])
        #expect(again.status == 0 && again.stderr.contains("0 files tagged, 6 already up to date"), "\(again.stderr)")
        // Without --key nothing about keys is written or removed.
        let plain = try NaviscanProcess.run(["tag", library])
        #expect(plain.stderr.contains("0 files tagged, 6 already up to date"), "\(plain.stderr)")
    }
}
