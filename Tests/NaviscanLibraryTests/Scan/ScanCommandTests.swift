import Foundation
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("naviscan scan (the executable)", .serialized)
struct ScanCommandTests {
    @Test("naviscan LIBRARY is a scan: exit 1 with failures listed, --json summary, 0 when all is well")
    func exitStatusAndJSON() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let run = try NaviscanProcess.run([library.root, "--quiet", "--json"])
        #expect(run.status == 1)
        let summary = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as! [String: Any]
        #expect(summary["analysed"] as? Int == library.good.count)
        #expect((summary["failures"] as? [[String: Any]])?.count == library.bad.count)

        for bad in library.bad { try? FileManager.default.removeItem(atPath: library.root + "/" + bad) }
        let clean = try NaviscanProcess.run(["scan", library.root, "--vis", "--dj"])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.stderr.contains("0 analysed") && clean.stderr.contains("0 failed"))

        #expect(try NaviscanProcess.run([library.root, "--jobs", "0"]).status == 2)
        #expect(try NaviscanProcess.run([scratch + "/no such library"]).status == 2)
    }

    @Test("FFTW plans are measured once into the wisdom file and reused by later runs")
    func fftwWisdom() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let wisdom = scratch + "/cache/fftw-wisdom"
        let track = FixturePaths.fixturesDirectory + "/demo/groove_120bpm.mp3"
        let first = try NaviscanProcess.run(["analyze", track, "--dj", "--vis", scratch + "/a.vis"],
                                            environment: ["NAVISCAN_FFTW_WISDOM": wisdom])
        #expect(first.status == 0, "\(first.stderr)")
        let saved = try String(contentsOfFile: wisdom, encoding: .utf8)
        #expect(saved.hasPrefix("(fftw-3"), "\(saved.prefix(40))")
        let second = try NaviscanProcess.run(["analyze", track, "--dj", "--vis", scratch + "/b.vis"],
                                             environment: ["NAVISCAN_FFTW_WISDOM": wisdom])
        #expect(second.status == 0)
        // Nothing new to measure: the file is left as it was.
        #expect(try String(contentsOfFile: wisdom, encoding: .utf8) == saved)
        let profile = { (json: String) in json.split(separator: "\n").filter { !$0.contains("analyzed_at") } }
        #expect(profile(first.stdout) == profile(second.stdout))
        // An empty setting turns measuring off and writes nothing.
        let unmeasured = scratch + "/none"
        let estimated = try NaviscanProcess.run(["analyze", track, "--dj"], environment: ["NAVISCAN_FFTW_WISDOM": "", "HOME": unmeasured])
        #expect(estimated.status == 0)
        #expect(!FileManager.default.fileExists(atPath: unmeasured))
    }

    @Test("A scan killed with SIGKILL mid-run resumes to a complete, consistent store")
    func killAndResume() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch, trackSeconds: 20, extraTracks: 10)
        let out = scratch + "/out"
        let (process, _, _) = try NaviscanProcess.start([library.root, "--out", out, "--jobs", "1", "--quiet"])
        // Kill it once some but not all tracks are in the store.
        let db = OutputLayout(root: out).databasePath
        let deadline = Date(timeIntervalSinceNow: 60)
        var stored = 0
        while Date() < deadline && process.isRunning {
            if FileManager.default.fileExists(atPath: db), let count = try? LibraryStore(path: db).count(), count >= 3 {
                stored = count
                break
            }
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the scan finished before it could be killed")
        #expect(stored >= 3)
        // Whatever was committed is whole: no row without its files, no torn file.
        #expect(try consistencyProblems(out: out, pendingProfiles: true).filter { !$0.hasPrefix("temporary file left") && !$0.hasPrefix("file without a row") } == [])

        let resumed = try NaviscanProcess.run([library.root, "--out", out, "--quiet", "--json"])
        let summary = try JSONSerialization.jsonObject(with: Data(resumed.stdout.utf8)) as! [String: Any]
        #expect((summary["analysed"] as! Int) + (summary["unchanged"] as! Int) == library.good.count)
        #expect((summary["analysed"] as! Int) < library.good.count)   // it resumed, it did not start over
        #expect(try consistencyProblems(out: out) == [])
        #expect(try NaviscanProcess.run([library.root, "--out", out, "--quiet", "--json"]).stdout.contains("\"analysed\" : 0"))
    }

    @Test("SIGTERM stops the scan cleanly with a summary; the next run finishes the job")
    func terminateAndResume() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch, trackSeconds: 20, extraTracks: 10)
        let out = scratch + "/out"
        let (process, stdout, stderr) = try NaviscanProcess.start([library.root, "--out", out, "--jobs", "1", "--quiet", "--json"])
        let db = OutputLayout(root: out).databasePath
        while process.isRunning, (try? LibraryStore(path: db).count()) ?? 0 < 2 { usleep(20_000) }
        process.terminate()
        let text = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "stderr: \(errors)")
        let summary = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        #expect(summary["interrupted"] as? Bool == true)
        #expect(try consistencyProblems(out: out) == [])
        let rest = try NaviscanProcess.run([library.root, "--out", out, "--quiet"])
        #expect(rest.status == 1)   // the bad files still fail
        #expect(try consistencyProblems(out: out) == [])
        #expect(try LibraryStore(path: db).allTracks().filter { $0.status == .ok }.count == library.good.count)
    }
}

@Suite("The command line words the library's errors with its own flags")
struct CommandLineWordingTests {
    @Test("An output folder that cannot be made names it and --out, exit 2")
    func unwritableOutput() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        try Data("file".utf8).write(to: URL(fileURLWithPath: scratch + "/plain"))
        let run = try NaviscanProcess.run([library.root, "--out", scratch + "/plain/out", "--quiet"])
        #expect(run.status == 2 && run.stderr.contains(scratch + "/plain/out") && run.stderr.contains("pass --out DIR"), "\(run.stderr)")
    }
}

@Suite("The store on disk after a scan")
struct StoreFileTests {
    @Test("After a scan the store's main file alone is the whole store (its log folded in before the scan exits)")
    func mainFileIsWhole() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let run = try NaviscanProcess.run([library.root, "--out", scratch + "/out", "--quiet", "--json"])
        #expect(run.status == 1, "\(run.stderr)")
        try FileManager.default.createDirectory(atPath: scratch + "/copy", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: OutputLayout(root: scratch + "/out").databasePath, toPath: OutputLayout(root: scratch + "/copy").databasePath)
        let original = try LibraryStore(path: OutputLayout(root: scratch + "/out").databasePath)
        let copy = try LibraryStore.readOnly(path: OutputLayout(root: scratch + "/copy").databasePath)
        #expect(try copy.allTracks() == original.allTracks())
        #expect(try copy.count() >= library.good.count)
        #expect(try copy.lastScan() == original.lastScan() && copy.lastScan() != nil)
        #expect(try copy.failedPaths() == original.failedPaths() && !copy.failedPaths().isEmpty)
    }
}
