import ArgumentParser
import Foundation
import NaviscanLibrary
import NaviscanStore

/// `naviscan bench LIBRARY`: how fast this machine analyses this library.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure decode-only, decode + loudness and full analysis speed on a library (nothing is written).",
        discussion: """
            Each mode runs over the same files in this one process (after a warm-up pass), per format: files, hours, \
            x-realtime, the ratio to decode-only, the CPU seconds (user + system) and the peak resident memory. \
            --jobs-sweep 1,2,4 instead times decode-only and the full analysis over all files with each number \
            of jobs, and prints how each scales against the first. \
            --queries instead runs `naviscan similar`, `mix` and `path` on the library's store (or --data's) five \
            times each, every run its own process, and prints the median CPU seconds and the largest peak resident \
            memory of each. --store N --into DIR first makes a store of N tracks in DIR from the library's store \
            (its analysed tracks again and again, each row as the scan wrote it, the features varied), then times \
            the commands on it as --queries does, from a process of its own (a command started by a large process \
            would report that process's peak memory as its own).
            """
    )

    @Argument(help: "The music library folder.")
    var library: String

    @Option(help: "Worker threads (default: one per core).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Use at most this many files (in path order).")
    var limit: Int?

    @Option(help: "Time only this mode: decode, loudness or full (repeat for more; default: all three).")
    var mode: [BenchMode] = []

    @Option(name: .customLong("jobs-sweep"), help: ArgumentHelp(
        "Time decode-only and the full analysis with each of these job counts, e.g. 1,2,4,8.", valueName: "N,N,..."))
    var jobsSweep: String?

    @Option(name: .customLong("store"), help: ArgumentHelp("Make a store of this many tracks (in --into) and time the similarity commands on it.", valueName: "N"))
    var storeSize: Int?

    @Option(help: ArgumentHelp("The new folder --store makes its store in.", valueName: "dir"))
    var into: String?

    @Flag(help: "Time the similarity commands (similar, mix, path) on the library's store.")
    var queries = false

    @Option(name: .customLong("data"), help: ArgumentHelp("The library's store folder, for --store and --queries (default: LIBRARY/.naviscan).", valueName: "dir"))
    var data: String?

    @OptionGroup var logging: LoggingOptions

    enum BenchMode: String, ExpressibleByArgument, CaseIterable {
        case decode, loudness, full

        var mode: LibraryBenchmark.Mode {
            switch self {
            case .decode: .decode
            case .loudness: .loudness
            case .full: .full
            }
        }
    }

    /// The parsed --jobs-sweep counts (nil when not given).
    var sweepCounts: [Int]? {
        jobsSweep.map { $0.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) ?? 0 } }
    }

    func validate() throws {
        if let problem = Settings.jobs.outOfRange(Double(jobs)) { throw ValidationError("--jobs \(problem)") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let counts = sweepCounts {
            guard !counts.isEmpty, counts.allSatisfy({ (1...256).contains($0) }) else {
                throw ValidationError("--jobs-sweep takes job counts from 1 to 256 separated by commas, e.g. 1,2,4")
            }
            guard mode.isEmpty else { throw ValidationError("--jobs-sweep times decode and full itself; leave out --mode") }
        }
        if let storeSize {
            guard storeSize >= 2 else { throw ValidationError("--store takes a number of tracks of at least 2") }
            guard into != nil else { throw ValidationError("--store needs --into DIR, a new folder for the store it makes") }
            guard sweepCounts == nil, mode.isEmpty else { throw ValidationError("--store times the similarity commands; leave out --mode and --jobs-sweep") }
            guard !queries else { throw ValidationError("--store times the similarity commands itself; leave out --queries") }
        } else if into != nil {
            throw ValidationError("--into goes with --store N")
        }
        if queries, sweepCounts != nil || !mode.isEmpty {
            throw ValidationError("--queries times the similarity commands; leave out --mode and --jobs-sweep")
        }
    }

    func run() throws {
        let logger = logging.makeLogger()
        let path = URL(fileURLWithPath: library).standardizedFileURL.path
        let benchmark = LibraryBenchmark(library: path, jobs: jobs, limit: limit, logger: logger)
        do {
            if let storeSize, let into {
                try makeStore(size: storeSize, into: StoreLocation.standardized(into), library: path)
            } else if queries {
                try timeQueries(library: path, data: data.map(StoreLocation.standardized) ?? path + "/.naviscan")
            } else if let counts = sweepCounts {
                printSweep(try benchmark.sweep(jobCounts: counts), path: path)
            } else {
                let modes = mode.isEmpty ? LibraryBenchmark.Mode.allCases : BenchMode.allCases.filter(mode.contains).map(\.mode)
                printReport(try benchmark.run(modes: modes), path: path)
            }
        } catch {
            FileHandle.standardError.write(Data("naviscan: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }

    private func printReport(_ report: LibraryBenchmark.Report, path: String) {
        print("naviscan bench \(path), --jobs \(report.jobs)")
        print("format   files    hours   decode x-rt   +loudness x-rt (ratio)   full x-rt (ratio)   cpu s: decode +loudness    full")
        func realtime(_ row: LibraryBenchmark.Row, _ mode: LibraryBenchmark.Mode) -> String {
            row.wall[mode] == nil ? "-" : String(format: "%.0f", row.realtimeFactor(mode))
        }
        func ratio(_ row: LibraryBenchmark.Row, _ mode: LibraryBenchmark.Mode) -> String {
            row.wall[mode] == nil || row.wall[.decode] == nil ? "(-)" : String(format: "(%4.2fx)", row.ratio(mode))
        }
        func cpu(_ row: LibraryBenchmark.Row, _ mode: LibraryBenchmark.Mode) -> String {
            row.cpu[mode].map { String(format: "%.2f", $0) } ?? "-"
        }
        for row in report.rows {
            let name = row.format.padding(toLength: 8, withPad: " ", startingAt: 0)
            let columns = [
                String(format: "%6d %8.2f", row.files, row.audioSeconds / 3600),
                pad(realtime(row, .decode), 13), pad(realtime(row, .loudness), 16), pad(ratio(row, .loudness), 8),
                pad(realtime(row, .full), 12), pad(ratio(row, .full), 8),
                pad(cpu(row, .decode), 14), pad(cpu(row, .loudness), 10), pad(cpu(row, .full), 7),
            ]
            print(name + columns.joined(separator: " "))
        }
        print(String(format: "peak resident memory: %.1f MB", Double(report.peakResidentBytes) / 1_048_576))
        if !report.failed.isEmpty { print("not decodable (skipped): \(report.failed.joined(separator: ", "))") }
    }

    private func printSweep(_ points: [LibraryBenchmark.SweepPoint], path: String) {
        guard let base = points.first else { return }
        print(String(format: "naviscan bench \(path), jobs sweep over %.2f hours of audio (scaling: against --jobs %d)",
                     base.audioSeconds / 3600, base.jobs))
        print("jobs   decode x-rt  scaling    full x-rt  scaling   full/decode scaling   cpu s: decode    full")
        for p in points {
            let decodeScaling = base.decodeWall / p.decodeWall, fullScaling = base.fullWall / p.fullWall
            print(String(format: "%4d %13.0f %7.2fx %12.0f %7.2fx %21.2f %15.2f %7.2f", p.jobs,
                         p.audioSeconds / p.decodeWall, decodeScaling, p.audioSeconds / p.fullWall, fullScaling,
                         fullScaling / decodeScaling, p.decodeCPU, p.fullCPU))
        }
        print("cores: \(ProcessInfo.processInfo.activeProcessorCount)")
    }

    private static var executable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// --store: the store made, then `bench --queries` on it in a process of its own, whose peak
    /// memory its commands inherit instead of this one's (Linux keeps a process's peak across exec).
    private func makeStore(size: Int, into: String, library: String) throws {
        let source = try LibraryStore.readOnly(path: OutputLayout(root: data.map(StoreLocation.standardized) ?? library + "/.naviscan").databasePath)
        let started = Date()
        try StoreBenchmark.makeStore(from: source, into: into, count: size)
        print(String(format: "naviscan bench --store: %d tracks in %@ (made in %.0f s, %.0f MB)", size, into, Date().timeIntervalSince(started),
                     Double((try? FileManager.default.attributesOfItem(atPath: OutputLayout(root: into).databasePath)[.size] as? NSNumber)?.intValue ?? 0) / 1e6))
        fflush(nil)
        let measuring = Process()
        measuring.executableURL = URL(fileURLWithPath: Self.executable)
        measuring.arguments = ["bench", library, "--queries", "--data", into]
        try measuring.run()
        measuring.waitUntilExit()
        guard measuring.terminationStatus == 0 else { throw CLIError("naviscan bench --queries exited \(measuring.terminationStatus)", code: 2) }
    }

    /// --queries: each similarity command five times, each run its own process.
    private func timeQueries(library: String, data: String) throws {
        let store = try LibraryStore.readOnly(path: OutputLayout(root: data).databasePath)
        guard let ends = try store.similarityQueryTracks() else { throw StoreBenchmarkError.noFeatures(data) }
        let commands: [(String, [String])] = [
            ("similar", ["similar", library, ends.first, "--data", data, "--json"]),
            ("mix 25", ["mix", library, ends.first, "--data", data, "--count", "25", "--json"]),
            ("path 12", ["path", library, ends.first, ends.last, "--data", data, "--count", "12", "--json"]),
        ]
        print("naviscan bench --queries: \(data), from \(ends.first)" + (ends.first == ends.last ? "" : " (path to \(ends.last))"))
        print("command    cpu s (median of 5)   peak resident MB (largest)")
        for (name, arguments) in commands {
            let runs = try (0..<5).map { _ in try StoreBenchmark.measure(Self.executable, arguments) }
            if let failed = runs.first(where: { $0.status != 0 }) {
                throw CLIError("naviscan \(arguments.joined(separator: " ")) exited \(failed.status)", code: 2)
            }
            let median = runs.map(\.cpuSeconds).sorted()[2]
            print(name.padding(toLength: 10, withPad: " ", startingAt: 0) + pad(String(format: "%.3f", median), 20)
                  + pad(String(format: "%.0f", Double(runs.map(\.peakResidentBytes).max() ?? 0) / 1_048_576), 29))
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
