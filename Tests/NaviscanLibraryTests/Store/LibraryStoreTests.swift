import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// A row as a scan would write it for `path` (no files behind it).
func storedTrack(_ path: String, size: Int64 = 1000, status: TrackRecord.Status = .ok) -> TrackRecord {
    var record = TrackRecord(file: LibraryFile(relativePath: path, path: "/music/" + path, size: size, mtime: 1_700_000_000),
                             key: OutputLayout.key(forRelativePath: path), analyzerVersion: NaviscanVersion.version,
                             analyzedAt: "2026-01-01T00:00:00Z", changedAt: 0)
    record.status = status
    if status == .ok {
        record.visFingerprint = AnalysisFingerprint.visualizer(VisualizerConfig())
        record.profileFingerprint = AnalysisFingerprint.profile(ProfileConfig())
        record.featuresVersion = SonicFeatures.version
        record.stageVersions = StageVersions.current.description
    } else {
        record.errorMessage = "does not decode"
        record.failureKind = .file
    }
    return record
}

@Suite("LibraryStore: the one owner of the database, in memory")
struct LibraryStoreTests {
    @Test("Each change takes the next change sequence and one event: saves (analysed or failed), a delete, missing and back; events(after:) lists them in commit order")
    func changeSequence() async throws {
        let store = try LibraryStore.inMemory()
        #expect(try await store.latestSequence() == 0)
        var tagged = storedTrack("a.flac")
        var tags = TrackTags()
        tags.album = "Album"
        tagged.tags = tags
        let last = try store.commitTracks([.save(tagged), .save(storedTrack("b.flac")), .save(storedTrack("c.flac", status: .failed))])
        #expect(last == 3)
        #expect(try store.commitTracks([.save(storedTrack("a.flac", size: 2000))]) == 4)
        var events = try await store.events(after: 1)
        #expect(events.map(\.relativePath) == ["b.flac", "c.flac", "a.flac"])
        #expect(events.map(\.seq) == [2, 3, 4])
        #expect(events.map(\.kind) == [.trackAnalyzed, .trackFailed, .trackAnalyzed])
        #expect(events[1].detail == "does not decode")
        #expect(try await store.track(relativePath: "a.flac")?.size == 2000)
        #expect(try store.tags(relativePath: "a.flac")?.album == "Album")

        try store.commitTracks([.delete(relativePath: "a.flac"), .delete(relativePath: "never-there.flac")])
        #expect(try await store.track(relativePath: "a.flac") == nil)
        #expect(try store.tags(relativePath: "a.flac") == nil)
        #expect(try store.count() == 2)
        try store.markMissing(["b.flac"], since: 1_700_000_000)
        try store.markMissing(["b.flac"], since: nil)
        events = try await store.events(after: 4)
        // A delete of a row that is not there is no change: no number, no event.
        #expect(events.map(\.seq) == [5, 6, 7])
        #expect(events.map(\.kind) == [.trackRemoved, .trackRemoved, .trackRestored])
        #expect(events.map(\.relativePath) == ["a.flac", "b.flac", "b.flac"])
        #expect(try await store.latestSequence() == 7)
        #expect(try await store.firstKeptEvent() == 1)
        let counts = try await store.counts()
        #expect(counts.profiles == 1 && counts.vis == 1 && counts.failed == 1)
    }

    @Test("The similarity read pairs each vector with its track in SQLite's byte order (accents, decomposed, ß, capitals), and leaves out missing, failed, stale and damaged rows")
    func featureTable() throws {
        let store = try LibraryStore.inMemory()
        // Swift's String order differs from the bytes' here: "é" composed against e + U+0301, capitals.
        let paths = ["b.flac", "e\u{301}.flac", "é.flac", "Z.flac", "ß.flac", "a/ä.flac", "a.flac", "x/ö.flac"]
        var records: [TrackRecord] = []
        for (i, path) in paths.enumerated() {
            var record = storedTrack(path)
            record.duration = Double(100 + i)
            record.features = SonicFeatures(descriptors: (0..<SonicFeatures.descriptorCount).map { Float(i * 100 + $0) },
                                            timbreMean: (0..<TimbreGaussian.order).map { Float(i + $0) / 10 }).data
            records.append(record)
        }
        // A track without a vector, named like one with: "ö" decomposed, before the composed in bytes.
        records.append(storedTrack("x/o\u{308}.flac"))
        var missing = storedTrack("m.flac"), stale = storedTrack("s.flac"), damaged = storedTrack("d.flac")
        missing.features = records[0].features
        stale.features = records[0].features
        stale.featuresVersion = SonicFeatures.version + 1
        damaged.features = Data(repeating: 0xFF, count: SonicFeatures.storedBytes) // NaNs
        try store.commitTracks((records + [missing, stale, damaged, storedTrack("failed.flac", status: .failed)]).map { .save($0) })
        try store.markMissing(["m.flac"], since: 1_700_000_000)

        let table = try store.featureTable()
        let expected = paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        // As bytes: Swift's `==` would hold the two spellings of "ö" equal.
        #expect(table.paths.map { Array($0.utf8) } == expected.map { Array($0.utf8) })
        for (row, path) in table.paths.enumerated() {
            let i = try #require(paths.firstIndex { $0.utf8.elementsEqual(path.utf8) })
            #expect(table.features[row] == SonicFeatures(data: try #require(records[i].features)))
            #expect(table.durations[row] == Double(100 + i))
        }
    }

    @Test("The similarity snapshot: read back byte for byte over several blocks; read instead of the tables while current; not read once a track changes, nor when its format or a block is not this build's")
    func similaritySnapshot() throws {
        let folder = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/naviscan.db"
        let store = try LibraryStore(path: path)
        var random = SeededGenerator(seed: 7)
        let records = (0..<5000).map { i in
            var record = storedTrack("Artist \(i % 37)/Album ü\(i % 11)/\(i).flac")
            record.duration = Double.random(in: 30...600, using: &random)
            record.features = SonicFeatures(values: (0..<SonicFeatures.dimension).map { _ in Float.random(in: -5...5, using: &random) }).data
            return record
        }
        try store.commitTracks(records.map { .save($0) })
        func same(_ a: LibraryStore.FeatureTable, _ b: LibraryStore.FeatureTable) -> Bool {
            a.paths.map { Array($0.utf8) } == b.paths.map { Array($0.utf8) } && a.features == b.features && a.durations == b.durations
        }
        func sql(_ statements: String) throws {
            let run = try NaviscanProcess.run(["-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.executescript(sys.argv[2]); db.commit()",
                                               path, statements], program: "/usr/bin/python3")
            try #require(run.status == 0, "\(run.stderr)")
        }
        let scanned = try store.featureTable()
        #expect(scanned.paths.count == 5000)
        let input = try store.refreshSimilarityIndex()
        #expect(same(input.features, scanned))
        #expect(same(try store.featureTable(), scanned))

        // Vectors changed behind the store's back (no change sequence): the snapshot is what is read.
        try sql("UPDATE track_features SET vector = zeroblob(length(vector));")
        #expect(same(try store.featureTable(), scanned))
        // A snapshot of a format this build does not know, or a damaged block: the tables are read.
        try sql("UPDATE meta SET value = replace(value, '\"format\":2', '\"format\":99') WHERE name = 'similarity_snapshot';")
        let zeroed = try store.featureTable()
        #expect(zeroed.paths.count == 5000 && zeroed.features.values.allSatisfy { $0 == 0 })
        try store.refreshSimilarityIndex()
        try sql("DELETE FROM track_features WHERE relative_path = 'Artist 0/Album ü0/0.flac';")
        #expect(same(try store.featureTable(), zeroed))
        try sql("UPDATE similarity_snapshot SET data = substr(data, 1, 100) WHERE block = 1;")
        #expect(try store.featureTable().paths.count == 4999)

        // A change takes a sequence: the snapshot of the sequence before is not read.
        try store.refreshSimilarityIndex()
        var changed = records[0]
        changed.features = SonicFeatures(values: .init(repeating: 1, count: SonicFeatures.dimension)).data
        try store.commitTracks([.save(changed), .delete(relativePath: records[1].relativePath)])
        let after = try store.featureTable()
        #expect(after.paths.count == 4999)
        let row = try #require(after.paths.position(of: records[0].relativePath))
        #expect(after.features[row].values.allSatisfy { $0 == 1 })
    }

    @Test("An album's rewritten members are one album_updated event; the store keeps the last keptEvents events")
    func albumEventsAndTrim() async throws {
        let store = try LibraryStore.inMemory()
        try store.commitTracks([.save(storedTrack("A/1.flac")), .save(storedTrack("A/2.flac")), .save(storedTrack("A/3.flac"))])
        let album = AlbumUpdate(members: ["A/1.flac", "A/2.flac", "A/3.flac"],
                                record: AlbumRecord(key: "a", membersDigest: "", lufs: -14, peak: 0.9, tracks: 3, silentTracks: 0),
                                digest: { AlbumGain.digest($0) })
        try store.commitTracks([.updateProfile(relativePath: "A/2.flac", json: "{}", stamp: nil),
                                .updateProfile(relativePath: "A/1.flac", json: "{}", stamp: nil), .saveAlbum(album)])
        let events = try await store.events(after: 3)
        #expect(events.count == 1)
        #expect(events.first?.kind == .albumUpdated && events.first?.relativePaths == ["A/1.flac", "A/2.flac"])
        #expect(PushMessage(events[0]).relativePaths == ["A/1.flac", "A/2.flac"] && PushMessage(events[0]).relativePath == nil)
        // Measured again with nothing rewritten: no event.
        try store.commitTracks([.saveAlbum(album)])
        #expect(try await store.events(after: events[0].seq).isEmpty)

        let many = (0..<Int(LibraryStore.keptEvents) + 5).map { StoreChange.save(storedTrack("many/\($0).flac")) }
        let latest = try store.commitTracks(many)
        #expect(try await store.firstKeptEvent() == latest - LibraryStore.keptEvents + 1)
    }

    @Test("recordScan keeps parameters, the last scan and the failed paths; an interrupted scan keeps earlier failures; a precompute updates them")
    func scanRecords() throws {
        let store = try LibraryStore.inMemory()
        #expect(try store.lastScan() == nil && store.analysisParameters() == nil && store.failedPaths().isEmpty)
        var summary = ScanSummary()
        summary.analysed = 5
        summary.failures = [ScanFailure(relativePath: "x.mp3", reason: "bad")]
        let parameters = AnalysisParameters(["fps": .int(60), "encoding": .string("f16"), AnalysisParameters.albumPerDiscKey: .bool(true)])
        try store.recordScan(ScanRecord(summary: summary, by: .watch), parameters: parameters, failures: ["x.mp3"], interrupted: false)
        #expect(try store.analysisParameters() == parameters)
        #expect(try store.analysisParameters()?.albumPerDisc == true)
        let record = try #require(try store.lastScan())
        #expect(record.analysed == 5 && record.failed == 1 && record.by == ScanLock.Owner.watch.rawValue)
        #expect(try store.failedPaths() == ["x.mp3"])

        // Interrupted: it did not look at x.mp3 again, so x.mp3 stays known beside the new failure.
        summary.interrupted = true
        try store.recordScan(ScanRecord(summary: summary, by: .scan), parameters: nil, failures: ["y.mp3"], interrupted: true)
        #expect(try store.failedPaths() == ["x.mp3", "y.mp3"])
        #expect(try store.analysisParameters() == parameters, "a scan with no parameters leaves the recorded ones")
        // A finished scan replaces the list.
        try store.recordScan(ScanRecord(summary: ScanSummary(), by: .scan), parameters: nil, failures: ["y.mp3"], interrupted: false)
        #expect(try store.failedPaths() == ["y.mp3"])

        try store.updateFailedPaths(adding: ["z.mp3"], removing: ["y.mp3"])
        #expect(try store.failedPaths() == ["z.mp3"])
    }

    @Test("The library identity, shard coverage and a merge's record read back as written")
    func identityAndCoverage() throws {
        let store = try LibraryStore.inMemory()
        #expect(try store.libraryIdentity() == LibraryIdentity(root: nil, device: nil))
        try store.recordLibraryIdentity(root: "/srv/music", device: 2049)
        #expect(try store.libraryIdentity() == LibraryIdentity(root: "/srv/music", device: 2049))
        let coverage = ShardSet(try Shard(parsing: "1/4", environment: [:]))
        try store.recordShardCoverage(coverage)
        #expect(try store.shardCoverage() == coverage)
        try store.recordShardCoverage(nil)
        #expect(try store.shardCoverage() == nil)

        try store.recordScan(ScanRecord(summary: ScanSummary(), by: .scan), parameters: nil, failures: ["keep.mp3", "replace.mp3"], interrupted: false)
        try store.recordMerge(coverage: coverage, parameters: AnalysisParameters(["fps": .int(30)]),
                              library: LibraryIdentity(root: "/mnt/music", device: 7),
                              failures: ["new.mp3"], replacingFailuresOf: { $0 == "replace.mp3" || $0 == "new.mp3" })
        #expect(try store.failedPaths() == ["keep.mp3", "new.mp3"])
        #expect(try store.shardCoverage() == coverage)
        #expect(try store.libraryIdentity().root == "/mnt/music")
        #expect(try store.analysisParameters()?.values["fps"] == .int(30))
    }

    @Test("markNeedsAnalysis: a damaged output is forgotten alone, and the freshness rule then asks for a new analysis")
    func needsAnalysis() async throws {
        let store = try LibraryStore.inMemory()
        try store.commitTracks([.save(storedTrack("a.flac")), .save(storedTrack("b.flac")), .save(storedTrack("c.flac"))])
        var profiled = try #require(try await store.track(relativePath: "b.flac"))
        profiled.profileJSON = "{}"
        try store.commitTracks([.save(profiled)])
        try await store.markNeedsAnalysis(relativePath: "a.flac", output: .waveform)
        try await store.markNeedsAnalysis(relativePath: "b.flac", output: .profile)
        try await store.markNeedsAnalysis(relativePath: "c.flac", output: .visualizerFrames)
        let a = try #require(try await store.track(relativePath: "a.flac"))
        let b = try #require(try await store.track(relativePath: "b.flac"))
        let c = try #require(try await store.track(relativePath: "c.flac"))
        #expect(a.analysedWith?[.waveform] == nil && a.analysedWith?[.tempo] != nil && a.profileFingerprint != nil && a.visFingerprint != nil)
        #expect(b.profileFingerprint == nil && b.profileJSON == nil && b.visFingerprint != nil)
        #expect(c.visFingerprint == nil && c.profileFingerprint != nil)

        var freshness = TrackFreshness(visualizer: VisualizerConfig(), profile: ProfileConfig(), layout: OutputLayout(root: "/nowhere"))
        freshness.outputStamp = { _, _ in "stamp" }
        let untouched = storedTrack("d.flac")
        let file = { (path: String) in LibraryFile(relativePath: path, path: "/music/" + path, size: 1000, mtime: 1_700_000_000) }
        #expect(!freshness.needsAnalysis(file("d.flac"), untouched))
        for record in [a, b, c] { #expect(freshness.needsAnalysis(file(record.relativePath), record), "\(record.relativePath)") }
    }

    @Test("A store opened read-only reads, refuses writes as a fault, and a store of another schema is refused")
    func readOnly() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-store")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let path = OutputLayout(root: scratch).databasePath
        try LibraryStore(path: path).commitTracks([.save(storedTrack("a.flac"))])
        let reader = try LibraryStore.readOnly(path: path)
        #expect(try reader.count() == 1)
        #expect(throws: LibraryError.self) { try reader.commitTracks([.save(storedTrack("b.flac"))]) }
        do {
            try reader.commitTracks([.save(storedTrack("b.flac"))])
        } catch let error as LibraryError {
            #expect(error.isFault, "\(error)")
        }

        // A database with no naviscan schema at all (an empty file is an empty SQLite database).
        #expect(throws: LibraryError.storeSchemaDiffers(path: scratch + "/nothing.db")) {
            let empty = scratch + "/nothing.db"
            FileManager.default.createFile(atPath: empty, contents: Data())
            _ = try LibraryStore.readOnly(path: empty)
        }
    }
}
