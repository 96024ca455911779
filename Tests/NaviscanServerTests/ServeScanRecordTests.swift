import Foundation
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("Scans run by serve record themselves like the CLI's")
struct ServeScanRecordTests {
    @Test("a library kept analysed by serve: status shows serve's last scan, and its failures are not new to the next scan")
    func serveRecordsItsScans() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-serve-record")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = scratch + "/Music", data = scratch + "/data"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        try AudioFileWriter.write(.sine(frequency: 440, duration: 2), to: library + "/one.flac", format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 660, duration: 2), to: library + "/two.wav", format: .wav16)

        let first = try NaviscanProcess.run(["scan", library, "--out", data, "--quiet", "--json", "--fps", "60"])
        #expect(first.status == 0, "\(first.stderr)")
        let before = try #require(try LibraryStore(path: OutputLayout(root: data).databasePath).lastScan())
        #expect(before.analysed == 2 && before.by == ScanLock.Owner.scan.rawValue)

        // While serve runs, a track arrives and a link to a file that is gone (a failure with no row).
        try AudioFileWriter.write(.sine(frequency: 880, duration: 2), to: library + "/three.flac", format: .flac16)
        #expect(symlink(scratch + "/nowhere.flac", library + "/gone.flac") == 0)
        let server = try ServerProcess(arguments: ["--library", library, "--out", data])
        let deadline = Date().addingTimeInterval(60)
        var recorded: ScanRecord?
        while Date() < deadline {
            recorded = try? LibraryStore(path: OutputLayout(root: data).databasePath).lastScan()
            if let recorded, recorded.by == ScanLock.Owner.watch.rawValue { break }
            usleep(200_000)
        }
        server.stop()
        let serveScan = try #require(recorded, "\(server.output)")
        #expect(serveScan.by == ScanLock.Owner.watch.rawValue, "\(server.output)")
        #expect(serveScan.analysed == 1 && serveScan.failed == 1 && !serveScan.interrupted, "\(serveScan)")
        #expect(serveScan.finishedAt >= before.finishedAt)
        // serve folded the log into the main file as it stopped: naviscan.db alone holds its scan.
        try FileManager.default.createDirectory(atPath: scratch + "/copy", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: OutputLayout(root: data).databasePath, toPath: OutputLayout(root: scratch + "/copy").databasePath)
        let copy = try LibraryStore.readOnly(path: OutputLayout(root: scratch + "/copy").databasePath)
        #expect(try copy.lastScan() == serveScan && copy.count() == 3)

        // `naviscan status` reports serve's scan, and the parameters serve analysed with.
        let status = try NaviscanProcess.run(["status", library, "--out", data, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let last = try #require(report["last_scan"] as? [String: Any], "\(status.stdout)")
        #expect(last["analysed"] as? Int == 1 && last["failed"] as? Int == 1, "\(last)")
        #expect((last["by"] as? String)?.contains("serve") == true, "\(last)")
        #expect((report["parameters"] as? [String: Any])?["fps"] as? String == "60", "\(report)")

        // The next plain scan: the failure serve saw is known, so the default --fail-on new passes.
        let next = try NaviscanProcess.run(["scan", library, "--out", data, "--json"])
        #expect(next.status == 0, "\(next.stdout) \(next.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(next.stdout.utf8)) as? [String: Any])
        let failures = try #require(summary["failures"] as? [[String: Any]])
        #expect(failures.count == 1 && failures.first?["known"] as? Bool == true, "\(failures)")
    }
}
