import Foundation
import GRDB
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// A plain library of `count` short FLAC tracks in `folders`, nothing broken.
func makePlainLibrary(in scratch: String, folders: [String] = ["Album A", "Album B"], perFolder: Int = 3, seconds: Double = 2) throws -> (root: String, tracks: [String]) {
    let root = scratch + "/Music"
    var tracks: [String] = []
    for (f, folder) in folders.enumerated() {
        try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        for i in 0..<perFolder {
            let path = "\(folder)/\(i + 1) track.flac"
            try AudioFileWriter.write(.sine(frequency: 200 + Double(100 * (f * perFolder + i)), dBFS: -12, duration: seconds, channels: 2),
                                      to: root + "/" + path, format: .flac16)
            tracks.append(path)
        }
    }
    return (root, tracks)
}

func scan(_ root: String, out: String, jobs: Int = 2, configure: (inout ScanOptions) -> Void = { _ in }) throws -> ScanSummary {
    var options = ScanOptions(library: root, output: out, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: jobs)
    configure(&options)
    return try LibraryScanner(options: options, logger: libraryTestLogger).run()
}

/// Runs a command, returns its status.
@discardableResult
func system(_ arguments: [String]) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}

/// Whether this machine lets the tests mount a tmpfs (root, or a container that allows it).
let canMountTmpfs: Bool = {
    guard getuid() == 0, let dir = try? FixturePaths.makeTemporaryDirectory(prefix: "naviscan-mount-probe") else { return false }
    defer { _ = try? system(["umount", dir]); try? FileManager.default.removeItem(atPath: dir) }
    return (try? system(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir])) == 0
}()

@Suite("Store safety: nothing stored is lost", .serialized)
struct StoreSafetyTests {
    @Test("An empty library folder (NAS mount down) with --out elsewhere keeps every track and says so")
    func unmountedLibrary() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch)
        let out = scratch + "/out"
        #expect(try scan(root, out: out).analysed == tracks.count)
        // The mount point is there, but empty.
        try FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let run = try NaviscanProcess.run([root, "--out", out, "--json", "--quiet"])
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as! [String: Any]
        #expect(summary["pruned"] as? Int == 0 && summary["kept_missing"] as? Int == tracks.count)
        #expect((summary["prune_held_back"] as? String)?.contains("mounted") == true)
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        #expect(try store.allTracks().count == tracks.count)
        #expect(try store.allTracks().allSatisfy { $0.missingSince != nil })
        #expect(try consistencyProblems(out: out) == [])
        // --prune does not empty the store through an empty library either.
        _ = try NaviscanProcess.run([root, "--out", out, "--quiet", "--prune"])
        #expect(try store.count() == tracks.count)
    }

    @Test("A moved album is re-linked with zero decodes: new keys, outputs moved, profiles name the new path")
    func movedAlbum() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch, folders: ["Album A", "Album B", "Album C", "Album D"], perFolder: 2)
        let out = scratch + "/out"
        #expect(try scan(root, out: out).analysed == tracks.count)
        let layout = OutputLayout(root: out)
        let oldInode = try FileManager.default.attributesOfItem(atPath: layout.visPath(key: OutputLayout.key(forRelativePath: tracks[0])))[.systemFileNumber] as? Int

        try FileManager.default.createDirectory(atPath: root + "/Artist", withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: root + "/Album A", toPath: root + "/Artist/Album A (2001)")
        let second = try scan(root, out: out)
        #expect(second.relinked == 2 && second.analysed == 0 && second.pruned == 0 && second.unchanged == tracks.count - 2)
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        let moved = "Artist/Album A (2001)/1 track.flac"
        let record = try #require(try store.track(relativePath: moved))
        #expect(record.key == OutputLayout.key(forRelativePath: moved))
        #expect(try store.track(relativePath: tracks[0]) == nil)
        let newInode = try FileManager.default.attributesOfItem(atPath: layout.visPath(key: record.key))[.systemFileNumber] as? Int
        #expect(newInode == oldInode)   // the same frames, linked, not recomputed
        let profile = try String(contentsOfFile: layout.profilePath(key: record.key), encoding: .utf8)
        #expect(profile.contains("\"relative_path\" : \"\(moved)\"") && record.profileJSON == profile)
        #expect(!FileManager.default.fileExists(atPath: layout.visPath(key: OutputLayout.key(forRelativePath: tracks[0]))))
        #expect(try consistencyProblems(out: out) == [])
        #expect(try scan(root, out: out).unchanged == tracks.count)
    }

    @Test("A frame file that vanished or was replaced by garbage is re-analysed by the next scan")
    func damagedOutputs() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch)
        let out = scratch + "/out"
        _ = try scan(root, out: out)
        let layout = OutputLayout(root: out)
        try FileManager.default.removeItem(atPath: layout.visPath(key: OutputLayout.key(forRelativePath: tracks[0])))
        try Data(repeating: 0x41, count: 500).write(to: URL(fileURLWithPath: layout.visPath(key: OutputLayout.key(forRelativePath: tracks[1]))))
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: layout.profilePath(key: OutputLayout.key(forRelativePath: tracks[2]))))
        let again = try scan(root, out: out)
        #expect(again.analysed == 3 && again.unchanged == tracks.count - 3)
        #expect(try consistencyProblems(out: out) == [])
    }

    @Test("A full disk stops the scan (exit 3), records no track as failed, and a re-run with space finishes")
    func fullDisk() throws {
        guard canMountTmpfs else {
            print("skipped: this machine does not let the tests mount a tmpfs")
            return
        }
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch, folders: ["A", "B", "C", "D"], perFolder: 4, seconds: 12)
        let out = scratch + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        // Room for the store and a few frame files (about 92 kB each), not for all sixteen.
        try #require(try system(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", out]) == 0)
        defer { _ = try? system(["umount", out]) }
        let full = try NaviscanProcess.run([root, "--out", out, "--jobs", "2"])
        #expect(full.status == 3, "\(full.stderr)")
        #expect(full.stderr.contains("disk is full"), "\(full.stderr)")
        #expect(!full.stderr.contains("Error Domain"))
        let store = try LibraryStore(path: OutputLayout(root: out).databasePath)
        let recorded = try store.allTracks()
        #expect(recorded.allSatisfy { $0.status == .ok }, "\(recorded.map(\.errorMessage))")
        #expect(recorded.count < tracks.count)
        #expect(try consistencyProblems(out: out, pendingProfiles: true).filter { !$0.hasPrefix("file without a row") } == [])
        // The scan stopped before its album pass: the committed tracks' profiles are in the store,
        // their files still to write (by the next scan, without analysing them again).
        #expect(recorded.allSatisfy { $0.profileStamp == nil && $0.profileJSON != nil })

        try #require(try system(["mount", "-o", "remount,size=20m", out]) == 0)
        let rest = try NaviscanProcess.run([root, "--out", out, "--quiet", "--json"])
        #expect(rest.status == 0, "\(rest.stderr)")
        let summary = try JSONSerialization.jsonObject(with: Data(rest.stdout.utf8)) as! [String: Any]
        #expect(summary["analysed"] as? Int == tracks.count - recorded.count)
        #expect(try store.allTracks().filter { $0.status == .ok }.count == tracks.count)
        #expect(try consistencyProblems(out: out) == [])
    }

    @Test("An unreadable folder keeps its tracks; an unreadable file keeps its analysis and is retried once readable")
    func unreadable() throws {
        guard getuid() == 0 else {
            print("skipped: needs root to run the scan as another user (root reads everything)")
            return
        }
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { _ = try? system(["chmod", "-R", "u+rwX", scratch]); try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch)
        let out = scratch + "/out"
        #expect(try scan(root, out: out).analysed == tracks.count)
        // The scans below run as nobody, as a NAS user would.
        try #require(try system(["chmod", "755", scratch]) == 0)
        try #require(try system(["chown", "-R", "nobody", out]) == 0)
        func scanAsNobody() throws -> [String: Any] {
            let run = try NaviscanProcess.run(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                               NaviscanProcess.executable, root, "--out", out, "--quiet", "--json"],
                                              environment: ["NAVISCAN_FFTW_WISDOM": ""], program: "/usr/bin/setpriv")
            return try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as! [String: Any]
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: root + "/Album B")
        let locked = try scanAsNobody()
        #expect(locked["pruned"] as? Int == 0 && locked["unverified"] as? Int == 3)
        #expect(try LibraryStore(path: OutputLayout(root: out).databasePath).count() == tracks.count)

        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root + "/Album B")
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: root + "/" + tracks[0])
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 10)], ofItemAtPath: root + "/" + tracks[0])
        let denied = try scanAsNobody()
        #expect((denied["failures"] as? [[String: Any]])?.first?["relative_path"] as? String == tracks[0])
        // The unreadable track keeps its earlier analysis: row, profile and frames.
        let kept = try #require(try LibraryStore(path: OutputLayout(root: out).databasePath).track(relativePath: tracks[0]))
        #expect(kept.status == .ok && kept.profileJSON != nil && kept.visFingerprint != nil)
        let keptLayout = OutputLayout(root: out)
        #expect(FileManager.default.fileExists(atPath: keptLayout.profilePath(key: kept.key)))
        #expect(FileManager.default.fileExists(atPath: keptLayout.visPath(key: kept.key)))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: root + "/" + tracks[0])
        let fixed = try scanAsNobody()
        #expect(fixed["analysed"] as? Int == 1 && fixed["failed"] as? Int == 0)
    }

    @Test("More than 20 % vanishing at once is kept as missing until --prune; then they go with their files")
    func pruneThreshold() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch)
        let out = scratch + "/out"
        _ = try scan(root, out: out)
        try FileManager.default.removeItem(atPath: root + "/Album B")
        let held = try scan(root, out: out)
        #expect(held.pruned == 0 && held.keptMissing == 3 && held.pruneHeldBack?.contains("3 of 6") == true)
        #expect(try consistencyProblems(out: out) == [])
        let pruned = try scan(root, out: out) { $0.prune = true }
        #expect(pruned.pruned == 3)
        #expect(try LibraryStore(path: OutputLayout(root: out).databasePath).count() == tracks.count - 3)
        #expect(try consistencyProblems(out: out) == [])
    }

    @Test("A file name that is not UTF-8 is analysed under a distinct path that opens it")
    func nonUTF8Names() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, _) = try makePlainLibrary(in: scratch, folders: ["A"], perFolder: 1)
        // "Beyonc\xe9.flac" and "Beyonc\xe8.flac": Latin-1 names, invalid as UTF-8.
        for byte: UInt8 in [0xE9, 0xE8] {
            try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: root + "/A/tmp.flac", format: .flac16)
            let to = Array((root + "/A/Beyonc").utf8) + [byte] + Array(".flac".utf8) + [0]
            let status = (root + "/A/tmp.flac").withCString { from in
                to.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { rename(from, $0.baseAddress!) } }
            }
            try #require(status == 0)
        }
        let summary = try scan(root, out: scratch + "/out")
        #expect(summary.analysed == 3 && summary.failures.isEmpty, "\(summary.failures)")
        let paths = try LibraryStore(path: OutputLayout(root: scratch + "/out").databasePath).allTracks().map(\.relativePath).filter { $0.contains("Beyonc") }
        #expect(Set(paths).count == 2)
        #expect(paths.allSatisfy { SystemPath.hasEscapes($0) && LibraryWalker.modificationTime(path: root + "/" + $0) != nil })
    }

    @Test("Damaged stores get a plain message and --rebuild-store is the way out")
    func damagedStores() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (root, tracks) = try makePlainLibrary(in: scratch, folders: ["A"], perFolder: 2)
        let out = scratch + "/out"
        _ = try scan(root, out: out)
        let db = OutputLayout(root: out).databasePath
        // The store is in WAL mode: fold the log into the file before copying it.
        try DatabaseQueue(path: db).writeWithoutTransaction { try $0.checkpoint(.truncate) }
        let good = try Data(contentsOf: URL(fileURLWithPath: db))
        func replaceStore(with data: Data) throws {
            try data.write(to: URL(fileURLWithPath: db))
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        }

        func expectMessage(_ words: String, status: Int32 = 3) throws {
            let run = try NaviscanProcess.run([root, "--out", out, "--quiet"])
            #expect(run.status == status, "\(run.stderr)")
            #expect(run.stderr.contains(words), "\(run.stderr)")
            #expect(!run.stderr.contains("SQLite error") && !run.stderr.contains("Error Domain"), "\(run.stderr)")
        }
        // Garbage where the store was.
        try replaceStore(with: Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7919) }))
        try expectMessage("is damaged")
        try expectMessage("--rebuild-store")
        // Truncated to its first page.
        try replaceStore(with: good.prefix(4096))
        try expectMessage("damaged")
        // Written by a newer naviscan.
        try replaceStore(with: good)
        try DatabaseQueue(path: db).write { try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')") }
        try expectMessage("newer naviscan")
        // The way out: set aside, start again, everything analysed.
        let rebuilt = try NaviscanProcess.run([root, "--out", out, "--quiet", "--json", "--rebuild-store"])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(rebuilt.stdout.contains("\"analysed\" : \(tracks.count)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).contains { $0.hasPrefix("naviscan.db.damaged-") })
        // A store on a read-only file system.
        if canMountTmpfs {
            let ro = scratch + "/ro"
            try FileManager.default.createDirectory(atPath: ro, withIntermediateDirectories: true)
            try #require(try system(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", ro]) == 0)
            defer { _ = try? system(["umount", ro]) }
            _ = try NaviscanProcess.run([root, "--out", ro, "--quiet"])
            try #require(try system(["mount", "-o", "remount,ro", ro]) == 0)
            let run = try NaviscanProcess.run([root, "--out", ro, "--quiet"])
            #expect(run.status == 2 || run.status == 3, "\(run.stderr)")
            #expect(run.stderr.contains(ro) && run.stderr.contains("Read-only"), "\(run.stderr)")
        }
    }
}
