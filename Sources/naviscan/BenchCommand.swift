import ArgumentParser
import Foundation
import NaviscanLibrary

/// `naviscan bench LIBRARY`: how fast this machine analyses this library.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure decode-only, decode + loudness and full analysis speed on a library (nothing is written).",
        discussion: "Each mode runs over the same files in this one process (after a warm-up pass), per format: files, hours, x-realtime, the ratio to decode-only, and the peak resident memory."
    )

    @Argument(help: "The music library folder.")
    var library: String

    @Option(help: "Worker threads (default: one per core).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Use at most this many files (in path order).")
    var limit: Int?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard jobs >= 1 && jobs <= 256 else { throw ValidationError("--jobs must be between 1 and 256") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let logger = logging.makeLogger()
        let path = URL(fileURLWithPath: library).standardizedFileURL.path
        let report: LibraryBenchmark.Report
        do {
            report = try LibraryBenchmark(library: path, jobs: jobs, limit: limit, logger: logger).run()
        } catch {
            FileHandle.standardError.write(Data("naviscan: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print("naviscan bench \(path), --jobs \(report.jobs)")
        print("format   files    hours   decode x-rt   +loudness x-rt (ratio)   full x-rt (ratio)")
        for row in report.rows {
            let name = row.format.padding(toLength: 8, withPad: " ", startingAt: 0)
            print(name + String(format: "%6d %8.2f %13.0f %16.0f (%4.2fx) %12.0f (%4.2fx)",
                                row.files, row.audioSeconds / 3600,
                                row.realtimeFactor(.decode), row.realtimeFactor(.loudness), row.ratio(.loudness),
                                row.realtimeFactor(.full), row.ratio(.full)))
        }
        print(String(format: "peak resident memory: %.1f MB", Double(report.peakResidentBytes) / 1_048_576))
        if !report.failed.isEmpty { print("not decodable (skipped): \(report.failed.joined(separator: ", "))") }
    }
}
