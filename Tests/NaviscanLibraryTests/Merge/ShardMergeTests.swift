import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// `naviscan scan --shard` and `naviscan merge`, run as the executable on a generated library.
@Suite("Sharded scans and naviscan merge (the executable)", .serialized)
struct ShardMergeTests {
    /// 16 short tracks in WAV, FLAC, MP3 and Ogg Vorbis over four albums, and one file that fails.
    static func makeLibrary(in scratch: String, tracks: Int = 16) throws -> (root: String, good: [String]) {
        let root = scratch + "/Music"
        var good: [String] = []
        for i in 0..<tracks {
            let album = "\(root)/Artist \(i % 3)/Album \(i % 4)"
            try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: true)
            let signal: TestSignal = i % 2 == 0
                ? .sine(frequency: 200 + 40 * Double(i), dBFS: -6 - Double(i), duration: 2.5, channels: 2)   // long enough for sound features
                : TestSignal.silence(duration: 0.3).appending(.clicks(bpm: 100 + 3 * Double(i), duration: 1.5))
            let name: String
            switch i % 4 {
            case 0: name = "\(i) sine.wav"; try AudioFileWriter.write(signal, to: album + "/" + name, format: .wav16)
            case 1: name = "\(i) clicks.flac"; try AudioFileWriter.write(signal, to: album + "/" + name, format: .flac16)
            case 2: name = "\(i) sine.mp3"; try AudioFileWriter.writeMP3(signal, to: album + "/" + name)
            default: name = "\(i) clicks.ogg"; try AudioFileWriter.write(signal, to: album + "/" + name, format: .oggVorbis)
            }
            good.append(String(album.dropFirst(root.count + 1)) + "/" + name)
        }
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("broken/random_bytes.flac"), toPath: root + "/Artist 0/broken.flac")
        return (root, good)
    }

    static func scan(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, summary: [String: Any], stderr: String) {
        let run = try NaviscanProcess.run(["scan"] + arguments + ["--quiet", "--json"], environment: environment)
        let summary = (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]) ?? [:]
        return (run.status, summary, run.stderr)
    }

    /// A store's rows with what differs between two runs of the same analysis blanked: when and in
    /// which order rows were written, and the stamps of output files written at other moments.
    static func comparableRows(out: String) throws -> [TrackRecord] {
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        return try store.allTracks().map { row in
            var row = row
            row.seq = 0
            row.changedAt = 0
            row.analyzedAt = ""
            row.visStamp = nil
            row.profileStamp = nil
            row.profileJSON = row.profileJSON.map(withoutTimestamp)
            row.tags = try store.tags(relativePath: row.relativePath)
            return row
        }.sorted { $0.relativePath < $1.relativePath }
    }

    static func withoutTimestamp(_ json: String) -> String {
        json.replacingOccurrences(of: #""analyzed_at" ?: ?"[^"]*""#, with: "", options: .regularExpression)
    }

    /// Every output file under `out` (relative path → bytes), profiles without their timestamp.
    static func outputFiles(_ out: String) -> [String: Data] {
        var files: [String: Data] = [:]
        for kind in OutputLayout.trackOutputs {
            let top = out + "/" + kind.directory
            for name in FileManager.default.enumerator(atPath: top)?.allObjects as? [String] ?? [] {
                guard name.hasSuffix("." + kind.fileExtension), var data = FileManager.default.contents(atPath: top + "/" + name) else { continue }
                if kind == OutputLayout.profile { data = Data(withoutTimestamp(String(decoding: data, as: UTF8.self)).utf8) }
                files[kind.directory + "/" + name] = data
            }
        }
        return files
    }

    /// Everything a second merge could change: every row as stored (sequence included) and each
    /// output file's inode and modification time.
    static func snapshot(_ out: String) throws -> [String] {
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        var lines = try store.allTracks().map { "\($0)" }.sorted()
        lines.append("change_seq \(try store.latestSequence())")
        for path in outputFiles(out).keys.sorted() {
            var st = stat()
            stat(out + "/" + path, &st)
            lines.append("\(path) \(st.st_ino) \(OutputStamp.of(path: out + "/" + path) ?? "")")
        }
        return lines
    }

    @Test("Four shards merged equal one scan: rows, tags, byte-identical frames and profiles; merging again changes nothing")
    func fourShardsEqualOneScan() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try Self.makeLibrary(in: scratch)
        let single = scratch + "/single", merged = scratch + "/merged"
        let whole = try Self.scan([library.root, "--out", single])
        #expect(whole.status == 1 && whole.summary["analysed"] as? Int == library.good.count, "\(whole.stderr)")

        // Two shards as Slurm array tasks, two as a Kubernetes Indexed Job's pods.
        var shardPaths: [[String]] = []
        for k in 0..<4 {
            let variable = k < 2 ? "SLURM_ARRAY_TASK_ID" : "JOB_COMPLETION_INDEX"
            let run = try Self.scan([library.root, "--shard", "auto/4", "--out", "\(scratch)/shard-\(k)"], environment: [variable: "\(k)"])
            #expect([0, 1].contains(run.status), "\(run.stderr)")
            #expect(run.summary["shard"] as? String == "\(k)/4")
            let paths = try LibraryStore(path: OutputLayout(root: "\(scratch)/shard-\(k)").databasePath).allTracks().map(\.relativePath)
            #expect(paths.allSatisfy { Shard.index(ofRelativePath: $0, count: 4) == k })
            #expect(run.summary["total"] as? Int == paths.count)
            #expect((run.summary["total"] as! Int) + (run.summary["other_shards"] as! Int) == library.good.count + 1)
            shardPaths.append(paths)
        }
        // Every track in exactly one shard, and a shard of each size above nothing.
        let all = shardPaths.flatMap { $0 }
        #expect(all.count == Set(all).count && Set(all) == Set(library.good + ["Artist 0/broken.flac"]))
        #expect(shardPaths.filter(\.isEmpty).isEmpty, "\(shardPaths.map(\.count))")

        let merge = try NaviscanProcess.run(["merge", merged] + (0..<4).map { "\(scratch)/shard-\($0)" } + ["--json"])
        #expect(merge.status == 0, "\(merge.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(merge.stdout.utf8)) as! [String: Any]
        #expect(summary["written"] as? Int == all.count && summary["tracks"] as? Int == all.count && summary["coverage"] == nil)

        #expect(try Self.comparableRows(out: merged) == Self.comparableRows(out: single))
        let mergedFiles = Self.outputFiles(merged), singleFiles = Self.outputFiles(single)
        #expect(mergedFiles.count == OutputLayout.trackOutputs.count * library.good.count)
        #expect(mergedFiles.keys.sorted() == singleFiles.keys.sorted())
        for (path, data) in singleFiles { #expect(mergedFiles[path] == data, "\(path) differs") }
        #expect(try consistencyProblems(out: merged) == [])

        // Idempotent: nothing is written again, not a row, a sequence number or a file.
        let before = try Self.snapshot(merged)
        let again = try NaviscanProcess.run(["merge", merged] + (0..<4).map { "\(scratch)/shard-\($0)" } + ["--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let second = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as! [String: Any]
        #expect(second["written"] as? Int == 0 && second["unchanged"] as? Int == all.count && second["removed"] as? Int == 0)
        #expect(try Self.snapshot(merged) == before)

        // The sound features came with the rows, and the merge measured their normalisation again.
        let mergedStore = try LibraryStore(path: OutputLayout(root: merged).databasePath), singleStore = try LibraryStore(path: OutputLayout(root: single).databasePath)
        #expect(try mergedStore.featureRows().map(\.features) == singleStore.featureRows().map(\.features))
        #expect(try mergedStore.featureRows().count >= 2)
        let mergedScale = try #require(try mergedStore.similarityNormalisation())
        let singleScale = try #require(try singleStore.similarityNormalisation())
        #expect(mergedScale.median == singleScale.median && mergedScale.scale == singleScale.scale)

        // A normal store: a plain scan finds every track unchanged, and the known failure not new (exit 0).
        let rescan = try Self.scan([library.root, "--out", merged])
        #expect(rescan.status == 0, "\(rescan.stderr)")
        #expect(rescan.summary["analysed"] as? Int == 0 && rescan.summary["unchanged"] as? Int == library.good.count)
        #expect(rescan.summary["pruned"] as? Int == 0 && rescan.summary["relinked"] as? Int == 0)
    }

    @Test("A shard scanned again after its files changed is merged again on its own: its part of OUT is replaced")
    func reMergeOneShard() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try Self.makeLibrary(in: scratch, tracks: 8)
        let merged = scratch + "/merged"
        for k in 0..<2 { _ = try Self.scan([library.root, "--shard", "\(k)/2", "--out", "\(scratch)/shard-\(k)"]) }
        // Shard 0 alone first: OUT holds part of the library, and says so.
        let first = try NaviscanProcess.run(["merge", merged, scratch + "/shard-0", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("\"coverage\" : \"0\\/2\"") || first.stdout.contains("\"coverage\" : \"0/2\""), "\(first.stdout)")
        #expect(try NaviscanProcess.run(["merge", merged, scratch + "/shard-1"]).status == 0)

        // One track of shard 1 deleted, shard 1 scanned again and merged again.
        let gone = library.good.first { Shard.index(ofRelativePath: $0, count: 2) == 1 }!
        try FileManager.default.removeItem(atPath: library.root + "/" + gone)
        let rescan = try Self.scan([library.root, "--shard", "1/2", "--out", scratch + "/shard-1", "--prune"])
        #expect(rescan.summary["pruned"] as? Int == 1, "\(rescan.stderr)")
        let again = try NaviscanProcess.run(["merge", merged, scratch + "/shard-1", "--json"])
        #expect(again.status == 0 && again.stdout.contains("\"removed\" : 1"), "\(again.stdout) \(again.stderr)")
        let rows = try LibraryStore(path: OutputLayout(root: merged).databasePath).allTracks().map(\.relativePath)
        #expect(!rows.contains(gone) && rows.count == library.good.count)
        #expect(try consistencyProblems(out: merged) == [])
    }

    @Test("merge refuses other parameters, other versions, plain stores and a shard twice, before writing; a damaged OUT is exit 3")
    func refusals() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try Self.makeLibrary(in: scratch, tracks: 6)
        let (a, b, c) = (scratch + "/a", scratch + "/b", scratch + "/c")
        _ = try Self.scan([library.root, "--shard", "0/2", "--out", a])
        _ = try Self.scan([library.root, "--shard", "1/2", "--out", b, "--fps", "60"])
        _ = try Self.scan([library.root, "--shard", "1/2", "--out", c])

        let parameters = try NaviscanProcess.run(["merge", scratch + "/m1", a, b])
        #expect(parameters.status == 2 && parameters.stderr.contains("different analysis parameters") && parameters.stderr.contains("fps"), "\(parameters.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/m1"))

        let twice = try NaviscanProcess.run(["merge", scratch + "/m2", a, c, c])
        #expect(twice.status == 2 && twice.stderr.contains("shard 1/2 is in both"), "\(twice.stderr)")

        let plain = scratch + "/plain"
        _ = try Self.scan([library.root, "--out", plain])
        let notShard = try NaviscanProcess.run(["merge", scratch + "/m3", a, plain])
        #expect(notShard.status == 2 && notShard.stderr.contains("is not a shard's store"), "\(notShard.stderr)")

        // A copy of a shard store with one row changed behind naviscan's back.
        func tampered(_ store: String, as name: String, _ change: (inout TrackRecord) -> Void) throws -> String {
            try FileManager.default.copyItem(atPath: store, toPath: scratch + "/" + name)
            let copy = try LibraryStore(path: scratch + "/" + OutputLayout(root: name).databasePath)
            var row = try #require(try copy.allTracks().first)
            change(&row)
            try copy.commitTracks([.save(row)])
            return scratch + "/" + name
        }
        // A row analysed by another version of the tempo stage; another product version alone merges.
        let old = try tampered(c, as: "old") { $0.stageVersions = "beat-grid=1 decode=1 loudness=1 silence=1 tempo=0 visualizer=1 waveform=1" }
        let version = try NaviscanProcess.run(["merge", scratch + "/m4", a, old])
        #expect(version.status == 2 && version.stderr.contains("different versions of naviscan's analysers") && version.stderr.contains("tempo=0"),
                "\(version.stderr)")
        let otherRelease = try tampered(c, as: "other-release") { $0.analyzerVersion = "9.9.9" }
        let released = try NaviscanProcess.run(["merge", scratch + "/m4b", a, otherRelease])
        #expect(released.status == 0, "\(released.stderr)")

        // A row that is not the shard's (a store put together by hand).
        let foreign = try #require(library.good.first { Shard.index(ofRelativePath: $0, count: 2) == 1 })
        let stray = try tampered(a, as: "stray") { $0.relativePath = foreign }
        let strayMerge = try NaviscanProcess.run(["merge", scratch + "/m6", stray])
        #expect(strayMerge.status == 2 && strayMerge.stderr.contains("which is not in its shard 0/2"), "\(strayMerge.stderr)")

        // OUT's store damaged: a store fault, exit 3, as for scan.
        let damaged = scratch + "/damaged"
        try FileManager.default.createDirectory(atPath: damaged, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: OutputLayout(root: damaged).databasePath))
        let fault = try NaviscanProcess.run(["merge", damaged, a, c])
        #expect(fault.status == 3 && fault.stderr.contains("damaged"), "\(fault.stderr)")

        #expect(try NaviscanProcess.run(["merge", scratch + "/m5"]).status == 2)
        #expect(try NaviscanProcess.run(["merge", scratch + "/m5", scratch + "/nothing"]).stderr.contains("holds no naviscan store"))
    }

    @Test("merge refuses a shard of another library (beside the first's, or into an OUT of the first), and a shard store SQLite finds damaged (exit 3), before writing")
    func otherLibraryAndDamagedShard() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let first = try Self.makeLibrary(in: scratch + "/x", tracks: 6), second = try Self.makeLibrary(in: scratch + "/y", tracks: 6)
        let (a, b) = (scratch + "/a", scratch + "/b")
        _ = try Self.scan([first.root, "--shard", "0/2", "--out", a])
        _ = try Self.scan([second.root, "--shard", "1/2", "--out", b])

        let mixed = try NaviscanProcess.run(["merge", scratch + "/m1", a, b])
        #expect(mixed.status == 2 && mixed.stderr.contains("\(a) is a shard of the library \(first.root) but \(b) one of \(second.root)"), "\(mixed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/m1"))
        let half = try NaviscanProcess.run(["merge", scratch + "/m2", a])
        #expect(half.status == 0, "\(half.stderr)")
        let into = try NaviscanProcess.run(["merge", scratch + "/m2", b])
        #expect(into.status == 2 && into.stderr.contains("holds the library \(first.root), but the shards are of \(second.root)"), "\(into.stderr)")
        #expect(try LibraryStore(path: OutputLayout(root: scratch + "/m2").databasePath).allTrackPaths().allSatisfy { Shard.index(ofRelativePath: $0, count: 2) == 0 })

        // One index page overwritten: the header and every row the merge reads are intact, so only
        // SQLite's check sees it.
        let damaged = scratch + "/damaged"
        try FileManager.default.copyItem(atPath: a, toPath: damaged)
        let corrupt = try NaviscanProcess.run(["-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            size = db.execute('PRAGMA page_size').fetchone()[0]
            root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'track_size'").fetchone()[0]
            db.close()
            with open(sys.argv[1], 'r+b') as f:
                f.seek((root - 1) * size)
                f.write(b'\\xff' * 8)
            """, OutputLayout(root: damaged).databasePath], program: "/usr/bin/python3")
        try #require(corrupt.status == 0, "\(corrupt.stderr)")
        let refused = try NaviscanProcess.run(["merge", scratch + "/m3", damaged])
        #expect(refused.status == 3 && refused.stderr.contains("cannot read the shard store \(damaged)/naviscan.db: it is damaged (SQLite's check")
            && refused.stderr.contains("scan that shard again"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/m3"))
    }

    @Test("scan --shard: a bad value, a missing job variable and another shard's store are refused with exit 2")
    func shardOptionRefusals() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try Self.makeLibrary(in: scratch, tracks: 4)
        let out = scratch + "/out"
        let outOfRange = try NaviscanProcess.run(["scan", library.root, "--shard", "4/4", "--out", out])
        #expect(outOfRange.status == 2 && outOfRange.stderr.contains("K must be 0 to 3"), "\(outOfRange.stderr)")
        let noVariable = try NaviscanProcess.run(["scan", library.root, "--shard", "auto/4", "--out", out])
        #expect(noVariable.status == 2 && noVariable.stderr.contains("neither is set"), "\(noVariable.stderr)")
        let array = try NaviscanProcess.run(["scan", library.root, "--shard", "auto/4", "--out", out], environment: ["SLURM_ARRAY_TASK_ID": "9"])
        #expect(array.status == 2 && array.stderr.contains("--array=0-3"), "\(array.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))

        _ = try Self.scan([library.root, "--shard", "0/4", "--out", out])
        let other = try NaviscanProcess.run(["scan", library.root, "--shard", "1/4", "--out", out])
        #expect(other.status == 2 && other.stderr.contains("holds shard 0/4"), "\(other.stderr)")
        // Without --shard the store is completed into a whole-library store.
        let complete = try Self.scan([library.root, "--out", out])
        #expect(complete.summary["shard"] == nil && complete.summary["total"] as? Int == library.good.count + 1)
        #expect(try LibraryStore(path: OutputLayout(root: out).databasePath).shardCoverage() == nil)
    }
}
