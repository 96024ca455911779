import ArgumentParser
import Dispatch
import Foundation
import NaviscanCore
import NaviscanLibrary

/// `naviscan scan LIBRARY`: the library job (the default subcommand: `naviscan ~/Music --vis --dj`).
struct ScanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Analyse every track of a music library: parallel, incremental, resumable.",
        discussion: """
            Results go to --out (default LIBRARY/.naviscan): naviscan.db (SQLite), profiles/…/<key>.json and \
            vis/…/<key>.vis. Unchanged tracks are skipped; moved files keep their analysis; tracks gone from \
            the library are pruned, unless the library looks unmounted, a folder could not be read, or more \
            than --prune-threshold of the tracks vanished at once (they are then kept as missing until a \
            scan with --prune). Ctrl-C stops cleanly and the next run resumes.

            Exit status: 0 when every supported file was analysed or unchanged, 1 when some failed or the \
            scan was interrupted, 2 for usage or fatal errors, 3 when the output or the store failed (disk \
            full, read-only, I/O error, damaged store): nothing stored is lost; fix it and run again.
            """
    )

    @Argument(help: "The music library folder.")
    var library: String

    @Flag(help: "Write visualizer frames (with neither --vis nor --dj, both are written).")
    var vis = false

    @Flag(help: "Write DJ profiles (with neither --vis nor --dj, both are written).")
    var dj = false

    @Option(help: "Output directory (default: LIBRARY/.naviscan).")
    var out: String?

    @Option(help: "Worker threads (default: one per core).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Flag(help: "Re-analyse every track, even unchanged ones.")
    var force = false

    @Flag(help: "Retry the tracks that failed before, even if their files did not change.")
    var retryFailed = false

    @Flag(help: "Remove the tracks gone from the library even when the prune guard would keep them.")
    var prune = false

    @Option(help: "Percent of the stored tracks that may vanish in one scan before they are kept instead of removed.")
    var pruneThreshold: Double = 20

    @Flag(help: "Set a damaged store aside (naviscan.db.damaged-TIME) and start a new one; every track is analysed again.")
    var rebuildStore = false

    @Flag(help: "No progress output.")
    var quiet = false

    @Flag(help: "Print the summary as JSON on standard output.")
    var json = false

    @OptionGroup(title: "Visualizer") var visualizer: VisualizerOptions
    @OptionGroup(title: "DJ profile") var profile: ProfileOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard jobs >= 1 && jobs <= 256 else { throw ValidationError("--jobs must be between 1 and 256, got \(jobs)") }
        guard (0...100).contains(pruneThreshold) else { throw ValidationError("--prune-threshold is a percentage, 0 to 100; got \(pruneThreshold)") }
    }

    func run() throws {
        let logger = logging.makeLogger()
        let both = !vis && !dj
        let libraryPath = URL(fileURLWithPath: library).standardizedFileURL.path
        let output = URL(fileURLWithPath: out ?? libraryPath + "/.naviscan").standardizedFileURL.path
        var options = ScanOptions(
            library: libraryPath, output: output,
            visualizer: (vis || both) ? try visualizer.makeConfig() : nil,
            profile: (dj || both) ? try profile.makeConfig() : nil,
            jobs: jobs, force: force)
        options.retryFailed = retryFailed
        options.prune = prune
        options.pruneThreshold = pruneThreshold / 100
        options.rebuildStore = rebuildStore
        let scanner = LibraryScanner(options: options, logger: logger)

        let signals = Self.installStopHandlers(scanner)
        defer { withExtendedLifetime(signals) {} }
        let reporter = quiet ? nil : ProgressReporter(scanner: scanner)
        reporter?.start()
        let summary: ScanSummary
        do {
            summary = try scanner.run()
        } catch {
            reporter?.stop()
            FileHandle.standardError.write(Data("naviscan: \(error)\n".utf8))
            throw ExitCode((error as? LibraryError)?.isFault == true ? 3 : 2)
        }
        reporter?.stop()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(summary) + Data("\n".utf8))
        } else if !quiet || summary.failed > 0 {
            FileHandle.standardError.write(Data(Self.describe(summary, library: libraryPath).utf8))
        }
        if let fault = summary.fault {
            FileHandle.standardError.write(Data(("naviscan: stopped: \(fault)\nNothing stored was lost; "
                + "\(summary.pending) tracks are left to analyse: fix this and run the scan again.\n").utf8))
            throw ExitCode(3)
        }
        if summary.failed > 0 || summary.interrupted { throw ExitCode(1) }
    }

    /// First SIGINT/SIGTERM: stop handing out work and finish with a summary. Second: leave at once
    /// (every output is written atomically, so nothing is torn either way).
    static func installStopHandlers(_ scanner: LibraryScanner) -> [DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if scanner.isStopping { Foundation.exit(130) }
                FileHandle.standardError.write(Data("\nnaviscan: stopping; press Ctrl-C again to quit at once\n".utf8))
                scanner.requestStop()
            }
            source.resume()
            return source
        }
    }

    static func describe(_ s: ScanSummary, library: String) -> String {
        var text = "\(library): \(s.total) audio files: \(s.analysed) analysed, \(s.unchanged) unchanged, \(s.failed) failed, "
            + "\(s.unsupported) unsupported, \(s.pruned) removed from the store\n"
        text += String(format: "%.2f h of audio analysed in %@ (%.0fx realtime)%@\n", s.audioSeconds / 3600,
                       formatClock(s.wallSeconds), s.realtimeFactor, s.interrupted ? "; interrupted, run again to resume" : "")
        if s.relinked > 0 { text += "\(s.relinked) moved or renamed files kept their analysis\n" }
        if let held = s.pruneHeldBack {
            text += "Kept \(s.keptMissing) tracks that are gone from the library, as missing: \(held). "
                + "If they were removed on purpose, run the scan again with --prune.\n"
        }
        if s.unverified > 0 { text += "\(s.unverified) stored tracks are in folders that could not be read this time; they were kept\n" }
        if let aside = s.storeSetAside { text += "The damaged store was moved to \(aside)\n" }
        if !s.failures.isEmpty {
            text += "Failed:\n"
            for f in s.failures.prefix(10) { text += "  \(f.relativePath): \(f.reason)\n" }
            if s.failures.count > 10 { text += "  … and \(s.failures.count - 10) more (--json lists all)\n" }
        }
        if !s.unsupportedFiles.isEmpty {
            text += "Unsupported formats (not analysed): \(s.unsupportedFiles.prefix(3).joined(separator: ", "))"
                + (s.unsupportedFiles.count > 3 ? " and \(s.unsupportedFiles.count - 3) more" : "") + "\n"
        }
        return text
    }
}

func formatClock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded())
    return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
}
