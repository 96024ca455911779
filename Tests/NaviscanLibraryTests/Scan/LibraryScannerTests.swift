import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("Library scan", .serialized)
struct LibraryScannerTests {
    @Test("A full scan, then incremental runs: unchanged, touched, re-parameterised, pruned")
    func incremental() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let out = library.root + "/.naviscan"

        // 1. Everything good is analysed; every bad file is a recorded failure; the scan goes on.
        let first = try library.scan()
        #expect(first.total == library.good.count + library.bad.count - 1)   // the dangling link is unreadable, not a file
        #expect(first.analysed == library.good.count)
        #expect(Set(first.failures.map(\.relativePath)) == Set(library.bad))
        #expect(first.unsupported == 1 && first.unsupportedFiles == library.unsupported)
        #expect(first.symlinkLoops == 1)
        #expect(try consistencyProblems(out: out) == [])
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        for path in library.good {
            let record = try #require(try store.track(relativePath: path), "\(path)")
            #expect(record.status == .ok && record.duration != nil)
            let profile = try Data(contentsOf: URL(fileURLWithPath: OutputLayout(root: out).profilePath(key: record.key)))
            #expect(String(decoding: profile, as: UTF8.self).contains("\"relative_path\" : \"\(path)\""))
        }
        let groove = try #require(try store.track(relativePath: "Artist A/Album 1/01 First Song.flac"))
        #expect(groove.lufs != nil && abs((groove.silenceEnd ?? 0) - 1.0) < 0.01)   // 0.5 s of silence + the groove's 0.5 s lead-in
        #expect(try store.track(relativePath: "Various/empty.mp3")?.status == .failed)
        // Every format's codec is recorded; the tags are stored per track and in the profile.
        let codecs = try Dictionary(uniqueKeysWithValues: library.good.map { ($0, try store.track(relativePath: $0)?.codec) })
        #expect(codecs["Other Formats/aac_itunsmpb.m4a"] == "aac" && codecs["Other Formats/alac.m4a"] == "alac")
        #expect(codecs["Other Formats/wma.wma"] == "wmav2" && codecs["Other Formats/monkeys.ape"] == "ape")
        #expect(codecs["Other Formats/wavpack.wv"] == "wavpack" && codecs["Other Formats/tta.tta"] == "tta")
        #expect(try store.track(relativePath: "Other Formats/aac_itunsmpb.m4a")?.duration == 3.0)
        let tags = try #require(try store.tags(relativePath: "Other Formats/wavpack.wv"))
        #expect(tags.title == "Sine à 997 Hz" && tags.trackNumber == 3 && tags.replayGainAlbumGain == -7.25 && tags.bpm == 128)
        #expect(try store.tags(relativePath: "Artist A/Album 1/01 First Song.flac")?.isEmpty == true)
        let alac = try #require(try store.track(relativePath: "Other Formats/alac.m4a"))
        let alacProfile = try #require(try JSONSerialization.jsonObject(with: Data((alac.profileJSON ?? "").utf8)) as? [String: Any])
        #expect((alacProfile["tags"] as? [String: Any])?["musicbrainz_album_id"] as? String == "0c3e8a2e-1d4b-4e6f-8a9b-1c2d3e4f5a6b")

        // 2. Nothing changed: nothing analysed, failures remembered (not retried).
        let second = try library.scan()
        #expect(second.analysed == 0)
        #expect(second.unchanged == library.good.count)
        #expect(second.failed == first.failed)   // the same failures, listed again

        // 3. Touching one file re-analyses exactly that one.
        let touched = library.root + "/Ártist Ø/Ålbum 2 (Live)/track 3.ogg"
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: touched)
        let third = try library.scan()
        #expect(third.analysed == 1)
        #expect(third.unchanged == library.good.count - 1)

        // 4. A parameter that changes the output re-analyses everything.
        var bands = VisualizerConfig()
        bands.bandCount = 32
        let fourth = try library.scan(vis: bands)
        #expect(fourth.analysed == library.good.count)
        let vis = try VisFrameBuffer(path: OutputLayout(root: out).visPath(key: OutputLayout.key(forRelativePath: library.good[0])))
        #expect(vis.bandCount == 32)

        // 5. A deleted file is pruned with its outputs.
        try FileManager.default.removeItem(atPath: library.root + "/" + library.good[0])
        let fifth = try library.scan(vis: bands)
        #expect(fifth.pruned == 1 && fifth.analysed == 0)
        #expect(try store.track(relativePath: library.good[0]) == nil)
        #expect(try consistencyProblems(out: out) == [])

        // 6. --force redoes all.
        #expect(try library.scan(vis: bands, force: true).analysed == library.good.count - 1)
    }

    @Test("Only the requested outputs are written; the other kind survives while the file is unchanged")
    func partialOutputs() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let out = library.root + "/.naviscan"
        let layout = OutputLayout(root: out)
        _ = try library.scan(vis: nil)                      // --dj only
        let key = OutputLayout.key(forRelativePath: library.good[0])
        #expect(FileManager.default.fileExists(atPath: layout.profilePath(key: key)))
        #expect(!FileManager.default.fileExists(atPath: layout.visPath(key: key)))
        #expect(try library.scan(profile: nil).analysed == library.good.count)   // --vis only: frames are missing
        #expect(FileManager.default.fileExists(atPath: layout.profilePath(key: key)))
        #expect(try library.scan().analysed == 0)          // both present and current
        #expect(try consistencyProblems(out: out) == [])
    }

    @Test("A killed run's temporary files are removed by the next scan; a scan that changed nothing measures no album")
    func leftoversAndAlbums() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let out = library.root + "/.naviscan"
        let first = try library.scan()
        #expect(first.albumsMeasured > 0)
        let leftovers = ["vis/00/.0011223344556677.vis.tmp-1", "waveforms/ab/.ab00000000000000.dat.tmp-2",
                         "waveforms/ab/.ab00000000000000.rms.tmp-3", "profiles/ff/.ff00000000000000.json.tmp-4"]
        for leftover in leftovers {
            let path = out + "/" + leftover
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("partial".utf8).write(to: URL(fileURLWithPath: path))
        }
        let again = try library.scan()
        #expect(again.analysed == 0 && again.albumsMeasured == 0)
        for leftover in leftovers { #expect(!FileManager.default.fileExists(atPath: out + "/" + leftover), "\(leftover)") }
        #expect(try consistencyProblems(out: out) == [])
    }

    @Test("A second scanner on the same output refuses; an unwritable output is its own error naming the folder")
    func exclusiveAndWritable() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let out = scratch + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let held = try ScanLock(path: out + "/naviscan.lock", outputDirectory: out, owner: .scan)
        let error = #expect(throws: LibraryError.self) { try library.scan(out: out) }
        if case .alreadyRunning = error {} else { Issue.record("expected alreadyRunning, got \(String(describing: error))") }
        withExtendedLifetime(held) {}

        try Data("file".utf8).write(to: URL(fileURLWithPath: scratch + "/plain"))
        let unwritable = #expect(throws: LibraryError.self) { try library.scan(out: scratch + "/plain/out") }
        if case .outputUnwritable(let path, _) = unwritable {
            #expect(path == scratch + "/plain/out")
        } else {
            Issue.record("expected outputUnwritable, got \(String(describing: unwritable))")
        }
    }

    @Test("The output key is stable and spreads tracks over 256 folders")
    func keys() {
        #expect(OutputLayout.key(forRelativePath: "a/b.flac") == OutputLayout.key(forRelativePath: "a/b.flac"))
        #expect(OutputLayout.key(forRelativePath: "a/b.flac") != OutputLayout.key(forRelativePath: "a/c.flac"))
        #expect(OutputLayout.key(forRelativePath: "a/b.flac").count == 16)
        let prefixes = Set((0..<5000).map { OutputLayout.key(forRelativePath: "Artist/Album/\($0).mp3").prefix(2) })
        #expect(prefixes.count == 256)
    }
}

@Suite("Library store opened by several processes")
struct LibraryStoreOpenTests {
    @Test("Processes that open a new store at the same moment all succeed (scan and serve starting together)")
    func concurrentFirstOpen() throws {
        for round in 0..<20 {
            let scratch = try FixturePaths.makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let path = OutputLayout(root: scratch).databasePath
            let errors = NSLock()
            nonisolated(unsafe) var failures: [String] = []  // guarded by `errors`
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do { _ = try LibraryStore(path: path).count() } catch {
                    errors.lock(); failures.append("\(error)"); errors.unlock()
                }
            }
            #expect(failures.isEmpty, "round \(round): \(failures)")
        }
    }
}
