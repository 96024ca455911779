import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import Testing

/// The planner's rules on made-up listings and rows: no audio, no files but the stamps it is shown.
@Suite("Scan planner")
struct ScanPlannerTests {
    let options = ScanOptions(library: "/music", output: "/out", visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)

    func file(_ path: String, size: Int64 = 1000, mtime: Double = 1) -> LibraryFile {
        LibraryFile(relativePath: path, path: "/music/" + path, size: size, mtime: mtime)
    }

    /// A row as a scan leaves it for `file`, outputs stamped "ok".
    func record(_ file: LibraryFile, hash: String? = nil) -> TrackRecord {
        var r = TrackRecord(file: file, key: OutputLayout.key(forRelativePath: file.relativePath),
                            analyzerVersion: NaviscanVersion.version, analyzedAt: "", changedAt: 0)
        r.visFingerprint = AnalysisFingerprint.visualizer(VisualizerConfig())
        r.profileFingerprint = AnalysisFingerprint.profile(ProfileConfig())
        r.featuresVersion = SonicFeatures.version
        r.stageVersions = StageVersions.current.description
        r.visStamp = "ok"
        r.profileStamp = "ok"
        r.contentHash = hash ?? "hash of \(file.relativePath)"
        return r
    }

    func planner(_ options: ScanOptions? = nil, hashes: [String: String] = [:]) -> ScanPlanner {
        var p = ScanPlanner(options: options ?? self.options)
        p.outputStamp = { _, _ in "ok" }
        p.contentHash = { hashes[$0.relativePath] }
        return p
    }

    func listing(_ files: [LibraryFile], unverified: [String] = [], device: UInt64 = 7) -> LibraryListing {
        var l = LibraryListing()
        l.files = files
        l.unverified = unverified
        l.rootDevice = device
        return l
    }

    let known = LibraryIdentity(root: "/music", device: 7)

    @Test("An empty library (a mount that is down) prunes nothing, even with --prune")
    func emptyLibrary() {
        let stored = (0..<10).map { record(file("a/\($0).flac")) }
        for prune in [false, true] {
            var o = options
            o.prune = prune
            let plan = planner(o).plan(listing: listing([]), stored: stored, identity: known)
            #expect(plan.prune.isEmpty && plan.keptMissing.count == 10)
            #expect(plan.pruneHeldBack?.contains("holds no audio files") == true)
            #expect(!plan.libraryTrusted)
        }
    }

    @Test("Another device or another library root holds pruning back; --prune overrides")
    func identityChanged() {
        let files = (0..<10).map { file("a/\($0).flac") }
        let stored = files.map { record($0) }
        let present = Array(files.prefix(9))
        let otherDevice = planner().plan(listing: listing(present, device: 8), stored: stored, identity: known)
        #expect(otherDevice.prune.isEmpty && otherDevice.keptMissing.count == 1)
        #expect(otherDevice.pruneHeldBack?.contains("another device") == true)
        let otherRoot = planner().plan(listing: listing(present), stored: stored, identity: LibraryIdentity(root: "/elsewhere", device: 7))
        #expect(otherRoot.keptMissing.count == 1 && otherRoot.pruneHeldBack?.contains("/elsewhere") == true)
        var o = options
        o.prune = true
        let forced = planner(o).plan(listing: listing(present, device: 8), stored: stored, identity: known)
        #expect(forced.prune.count == 1 && forced.keptMissing.isEmpty && forced.libraryTrusted)
        // Nothing vanished: a changed device number (a remount) is simply recorded.
        let remounted = planner().plan(listing: listing(files, device: 8), stored: stored, identity: known)
        #expect(remounted.pruneHeldBack == nil && remounted.libraryTrusted)
    }

    @Test("More than the threshold vanishing at once is kept as missing; less is pruned")
    func threshold() {
        let files = (0..<10).map { file("a/\($0).flac") }
        let stored = files.map { record($0) }
        let two = planner().plan(listing: listing(Array(files.prefix(8))), stored: stored, identity: known)
        #expect(two.prune.count == 2 && two.pruneHeldBack == nil)
        let three = planner().plan(listing: listing(Array(files.prefix(7))), stored: stored, identity: known)
        #expect(three.prune.isEmpty && three.keptMissing.count == 3)
        #expect(three.pruneHeldBack?.contains("3 of 10") == true)
    }

    @Test("Tracks under a folder that could not be read are neither pruned nor marked missing")
    func unreadableFolder() {
        let files = (0..<10).map { file(($0 < 5 ? "ok/" : "locked/") + "\($0).flac") }
        let stored = files.map { record($0) }
        let plan = planner().plan(listing: listing(Array(files.prefix(5)), unverified: ["locked"]), stored: stored, identity: known)
        #expect(plan.prune.isEmpty && plan.keptMissing.isEmpty && plan.unverified == 5 && plan.unchanged == 5)
    }

    @Test("A moved file with the same size and content hash is re-linked; a different hash is analysed")
    func relink() {
        let old = file("old/song.flac", size: 5000)
        let stored = [record(old, hash: "abc"), record(file("stay.flac"))]
        let moved = file("new/song.flac", size: 5000, mtime: 2)
        let plan = planner(hashes: ["new/song.flac": "abc"]).plan(listing: listing([moved, file("stay.flac")]), stored: stored, identity: known)
        #expect(plan.relinks.count == 1 && plan.relinks.first?.from.relativePath == "old/song.flac")
        #expect(plan.work.isEmpty && plan.prune.isEmpty && plan.unchanged == 1)
        let other = planner(hashes: ["new/song.flac": "xyz"]).plan(listing: listing([moved, file("stay.flac")]), stored: stored, identity: known)
        #expect(other.relinks.isEmpty && other.work.map(\.file.relativePath) == ["new/song.flac"] && other.keptMissing.count == 1)
    }

    @Test("Per stage: a stage's new version re-runs it and the stages that read it; the product version alone re-runs nothing; rows before stage versions are analysed whole")
    func stageWork() {
        let f = file("song.flac")
        func work(_ row: TrackRecord, _ change: (inout ScanOptions) -> Void = { _ in }) -> [TrackWork] {
            var o = options
            change(&o)
            return planner(o).plan(listing: listing([f]), stored: [row], identity: known).work.map(\.work)
        }
        var otherRelease = record(f)
        otherRelease.analyzerVersion = "9.9.9"
        #expect(work(otherRelease).isEmpty)
        #expect(work(record(f)) { $0.stageVersions[.tempo] = TempoEstimator.version + 1 } == [.stages([.tempo, .beatGrid, .features, .key])])
        // The key reads the bars: a new beat grid means new keys too.
        #expect(work(record(f)) { $0.stageVersions[.beatGrid] = 2 } == [.stages([.beatGrid, .key])])
        #expect(work(record(f)) { $0.stageVersions[.silence] = 2 } == [.stages([.silence, .loudness, .tempo, .beatGrid, .features, .key])])
        #expect(work(record(f)) { $0.stageVersions[.visualizer] = 2 } == [.stages([.visualizer])])
        #expect(work(record(f)) { $0.stageVersions[.features] = SonicFeatures.version + 1 } == [.stages([.features])])
        #expect(work(record(f)) { $0.stageVersions[.key] = 2 } == [.stages([.key])])
        #expect(work(record(f)) { $0.stageVersions[.decode] = 2 } == [.full])
        // Versions of stages this scan does not write wait for a scan that does.
        #expect(work(record(f)) { $0.stageVersions[.visualizer] = 2; $0.visualizer = nil }.isEmpty)
        var newFrames = record(f)
        newFrames.visFingerprint = "other parameters"
        #expect(work(newFrames) == [.stages([.visualizer])])
        var before059 = record(f)
        before059.stageVersions = nil
        #expect(work(before059) == [.full])
    }

    @Test("Failed tracks: access errors are retried, the file's own are not unless --retry-failed or a stage changed")
    func retries() {
        let f = file("bad.mp3")
        var failed = record(f)
        failed.status = .failed
        failed.errorMessage = "damaged"
        failed.failureKind = .file
        #expect(planner().plan(listing: listing([f]), stored: [failed], identity: known).knownFailures.map(\.known) == [true])
        var access = failed
        access.failureKind = .access
        #expect(planner().plan(listing: listing([f]), stored: [access], identity: known).work.count == 1)
        var o = options
        o.retryFailed = true
        #expect(planner(o).plan(listing: listing([f]), stored: [failed], identity: known).work.count == 1)
        var otherRelease = failed
        otherRelease.analyzerVersion = "9.9.9"
        #expect(planner().plan(listing: listing([f]), stored: [otherRelease], identity: known).work.isEmpty)
        var newDecoders = options
        newDecoders.stageVersions[.decode] = 2
        #expect(planner(newDecoders).plan(listing: listing([f]), stored: [failed], identity: known).work.map(\.work) == [.full])
    }

    @Test("An output file replaced or gone since its row was written is analysed again")
    func outputStamps() {
        let f = file("a.flac")
        var p = planner()
        p.outputStamp = { output, _ in output == OutputLayout.visualizerFrames ? "replaced" : "ok" }
        #expect(p.plan(listing: listing([f]), stored: [record(f)], identity: known).work.count == 1)
        p.outputStamp = { output, _ in output == OutputLayout.visualizerFrames ? nil : "ok" }
        #expect(p.plan(listing: listing([f]), stored: [record(f)], identity: known).work.count == 1)
        #expect(planner().plan(listing: listing([f]), stored: [record(f)], identity: known).unchanged == 1)
    }

    @Test("A missing row whose file is back is unchanged and no longer missing")
    func reappeared() {
        let f = file("a.flac")
        var r = record(f)
        r.missingSince = 100
        let plan = planner().plan(listing: listing([f]), stored: [r], identity: known)
        #expect(plan.reappeared == ["a.flac"] && plan.unchanged == 1)
    }

    // MARK: shards

    /// `count` paths of shard `index` of 2.
    func paths(inShard index: Int, count: Int, prefix: String = "s") -> [String] {
        Array((0...).lazy.map { "\(prefix)/\($0).flac" }.filter { Shard.index(ofRelativePath: $0, count: 2) == index }.prefix(count))
    }

    func sharded(_ index: Int, prune: Bool = false) -> ScanOptions {
        var o = options
        o.shard = Shard(index: index, count: 2)
        o.prune = prune
        return o
    }

    @Test("On a shard, stored tracks of other shards are never pruned, kept missing, relinked or analysed")
    func otherShardsLeftAlone() {
        let mine = paths(inShard: 0, count: 10).map { file($0) }
        let theirs = paths(inShard: 1, count: 10).map { file($0) }
        let stored = (mine + theirs).map { record($0) }
        // The other shard's files are gone from the walk: that is not this shard's business.
        for prune in [false, true] {
            let plan = planner(sharded(0, prune: prune)).plan(listing: listing(mine), stored: stored, identity: known)
            #expect(plan.prune.isEmpty && plan.keptMissing.isEmpty && plan.relinks.isEmpty && plan.work.isEmpty)
            #expect(plan.unchanged == 10 && plan.files == 10 && plan.otherShardTracks == 10 && plan.pruneHeldBack == nil)
        }
        // The whole library's scan sees them vanish (half the store: the guard holds).
        let whole = planner().plan(listing: listing(mine), stored: stored, identity: known)
        #expect(whole.keptMissing.count == 10)
        // The other shard's new files are not work here either.
        let plan = planner(sharded(1)).plan(listing: listing(mine + theirs), stored: mine.map { record($0) }, identity: known)
        #expect(plan.work.map(\.file.relativePath).sorted() == theirs.map(\.relativePath).sorted())
        #expect(plan.otherShardFiles == 10 && plan.otherShardTracks == 10 && plan.unchanged == 0)
    }

    @Test("On a shard, the prune guard counts the shard's tracks, and an empty shard of a full library is no unmounted disk")
    func shardPruneGuard() {
        let mine = paths(inShard: 0, count: 10).map { file($0) }
        let theirs = paths(inShard: 1, count: 30).map { file($0) }
        // 2 of the shard's 10 vanish: 20 %, pruned (2 of 40 library files would be 5 %; 2 of 10 is the rule).
        let two = planner(sharded(0)).plan(listing: listing(Array(mine.dropFirst(2)) + theirs), stored: mine.map { record($0) }, identity: known)
        #expect(two.prune.count == 2 && two.pruneHeldBack == nil)
        let three = planner(sharded(0)).plan(listing: listing(Array(mine.dropFirst(3)) + theirs), stored: mine.map { record($0) }, identity: known)
        #expect(three.prune.isEmpty && three.keptMissing.count == 3 && three.pruneHeldBack?.contains("3 of 10") == true)
        // Every file of the shard gone while the library is there: --prune may remove them.
        let forced = planner(sharded(0, prune: true)).plan(listing: listing(theirs), stored: mine.map { record($0) }, identity: known)
        #expect(forced.prune.count == 10 && forced.libraryTrusted)
        // The whole library gone: held, --prune or not.
        let down = planner(sharded(0, prune: true)).plan(listing: listing([]), stored: mine.map { record($0) }, identity: known)
        #expect(down.prune.isEmpty && down.pruneHeldBack?.contains("holds no audio files") == true)
    }

    @Test("A file moved within its shard is re-linked; moved into another shard it is analysed there and removed here")
    func shardRelink() {
        let inZero = paths(inShard: 0, count: 2, prefix: "moved"), inOne = paths(inShard: 1, count: 1, prefix: "moved")
        let old = file(inZero[0], size: 5000)
        let stay = (0..<9).map { file(paths(inShard: 0, count: 9)[$0]) }
        let stored = [record(old, hash: "abc")] + stay.map { record($0) }
        let within = file(inZero[1], size: 5000, mtime: 2)
        let hashes = [within.relativePath: "abc", inOne[0]: "abc"]
        let same = planner(sharded(0), hashes: hashes).plan(listing: listing([within] + stay), stored: stored, identity: known)
        #expect(same.relinks.map(\.to.relativePath) == [within.relativePath] && same.work.isEmpty && same.prune.isEmpty)

        let across = file(inOne[0], size: 5000, mtime: 2)
        let here = planner(sharded(0), hashes: hashes).plan(listing: listing([across] + stay), stored: stored, identity: known)
        #expect(here.relinks.isEmpty && here.work.isEmpty && here.prune.map(\.relativePath) == [old.relativePath])
        let there = planner(sharded(1), hashes: hashes).plan(listing: listing([across] + stay), stored: [], identity: known)
        #expect(there.relinks.isEmpty && there.work.map(\.file.relativePath) == [across.relativePath] && there.prune.isEmpty)
    }
}
