import Foundation
import GRDB
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// Upgrades cost only what changed: a track is analysed again only for the stages whose version
/// changed, never for the product version.
@Suite("Stage versions: an upgrade re-runs only the stages that changed", .serialized)
struct StageVersionTests {
    /// Every output file under `data` (not the store): its bytes and mtime in ns.
    static func outputs(_ data: String) throws -> [String: (Data, Int)] {
        var files: [String: (Data, Int)] = [:]
        for folder in ["vis", "profiles", "waveforms"] {
            let root = data + "/" + folder
            for case let path as String in FileManager.default.enumerator(atPath: root) ?? FileManager.default.enumerator(atPath: "/nonexistent")! {
                var info = stat()
                guard stat(root + "/" + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                files[folder + "/" + path] = (try Data(contentsOf: URL(fileURLWithPath: root + "/" + path)),
                                              info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec)
            }
        }
        return files
    }

    /// The raw store, as another program sees it (no migration).
    static func sql(_ path: String, _ statement: String, _ arguments: StatementArguments = []) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: statement, arguments: arguments) }
    }

    @Test("A store written by 0.5.9 is migrated in place and only the stages new or changed since run (key, similarity features): frames, waveforms and every other profile value as they were; then nothing")
    func storeOf059() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-059")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let fixture = FixturePaths.fixture("stores/0.5.9")
        #expect(try NaviscanProcess.run(["-a", fixture + "/Music", fixture + "/data", scratch], program: "/bin/cp").status == 0)
        // The files as 0.5.9 left them: git keeps no mtimes, the fixture lists them.
        for line in try String(contentsOfFile: fixture + "/mtimes.tsv", encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t")
            let ns = try #require(Int(fields[1]))
            var times = [timespec(tv_sec: ns / 1_000_000_000, tv_nsec: ns % 1_000_000_000),
                         timespec(tv_sec: ns / 1_000_000_000, tv_nsec: ns % 1_000_000_000)]
            #expect(utimensat(AT_FDCWD, scratch + "/" + fields[0], &times, 0) == 0, "\(fields[0])")
        }
        let library = scratch + "/Music", data = scratch + "/data", database = data + "/naviscan.db"
        var info = stat()
        #expect(stat(library, &info) == 0)
        // The same library, found where this test put it.
        try Self.sql(database, "UPDATE meta SET value = ? WHERE name = 'library_root'", [library])
        try Self.sql(database, "UPDATE meta SET value = ? WHERE name = 'library_device'", [String(info.st_dev)])
        let before = try Self.outputs(data)
        #expect(before.count == 12)
        let vector = try DatabaseQueue(path: database).read { try Data.fetchOne($0, sql: "SELECT features FROM track WHERE relative_path = 'Album/three.ogg'") }
        // 0.5.9's vector: the descriptors alone, as Float32.
        #expect(vector?.count == 4 * SonicFeatures.descriptorCount)

        // Before the scan, "more like this" names what to do rather than calling the track featureless.
        let stale = try NaviscanProcess.run(["similar", library, "Album/three.ogg", "--data", data])
        #expect(stale.status != 0 && stale.stderr.contains("sound features of an older release; run `naviscan scan`"), "\(stale.stderr)")

        let run = try NaviscanProcess.run(["scan", library, "--out", data, "--json"])
        // Its one track that does not decode failed before: known, not retried, not a new failure.
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["analysed"] as? Int == 3 && summary["failed"] as? Int == 1, "\(summary)")
        let work = summary["work"] as? [String: Any]
        let partial = work?["partial"] as? [[String: Any]]
        #expect(work?["whole"] as? Int == 0 && partial?.count == 1 && partial?.first?["stages"] as? [String] == ["features", "key"]
                && partial?.first?["tracks"] as? Int == 3, "\(summary)")
        let after = try Self.outputs(data)
        #expect(Set(after.keys) == Set(before.keys))
        for (path, (bytes, mtime)) in before where !path.hasPrefix("profiles/") {
            #expect(after[path]?.0 == bytes && after[path]?.1 == mtime, "\(path)")
        }
        // Each profile gained its key; every value the other stages wrote is as 0.5.9 left it.
        for (path, (bytes, _)) in before where path.hasPrefix("profiles/") {
            let old = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
            let newBytes = try #require(after[path]?.0)
            let new = try #require(try JSONSerialization.jsonObject(with: newBytes) as? [String: Any])
            #expect(new.keys.contains("key"), "\(path) has no key field")
            for (field, value) in old where !["analyzer", "analyzed_at"].contains(field) {
                let was = try JSONSerialization.data(withJSONObject: [field: value], options: .sortedKeys)
                let now = try JSONSerialization.data(withJSONObject: [field: new[field] ?? NSNull()], options: .sortedKeys)
                #expect(was == now, "\(path): \(field) changed")
            }
        }
        let again = try NaviscanProcess.run(["scan", library, "--out", data, "--json"])
        let second = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect(second["analysed"] as? Int == 0 && second["unchanged"] as? Int == 3, "\(second)")
        let store = try LibraryStore.readOnly(path: database)
        let rows = try store.allTracks()
        // The vector was measured again with its timbre Gaussian; the descriptors are 0.5.9's.
        #expect(try store.featureRows().map(\.relativePath) == ["Album/three.ogg"])
        let measured = try #require(rows.first { $0.relativePath == "Album/three.ogg" }?.features.flatMap(SonicFeatures.init(data:)))
        let old = try #require(vector).withUnsafeBytes { raw in
            (0..<SonicFeatures.descriptorCount).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        for (i, (x, y)) in zip(old, measured.values).enumerated() {
            // The loudness range comes from the stored profile, which keeps it to 0.01.
            let fromProfile = i == SonicFeatures.Group.dynamics.offset
            #expect(abs(x - y) <= (fromProfile ? 0.006 : 1e-4 * max(1, abs(x))), "component \(i): \(x) then \(y)")
        }
        var withKey = StageVersions.release059
        withKey[.key] = KeyDetector.version
        withKey[.features] = SonicFeatures.version
        #expect(rows.count == 4 && rows.allSatisfy { $0.stageVersions == withKey.description },
                "\(rows.map { ($0.relativePath, $0.analyzerVersion, $0.stageVersions ?? "nil") })")
    }

    /// A scanned library of a click track and a tone; its options.
    static func scannedLibrary(_ scratch: String) throws -> ScanOptions {
        let library = scratch + "/Music"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        try AudioFileWriter.write(.clicks(bpm: 120, duration: 8, dBFS: -6, channels: 2), to: library + "/clicks.flac", format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 330, dBFS: -14, duration: 4), to: library + "/tone.wav", format: .wav16)
        let options = ScanOptions(library: library, output: scratch + "/data", visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 2)
        return options
    }

    @Test("Only the tempo stage's version changed: tempo, beat grid, features and key run again; frame files and waveforms keep their bytes and mtime; the next scan does nothing")
    func tempoStageOnly() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-stages")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var options = try Self.scannedLibrary(scratch)
        let store = try LibraryStore(path: OutputLayout(root: options.output).databasePath)
        let rowsBefore = try store.allTracks()
        let before = try Self.outputs(options.output)

        options.stageVersions[.tempo] = TempoEstimator.version + 1
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(summary.analysed == 2 && summary.work.whole == 0)
        #expect(summary.work.partial == [WorkBreakdown.Partial(stages: ["tempo", "beat-grid", "features", "key"], tracks: 2)])
        let after = try Self.outputs(options.output)
        for (path, (bytes, mtime)) in before where !path.hasPrefix("profiles/") {
            #expect(after[path]?.0 == bytes && after[path]?.1 == mtime, "\(path) was touched")
        }
        // The profiles were written again (by the album pass), with the same values: the tempo stage
        // itself did not change, only its version.
        let rowsAfter = try store.allTracks()
        for (old, new) in zip(rowsBefore.sorted { $0.relativePath < $1.relativePath }, rowsAfter.sorted { $0.relativePath < $1.relativePath }) {
            #expect(new.seq > old.seq && new.visStamp == old.visStamp)
            #expect(new.analysedWith?[.tempo] == TempoEstimator.version + 1 && new.analysedWith?[.loudness] == 1)
            #expect(new.bpm == old.bpm, "\(new.relativePath)")
            #expect(new.lufs == old.lufs && new.gatingHistogram == old.gatingHistogram, "\(new.relativePath)")
            // The features read the loudness range from the stored profile, which keeps it to 0.01.
            let a = old.features.flatMap(SonicFeatures.init(data:)), b = new.features.flatMap(SonicFeatures.init(data:))
            #expect((a == nil) == (b == nil), "\(new.relativePath)")
            for (i, (x, y)) in zip(a?.values ?? [], b?.values ?? []).enumerated() {
                let fromProfile = i == SonicFeatures.Group.dynamics.offset
                #expect(abs(x - y) <= (fromProfile ? 0.006 : 1e-4 * max(1, abs(x))), "\(old.relativePath) component \(i): \(x) then \(y)")
            }
            let profile = try #require(after["profiles/" + String(new.key.prefix(2)) + "/" + new.key + ".json"])
            #expect(profile.1 != before["profiles/" + String(new.key.prefix(2)) + "/" + new.key + ".json"]?.1, "\(new.relativePath): profile not rewritten")
        }
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 0)
    }

    @Test("Only the album pass's version changed: every album is measured again from the stored histograms, nothing is decoded, no output file is touched; then nothing")
    func albumPassOnly() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-stages")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var options = try Self.scannedLibrary(scratch)
        let before = try Self.outputs(options.output)
        options.albumPassVersion = AlbumGain.version + 1
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(summary.analysed == 0 && summary.audioSeconds == 0)
        #expect(summary.albumsMeasured == 1, "the library is one folder, one album: \(summary.albumsMeasured)")
        let after = try Self.outputs(options.output)
        // The same album values: no member's profile needed writing again.
        for (path, (bytes, mtime)) in before { #expect(after[path]?.0 == bytes && after[path]?.1 == mtime, "\(path) was touched") }
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().albumsMeasured == 0)
        options.albumPassVersion = AlbumGain.version
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().albumsMeasured == 1, "back to this build's version")
    }

    @Test("A product version change alone re-analyses nothing; a decode change re-analyses everything; `naviscan status` says what the next scan does per stage")
    func productVersionAndStatus() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-stages")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var options = try Self.scannedLibrary(scratch)
        let database = OutputLayout(root: options.output).databasePath
        try Self.sql(database, "UPDATE track SET analyzer_version = '0.6.0'")
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 0)

        // A stage's version forgotten, as a reader does for a damaged waveform: status names it.
        try Self.sql(database, "UPDATE track SET stage_versions = replace(stage_versions, 'waveform=1', '') WHERE relative_path = 'tone.wav'")
        let status = try NaviscanProcess.run(["status", "--out", options.output])
        #expect(status.status == 0 && status.stdout.contains("next scan:   1 tracks: waveform only"), "\(status.stdout)")
        let json = try NaviscanProcess.run(["status", "--out", options.output, "--json"])
        #expect(json.stdout.contains("\"pending_work\""), "\(json.stdout)")

        options.stageVersions[.decode] = 2
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(summary.analysed == 2 && summary.work.whole == 2 && summary.work.partial.isEmpty)
    }
}
