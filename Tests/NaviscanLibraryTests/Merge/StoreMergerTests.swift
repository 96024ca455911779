import Foundation
import Logging
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("StoreMerger on stores alone: rows copied, sequence renumbered, failures and coverage recorded, refusals")
struct StoreMergerTests {
    /// A shard's store for `paths` (rows only, no output files), as `naviscan scan --shard K/2` records it.
    @discardableResult
    static func shardStore(_ directory: String, shard: Int, parameters: AnalysisParameters, failed: [String] = [],
                           keepOpen: ((LibraryStore) -> Void)? = nil) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = try LibraryStore(path: OutputLayout(root: directory).databasePath)
        defer { keepOpen?(store) }
        let paths = (0..<40).map { "Album \($0 % 5)/track \($0).flac" }.filter { Shard.index(ofRelativePath: $0, count: 2) == shard }
        try store.commitTracks(paths.map { .save(storedTrack($0)) })
        try store.recordShardCoverage(ShardSet(try Shard(parsing: "\(shard)/2", environment: [:])))
        var summary = ScanSummary()
        summary.analysed = paths.count
        try store.recordScan(ScanRecord(summary: summary, by: .scan), parameters: parameters, failures: failed, interrupted: false)
        return paths
    }

    @Test("Two shards merge into one whole-library store; merging again writes nothing")
    func merges() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-merge")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let parameters = AnalysisParameters(["fps": .int(30)])
        let first = try Self.shardStore(scratch + "/s0", shard: 0, parameters: parameters, failed: ["bad0.mp3"])
        let second = try Self.shardStore(scratch + "/s1", shard: 1, parameters: parameters)
        let merger = StoreMerger(output: scratch + "/out", sources: [scratch + "/s0", scratch + "/s1"], logger: Logger(label: "test"))
        let summary = try merger.run()
        #expect(summary.written == 40 && summary.unchanged == 0 && summary.tracks == 40 && summary.coverage == nil)
        let out = try LibraryStore(path: OutputLayout(root: scratch + "/out").databasePath)
        #expect(Set(try out.allTracks().map(\.relativePath)) == Set(first + second))
        #expect(Set(try out.allTracks().map(\.seq)) == Set(1...40), "the output's own sequence, one per row")
        #expect(try out.shardCoverage() == nil)
        #expect(try out.analysisParameters() == parameters)
        #expect(try out.failedPaths() == ["bad0.mp3"])

        let again = try StoreMerger(output: scratch + "/out", sources: [scratch + "/s0", scratch + "/s1"], logger: Logger(label: "test")).run()
        #expect(again.written == 0 && again.unchanged == 40 && again.removed == 0)
        #expect(try out.latestSequence() == 40)
    }

    @Test("Shards made with other parameters, twice the same shard, or a whole-library store are refused before anything is written")
    func refusals() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-merge")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        _ = try Self.shardStore(scratch + "/s0", shard: 0, parameters: AnalysisParameters(["fps": .int(30)]))
        _ = try Self.shardStore(scratch + "/s1", shard: 1, parameters: AnalysisParameters(["fps": .int(60)]))
        func refusal(_ sources: [String]) -> String? {
            do {
                _ = try StoreMerger(output: scratch + "/out", sources: sources.map { scratch + "/" + $0 }, logger: Logger(label: "test")).run()
                return nil
            } catch LibraryError.mergeRefused(let reason) {
                return reason
            } catch {
                return "unexpected \(error)"
            }
        }
        #expect(refusal(["s0", "s1"])?.contains("fps 30 vs 60") == true)
        #expect(refusal(["s0", "s0"])?.contains("in both") == true)
        try FileManager.default.createDirectory(atPath: scratch + "/whole", withIntermediateDirectories: true)
        try LibraryStore(path: OutputLayout(root: scratch + "/whole").databasePath).commitTracks([.save(storedTrack("x.flac"))])
        #expect(refusal(["whole"])?.contains("not a shard's store") == true)
        #expect(!FileManager.default.fileExists(atPath: OutputLayout(root: scratch + "/out").databasePath))
    }

    /// The files in a folder, with their sizes and modification times.
    static func listing(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map { name in
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            return "\(name) \(attributes[.size] ?? 0) \(attributes[.modificationDate] ?? "")"
        }
    }

    @Test("Shard stores are only read: no side file appears in a shard folder; a shard whose log still holds rows is read whole; the merged naviscan.db alone is the whole store")
    func readOnlyShardsAndWholeFile() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-merge")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let parameters = AnalysisParameters(["fps": .int(30)])
        let first = try Self.shardStore(scratch + "/s0", shard: 0, parameters: parameters)
        // Shard 1's store stays open in this process, so its rows are still in its write-ahead log.
        var open: LibraryStore?
        let second = try Self.shardStore(scratch + "/s1", shard: 1, parameters: parameters) { open = $0 }
        let wal = (try? FileManager.default.attributesOfItem(atPath: scratch + "/s1/naviscan.db-wal")[.size] as? Int) ?? 0
        #expect(wal > 0, "the open shard store keeps its rows in the log")
        #expect(!FileManager.default.fileExists(atPath: scratch + "/s0/naviscan.db-wal"), "a closed store folds its log in")
        let before = try Self.listing(scratch + "/s0")

        let summary = try StoreMerger(output: scratch + "/out", sources: [scratch + "/s0", scratch + "/s1"], logger: Logger(label: "test")).run()
        #expect(summary.tracks == first.count + second.count)
        #expect(try Self.listing(scratch + "/s0") == before, "the merge created or changed nothing in the shard folder")
        withExtendedLifetime(open) {}

        // The output's main file, copied alone, holds every track and the merge's record.
        try FileManager.default.createDirectory(atPath: scratch + "/copy", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: OutputLayout(root: scratch + "/out").databasePath, toPath: OutputLayout(root: scratch + "/copy").databasePath)
        let copy = try LibraryStore.readOnly(path: OutputLayout(root: scratch + "/copy").databasePath)
        #expect(Set(try copy.allTracks().map(\.relativePath)) == Set(first + second))
        #expect(try copy.analysisParameters() == parameters && copy.shardCoverage() == nil)
    }
}
