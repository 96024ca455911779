import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// A library of three sounds, four tracks each, scanned for real: a drum groove at four tempi,
/// sustained pads on four roots, bright buzzing melodies in four keys; plus the same groove in a
/// second container, a silent file and a one-second file.
struct StyledLibrary {
    let root: String
    var library: String { root + "/Music" }
    var data: String { root + "/data" }
    static let styles = ["Grooves", "Pads", "Buzz"]

    init() throws {
        root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-similar")
        for style in Self.styles + ["Odd"] {
            try FileManager.default.createDirectory(atPath: library + "/" + style, withIntermediateDirectories: true)
        }
        for (i, bpm) in [96.0, 110, 124, 138].enumerated() {
            try AudioFileWriter.write(.drumGroove(bpm: bpm, duration: 8), to: library + "/Grooves/\(i).flac", format: .flac16)
        }
        // The first groove again, in another container: the same recording.
        try AudioFileWriter.write(.drumGroove(bpm: 96, duration: 8), to: library + "/Odd/groove copy.wav", format: .wav16)
        for (i, root) in [98.0, 110, 123.5, 131].enumerated() {
            try AudioFileWriter.write(TestSignal.pad(root: root, duration: 8), to: library + "/Pads/\(i).flac", format: .flac16)
        }
        for (i, note) in [440.0, 523, 587, 659].enumerated() {
            try AudioFileWriter.write(TestSignal.buzz(note: note, duration: 8), to: library + "/Buzz/\(i).flac", format: .flac16)
        }
        try AudioFileWriter.write(.silence(duration: 5), to: library + "/Odd/silence.flac", format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: library + "/Odd/short.flac", format: .flac16)
        let options = ScanOptions(library: library, output: data, visualizer: nil, profile: ProfileConfig(), jobs: 2)
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        precondition(summary.analysed == 15, "\(summary)")
    }

    func style(_ path: String) -> String { String(path.prefix { $0 != "/" }) }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

@Suite("Similar tracks: features from the scan's decode, nearest neighbours, mixes, paths", .serialized)
struct SimilarTracksTests {
    @Test("Tracks of one sound come back nearer than tracks of another; never the query itself; shuffled features would not pass")
    func stylesCluster() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let store = try LibraryStore(path: OutputLayout(root: lib.data).databasePath)
        let tracks = try SimilarTracks(store: store)
        let styled = try store.featureRows().map(\.relativePath).filter { StyledLibrary.styles.contains(lib.style($0)) }
        #expect(styled.count == 12)
        var hits = 0, total = 0
        for path in styled {
            let neighbours = try tracks.similar(to: path, count: 3).filter { !$0.duplicate && !$0.relativePath.hasPrefix("Odd/") }
            #expect(!neighbours.contains { $0.relativePath == path })
            #expect(neighbours.first.map { lib.style($0.relativePath) } == lib.style(path), "\(path): \(neighbours.map(\.relativePath))")
            hits += neighbours.filter { lib.style($0.relativePath) == lib.style(path) }.count
            total += neighbours.count
        }
        #expect(Double(hits) / Double(total) >= 0.9, "precision@3 \(hits)/\(total)")
        // The same check on vectors dealt out to the wrong tracks fails: the features carry the sound.
        let rows = try store.featureRows().filter { styled.contains($0.relativePath) }
        let shuffled = rows.indices.map { (rows[$0].relativePath, rows[($0 * 5 + 1) % rows.count].features) }
        let index = SimilarityIndex(rows: shuffled, normalisation: try #require(try store.similarityNormalisation()))
        let shuffledHits = styled.filter { path in
            index.nearest(to: path, count: 1)?.first.map { lib.style($0.id) == lib.style(path) } ?? false
        }.count
        #expect(shuffledHits < 8, "shuffled features still found \(shuffledHits) of 12")
    }

    @Test("The same audio in two containers: first, similarity 1 and marked as the same recording; never both in a mix")
    func sameRecording() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let tracks = try SimilarTracks(store: try LibraryStore(path: OutputLayout(root: lib.data).databasePath))
        let first = try #require(try tracks.similar(to: "Grooves/0.flac", count: 1).first)
        #expect(first.relativePath == "Odd/groove copy.wav")
        #expect(first.similarity == 1 && first.duplicate, "\(first.similarity)")
        let mix = try tracks.mix(from: "Grooves/0.flac", count: 8)
        #expect(mix.count == 8 && mix.first?.relativePath == "Grooves/0.flac")
        #expect(!mix.contains { $0.relativePath == "Odd/groove copy.wav" })
        #expect(Set(mix.map(\.relativePath)).count == mix.count)
        // One album (here: one folder) gives at most two of an 8-track mix while others fit.
        #expect(mix.filter { $0.relativePath.hasPrefix("Grooves/") }.count <= 2, "\(mix.map(\.relativePath))")
    }

    @Test("Silence, a one-second file and unknown tracks have no vector and are never neighbours; a library of one answers an empty list")
    func badInput() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let store = try LibraryStore(path: OutputLayout(root: lib.data).databasePath)
        let tracks = try SimilarTracks(store: store)
        #expect(throws: SimilarityError.noFeatures("Odd/silence.flac")) { try tracks.similar(to: "Odd/silence.flac", count: 5) }
        #expect(throws: SimilarityError.noFeatures("Odd/short.flac")) { try tracks.similar(to: "Odd/short.flac", count: 5) }
        #expect(throws: SimilarityError.unknownTrack("Odd/ghost.flac")) { try tracks.similar(to: "Odd/ghost.flac", count: 5) }
        let all = try tracks.similar(to: "Pads/0.flac", count: 100)
        #expect(all.count == 12 && !all.contains { $0.relativePath.hasPrefix("Odd/s") })
        #expect(all.allSatisfy { (0...1).contains($0.similarity) })
        #expect(try store.featureRows().allSatisfy { $0.features.values.allSatisfy(\.isFinite) })

        let one = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-one")
        defer { try? FileManager.default.removeItem(atPath: one) }
        try AudioFileWriter.write(TestSignal.pad(root: 110, duration: 6), to: one + "/only.flac", format: .flac16)
        let options = ScanOptions(library: one, output: one + "/.naviscan", visualizer: nil, profile: ProfileConfig(), jobs: 1)
        _ = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(try SimilarTracks(store: try LibraryStore(path: OutputLayout(root: one + "/.naviscan").databasePath)).similar(to: "only.flac", count: 5).isEmpty)
    }

    @Test("A sonic path runs from one sound to the other: its ends as asked, its middle between them")
    func sonicPath() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let tracks = try SimilarTracks(store: try LibraryStore(path: OutputLayout(root: lib.data).databasePath))
        let path = try tracks.path(from: "Pads/0.flac", to: "Grooves/3.flac", count: 6)
        #expect(path.count == 6 && path.first?.relativePath == "Pads/0.flac" && path.last?.relativePath == "Grooves/3.flac")
        #expect(Set(path.map(\.relativePath)).count == 6)
        // Similarity to the start falls along the path (allowing one step of noise).
        let similarity = path.map(\.similarity)
        #expect(similarity[1] >= similarity[4] && similarity[2] >= similarity[5], "\(similarity)")
    }

    @Test("Features of an older version are measured again alone: frames, profiles and waveforms stay as they were, the new vectors equal a full analysis's")
    func featuresVersionBump() throws {
        let root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-features")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let library = root + "/Music", data = root + "/data"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        try AudioFileWriter.write(TestSignal.pad(root: 110, duration: 6), to: library + "/pad.flac", format: .flac16)
        try AudioFileWriter.write(TestSignal.buzz(note: 440, duration: 6), to: library + "/buzz.flac", format: .flac16)
        try AudioFileWriter.write(.drumGroove(bpm: 120, duration: 6), to: library + "/groove.wav", format: .wav16)
        let options = ScanOptions(library: library, output: data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 3)
        let layout = OutputLayout(root: data)
        let store = try LibraryStore(path: layout.databasePath)
        let before = try store.allTracks()
        func outputs(_ track: TrackRecord) throws -> [Data] {
            try [layout.visPath(key: track.key), layout.profilePath(key: track.key), layout.waveformPath(key: track.key)].map {
                try Data(contentsOf: URL(fileURLWithPath: $0))
            }
        }
        let files = try before.map(outputs)
        let stamps = before.map { OutputStamp.of(path: layout.visPath(key: $0.key)) }

        // As a store of a naviscan whose features had another version (or none yet) leaves it.
        let sql = try NaviscanProcess.run(["-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('DELETE FROM track_features'); db.execute('UPDATE track SET features_version = 0'); db.execute('DELETE FROM meta WHERE name = \\'similarity_snapshot\\''); db.commit()",
                                           layout.databasePath], program: "/usr/bin/python3")
        try #require(sql.status == 0, "\(sql.stderr)")
        #expect(try store.featureRows().isEmpty)
        let rescan = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(rescan.analysed == 3, "\(rescan)")

        let after = try store.allTracks()
        for (old, new) in zip(before, after) {
            #expect(new.featuresVersion == SonicFeatures.version)
            let a = try #require(old.features.flatMap(SonicFeatures.init(data:))), b = try #require(new.features.flatMap(SonicFeatures.init(data:)))
            // Measured from the same samples; tempo, its confidence and the loudness range come from the
            // stored profile, which keeps them to 0.01.
            for (i, (x, y)) in zip(a.values, b.values).enumerated() {
                let fromProfile = [SonicFeatures.Group.rhythm.offset, SonicFeatures.Group.rhythm.offset + 1, SonicFeatures.Group.dynamics.offset].contains(i)
                #expect(abs(x - y) <= (fromProfile ? 0.006 : 1e-4 * max(1, abs(x))), "\(old.relativePath) component \(i): \(x) then \(y)")
            }
            #expect(new.profileJSON == old.profileJSON && new.analyzedAt == old.analyzedAt && new.visStamp == old.visStamp)
        }
        #expect(try after.map(outputs) == files, "an output file was written again")
        #expect(after.map { OutputStamp.of(path: layout.visPath(key: $0.key)) } == stamps)
        // Nothing stale is left: the next scan analyses nothing.
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 0)
    }

    @Test("naviscan mix writes an M3U8 whose every entry resolves from the playlist's folder and decodes; similar --json and exit statuses")
    func commands() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let playlist = lib.library + "/Playlists/like pad.m3u8"
        let mix = try NaviscanProcess.run(["mix", lib.library, "Pads/1.flac", "--data", lib.data, "--count", "5", "--out", playlist])
        #expect(mix.status == 0, "\(mix.stderr)")
        let lines = try String(contentsOfFile: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        let entries = lines.filter { !$0.hasPrefix("#") }
        #expect(entries.count == 5 && entries.first == "../Pads/1.flac", "\(entries)")
        for entry in entries {
            let resolved = URL(fileURLWithPath: entry, relativeTo: URL(fileURLWithPath: lib.library + "/Playlists/")).standardizedFileURL.path
            #expect(FileManager.default.fileExists(atPath: resolved), "\(entry)")
            #expect((try? AudioDecoderFactory.open(path: resolved)) != nil, "\(entry) does not decode")
            // ffmpeg reads it as players do (make deps installs it).
            let ffprobe = try #require(["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first(where: FileManager.default.isExecutableFile),
                                       "ffprobe is missing: run make deps (it installs ffmpeg)")
            let probe = try NaviscanProcess.run(["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", resolved], program: ffprobe)
            #expect(probe.status == 0 && (Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 7, "\(entry)")
        }
        let similar = try NaviscanProcess.run(["similar", lib.library, lib.library + "/Buzz/2.flac", "--data", lib.data, "--count", "3", "--json"])
        #expect(similar.status == 0, "\(similar.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(similar.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 3 && list.allSatisfy { ($0["relative_path"] as? String)?.hasPrefix("Buzz/") == true }, "\(list)")
        let silent = try NaviscanProcess.run(["similar", lib.library, "Odd/silence.flac", "--data", lib.data])
        #expect(silent.status == 1 && silent.stderr.contains("has no sound features"), "\(silent.stderr)")
        let path = try NaviscanProcess.run(["path", lib.library, "Pads/0.flac", "Buzz/0.flac", "--data", lib.data, "--count", "4", "--json"])
        #expect(path.status == 0, "\(path.stderr)")
    }

    @Test("On a store mounted read-only, with no current snapshot to read, similar still answers (measured, not recorded)")
    func readOnlyStore() throws {
        guard canMountTmpfs else {
            print("skipped: this machine does not let the tests mount")
            return
        }
        let lib = try StyledLibrary()
        defer { lib.remove() }
        let ask = { (data: String) in try NaviscanProcess.run(["similar", lib.library, "Buzz/2.flac", "--data", data, "--count", "3", "--json"]) }
        let writable = try ask(lib.data)
        try #require(writable.status == 0, "\(writable.stderr)")
        let forget = try NaviscanProcess.run(["-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(\"DELETE FROM meta WHERE name LIKE 'similarity%'\"); db.commit(); db.execute('PRAGMA wal_checkpoint(TRUNCATE)'); db.close()",
                                              lib.data + "/naviscan.db"], program: "/usr/bin/python3")
        try #require(forget.status == 0, "\(forget.stderr)")
        let mounted = lib.data + "-ro"
        try FileManager.default.createDirectory(atPath: mounted, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mounted) }
        try #require(try system(["mount", "--bind", lib.data, mounted]) == 0)
        defer { _ = try? system(["umount", mounted]) }
        try #require(try system(["mount", "-o", "remount,ro,bind", mounted]) == 0)
        let readOnly = try ask(mounted)
        #expect(readOnly.status == 0, "\(readOnly.stderr)")
        #expect(readOnly.stdout == writable.stdout)
    }

    @Test("mix and path --out refuse, unless --force, a file that is not a playlist and anything in the store's folder; a playlist is replaced")
    func playlistTargets() throws {
        let lib = try StyledLibrary()
        defer { lib.remove() }
        func mix(_ out: String, _ extra: [String] = []) throws -> (status: Int32, stdout: String, stderr: String) {
            try NaviscanProcess.run(["mix", lib.library, "Pads/1.flac", "--data", lib.data, "--count", "4", "--out", out] + extra)
        }
        let song = lib.library + "/Pads/0.flac"
        let songBytes = try Data(contentsOf: URL(fileURLWithPath: song))
        let overSong = try mix(song)
        #expect(overSong.status == 2 && overSong.stderr.contains("\(song) exists and is not a playlist") && overSong.stderr.contains("--force"), "\(overSong.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: song)) == songBytes)

        // Any command opens the store (and may record its normalisation), so it is compared by what it holds.
        let store = OutputLayout(root: lib.data).databasePath
        let tracks = try LibraryStore(path: store).allTrackPaths()
        let overStore = try NaviscanProcess.run(["path", lib.library, "Pads/0.flac", "Buzz/0.flac", "--data", lib.data, "--count", "3", "--out", store])
        #expect(overStore.status == 2 && overStore.stderr.contains("\(store) is inside the store's folder \(lib.data)"), "\(overStore.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)).starts(with: Array("SQLite format 3\0".utf8)))
        #expect(try LibraryStore(path: store).allTrackPaths() == tracks)
        // Anything in that folder, not only files that are there already.
        let newInStore = try mix(lib.data + "/mix.m3u8")
        #expect(newInStore.status == 2 && !FileManager.default.fileExists(atPath: lib.data + "/mix.m3u8"), "\(newInStore.stderr)")

        // Text that is not a playlist is refused too; an M3U (extended or plain) is replaced.
        let notes = lib.root + "/notes.txt"
        try "buy milk\n".write(toFile: notes, atomically: false, encoding: .utf8)
        #expect(try mix(notes).status == 2)
        let plain = lib.root + "/plain.m3u"
        try "# my list\nPads/0.flac\n".write(toFile: plain, atomically: false, encoding: .utf8)
        #expect(try mix(plain).status == 0)
        #expect(try mix(plain).status == 0, "naviscan's own playlist is a playlist")

        // --force replaces a copy of a song.
        let copy = lib.root + "/copy.flac"
        try songBytes.write(to: URL(fileURLWithPath: copy))
        let forced = try mix(copy, ["--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try String(contentsOfFile: copy, encoding: .utf8).hasPrefix("#EXTM3U\n"))
    }

    @Test("An M3U8 of hostile names, read back by ffmpeg's playlist reader: every entry it opens is the intended file, none is forged; a name with a line break is left out and said so")
    func hostileNames() throws {
        let root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-m3u")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/Music/Set"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let files: [(String, TestSignal)] = [("#1 hash.flac", .drumGroove(bpm: 96, duration: 8)), ("#EXTINF:1,x.flac", .drumGroove(bpm: 124, duration: 8)),
                                             ("new\nline.flac", TestSignal.buzz(note: 523, duration: 8)), ("cr title.flac", TestSignal.buzz(note: 440, duration: 8)),
                                             ("plain.flac", TestSignal.pad(root: 98, duration: 8))]
        for (name, signal) in files { try AudioFileWriter.write(signal, to: folder + "/" + name, format: .flac16) }
        // A title and an artist whose line breaks would end the #EXTINF line and start a forged entry.
        let tag = try NaviscanProcess.run(["-c", "import mutagen.flac, sys; f = mutagen.flac.FLAC(sys.argv[1]); f['title'] = 'Tune\\rhttp://example.invalid/forged.flac'; f['artist'] = 'Band\\n#EXTINF:1,x'; f.save()",
                                           folder + "/cr title.flac"], program: "/usr/bin/python3")
        try #require(tag.status == 0, "\(tag.stderr)")
        let options = ScanOptions(library: root + "/Music", output: root + "/data", visualizer: nil, profile: ProfileConfig(), jobs: 2)
        try #require(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 5)

        let playlist = folder + "/mix.m3u8"
        let mix = try NaviscanProcess.run(["mix", root + "/Music", "Set/plain.flac", "--data", root + "/data", "--count", "5", "--out", playlist, "--json"])
        #expect(mix.status == 0, "\(mix.stderr)")
        #expect(mix.stderr.contains("line.flac out of the playlist"), "\(mix.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(mix.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 5)
        for entry in list {
            #expect(entry["in_playlist"] as? Bool == (entry["relative_path"] as? String != "Set/new\nline.flac"), "\(entry)")
        }

        // ffmpeg reads an M3U8 as HLS, a segment per entry; the end tag keeps it from treating the
        // list as live (which would start at the third entry from the end).
        let bytes = try Data(contentsOf: URL(fileURLWithPath: playlist))
        #expect(!bytes.contains(UInt8(ascii: "\r")))
        let finished = folder + "/read.m3u8"
        try (bytes + Data("#EXT-X-ENDLIST\n".utf8)).write(to: URL(fileURLWithPath: finished))
        let ffmpeg = try #require(["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first(where: FileManager.default.isExecutableFile),
                                  "ffmpeg is missing: run make deps (it installs ffmpeg)")
        // Files only (a forged URL is logged as requested, never fetched); the log goes to a file, as
        // it can outgrow a pipe nobody reads until ffmpeg exits.
        let log = root + "/ffmpeg.log"
        let read = try NaviscanProcess.run(["-c", #"exec "$@" 2>"$0""#, log, ffmpeg, "-nostdin", "-nostats", "-v", "verbose", "-protocol_whitelist", "file",
                                            "-allowed_extensions", "ALL", "-f", "hls", "-i", finished, "-f", "null", "-"], program: "/bin/sh")
        let requests = try String(contentsOfFile: log, encoding: .utf8)
        #expect(read.status == 0, "\(requests.suffix(2000))")
        let opened = requests.matches(of: #/HLS request for url '(.*)', offset/#).map {
            URL(fileURLWithPath: String($0.output.1)).standardizedFileURL.path
        }
        let intended = ["#1 hash.flac", "#EXTINF:1,x.flac", "cr title.flac", "plain.flac"].map { folder + "/" + $0 }
        #expect(opened.sorted() == intended.sorted(), "\(opened)")
    }
}

/// `mix --harmonic`: a band playing I–IV–V–I in eight major keys around the circle of fifths, scanned
/// for real; what the mix may choose is known from the keys the scan stored.
@Suite("Harmonic mixes", .serialized)
struct HarmonicMixTests {
    @Test("With --harmonic every step goes to a key that mixes with the one before whenever an unused track has one; the CLI and its JSON say each key")
    func harmonicMix() throws {
        let root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-harmonic")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let library = root + "/Music", data = root + "/data"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        // C G D A E B F# Db: 8B 9B 10B 11B 12B 1B 2B 3B; different tempi so none is the same recording.
        for (i, tonic) in [0, 7, 2, 9, 4, 11, 6, 1].enumerated() {
            let loop = [0, 5, 7, 0].map { TestSignal.Chord((tonic + $0) % 12, minor: false) }
            try AudioFileWriter.write(TestSignal.chordLoop(loop, bpm: 100 + 3 * Double(i), bars: 8), to: library + "/key\(i).flac", format: .flac16)
        }
        let options = ScanOptions(library: library, output: data, visualizer: nil, profile: ProfileConfig(), jobs: 2)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 8)
        let store = try LibraryStore(path: OutputLayout(root: data).databasePath)
        let keys = try store.keys(of: (0..<8).map { "key\($0).flac" })
        #expect(keys.count == 8, "\(keys)")
        // The library holds keys that do not mix, so the rule has something to refuse.
        #expect(keys.values.contains { a in keys.values.contains { !a.isHarmonicNeighbour(of: $0) } })
        let tracks = try SimilarTracks(store: store)
        for seed in ["key0.flac", "key3.flac"] {
            let mix = try tracks.mix(from: seed, count: 5, harmonic: true)
            #expect(mix.count == 5 && mix.first?.relativePath == seed)
            #expect(mix.allSatisfy { $0.key == keys[$0.relativePath] }, "the mix reports the stored keys")
            for step in 1..<mix.count {
                let before = try #require(keys[mix[step - 1].relativePath]), next = try #require(keys[mix[step].relativePath])
                let unused = keys.filter { path, _ in !mix.prefix(step).contains { $0.relativePath == path } }
                let couldMix = unused.values.contains { $0.isHarmonicNeighbour(of: before) }
                #expect(next.isHarmonicNeighbour(of: before) || !couldMix,
                        "\(seed): step \(step) went from \(before.camelot) to \(next.camelot) though an unused track mixes")
            }
        }
        let run = try NaviscanProcess.run(["mix", library, "key0.flac", "--data", data, "--count", "4", "--harmonic", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 4 && list.allSatisfy { item in (item["key"] as? String).flatMap(MusicalKey.init) == keys[item["relative_path"] as? String ?? ""] },
                "\(list)")
        let text = try NaviscanProcess.run(["mix", library, "key0.flac", "--data", data, "--count", "3", "--harmonic"])
        let seedKey = try #require(keys["key0.flac"])
        #expect(text.status == 0 && text.stdout.contains(seedKey.camelot), "\(text.stdout)")
    }
}
