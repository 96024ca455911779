import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanTestSupport
import Testing

@Suite("naviscan bench")
struct LibraryBenchmarkTests {
    @Test("Every mode runs on every decodable file, grouped by format; undecodable files are listed")
    func report() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let report = try LibraryBenchmark(library: library.root, jobs: 2, limit: nil, logger: libraryTestLogger).run()
        let formats = Dictionary(uniqueKeysWithValues: report.rows.map { ($0.format, $0) })
        #expect(Set(formats.keys) == ["flac", "wav", "ogg", "aiff", "mp3", "mp4", "asf", "ape", "wavpack", "tta", "mka", "all"])
        #expect(formats["all"]?.files == library.good.count)
        // Audio seconds are the decoded lengths: 2 s for the gapless MP3 fixture.
        #expect(abs((formats["mp3"]?.audioSeconds ?? 0) - 2) < 0.001)
        // 3 s each for the gapless AAC and the ALAC fixtures.
        #expect(abs((formats["mp4"]?.audioSeconds ?? 0) - 6) < 0.001)
        for row in report.rows {
            for mode in LibraryBenchmark.Mode.allCases { #expect((row.wall[mode] ?? 0) > 0, "\(row.format) \(mode)") }
        }
        #expect(Set(report.failed) == Set(library.bad.filter { !$0.hasSuffix("gone.flac") }))
        #expect(report.peakResidentBytes > 1_000_000)
        // --limit takes the first files in path order.
        #expect(try LibraryBenchmark(library: library.root, jobs: 1, limit: 2, logger: libraryTestLogger).run()
            .rows.reduce(0) { $0 + ($1.format == "all" ? 0 : $1.files) } <= 2)
    }

    @Test("Only the modes asked for are timed, each with its CPU time; a jobs sweep covers every decodable file at each count")
    func modesAndSweep() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let benchmark = LibraryBenchmark(library: library.root, jobs: 2, limit: nil, logger: libraryTestLogger)
        let report = try benchmark.run(modes: [.full])
        let all = try #require(report.rows.first { $0.format == "all" })
        for row in report.rows {
            #expect(row.wall[.decode] == nil && row.wall[.loudness] == nil && row.cpu[.decode] == nil, "\(row.format)")
            #expect((row.wall[.full] ?? 0) > 0 && (row.cpu[.full] ?? 0) > 0, "\(row.format)")
        }
        let points = try benchmark.sweep(jobCounts: [1, 2, 3])
        #expect(points.map(\.jobs) == [1, 2, 3])
        for point in points {
            // Every decodable file, every time: the same decoded audio as the per-format report.
            #expect(abs(point.audioSeconds - all.audioSeconds) < 1e-6, "--jobs \(point.jobs)")
            #expect(point.decodeWall > 0 && point.fullWall > 0 && point.decodeCPU > 0 && point.fullCPU > 0, "--jobs \(point.jobs)")
        }
        // The command prints one row per job count and checks the list.
        let sweep = try NaviscanProcess.run(["bench", library.root, "--jobs-sweep", "1,2"])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        let rows = sweep.stdout.split(separator: "\n").filter { $0.first == " " }
        #expect(rows.map { $0.split(separator: " ").first } == ["1", "2"])
        #expect(try NaviscanProcess.run(["bench", library.root, "--jobs-sweep", "1,0"]).status == 2)
        #expect(try NaviscanProcess.run(["bench", library.root, "--jobs-sweep", "1", "--mode", "full"]).status == 2)
    }
}
