import ArgumentParser
import Dispatch
import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// `naviscan scan LIBRARY`: the library job (the default subcommand: `naviscan ~/Music --vis --dj`).
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Analyse every track of a music library: parallel, incremental, resumable.",
        discussion: """
            Results go to --out (default LIBRARY/.naviscan): naviscan.db (SQLite), profiles/ab/<key>.json and \
            vis/ab/<key>.vis. Unchanged tracks are skipped; moved files keep their analysis; tracks gone from \
            the library are pruned, unless the library looks unmounted, a folder could not be read, or more \
            than --prune-threshold of the tracks vanished at once (they are then kept as missing until a \
            scan with --prune). The store records the analysis parameters: a later plain `naviscan scan LIBRARY` analyses the same \
            way, and changing one re-analyses what it affects. The analysers are remembered one by one: \
            `--vis` adds frames to a library that has DJ profiles and keeps the profiles coming; only `--no-dj` \
            (or `--no-vis`) turns one off. Ctrl-C stops cleanly and the next run resumes.

            Every option can also come from NAVISCAN_* variables or the config file (`naviscan help config`); \
            the command line wins.

            Exit status: 0 when every file was analysed or unchanged and no new file failed (files that \
            failed in earlier runs are listed but do not count; --fail-on any counts them, --fail-on never \
            counts nothing); 1 when a file failed or the scan was interrupted; 2 for usage errors and problems \
            that stop the scan before it starts (library unreadable, output not writable, another scan running); 3 when the output \
            or the store failed (disk full, read-only, I/O error, damaged store): nothing stored is lost and \
            nothing was recorded for the tracks in flight; fix it and run again.

            Examples:
              naviscan scan ~/Music                       # both outputs into ~/Music/.naviscan
              naviscan scan ~/Music -o /srv/naviscan -j 4 --encoding f16
              naviscan scan ~/Music --dj --reference-lufs -14 --fail-on any
              naviscan scan /mnt/music --shard 2/8 -o /scratch/shard-2   # one of 8 machines (see naviscan merge)
              naviscan scan /mnt/music --shard auto/8 -o /scratch/shard-$SLURM_ARRAY_TASK_ID
            """
    )

    @Argument(help: "The music library folder (or 'library' in the config file).")
    var library: String?

    @Flag(inversion: .prefixedNo, help: "Write visualizer frames; --no-vis stops (remembered per analyser: naming one never turns the other off).")
    var vis: Bool?

    @Flag(inversion: .prefixedNo, help: "Write DJ profiles; --no-dj stops (a new library gets both unless one alone is named).")
    var dj: Bool?

    @Option(name: .shortAndLong, help: ArgumentHelp("Worker threads (\(Settings.jobs.defaultText), one per core)."))
    var jobs: Int?

    @Flag(name: .customLong("follow-external-links"), inversion: .prefixedNo,
          help: ArgumentHelp(Settings.followExternalLinks.summary + " (\(Settings.followExternalLinks.defaultText))"))
    var followExternalLinks: Bool?

    @Flag(help: "Re-analyse every track, even unchanged ones.")
    var force = false

    @Flag(help: "Retry the tracks that failed before, even if their files did not change.")
    var retryFailed = false

    @Flag(help: "Remove the tracks gone from the library even when the prune guard would keep them.")
    var prune = false

    @Option(help: ArgumentHelp("Percent of the stored tracks that may vanish in one scan before they are kept instead of removed (default: \(Int(Defaults.pruneThreshold * 100)))."))
    var pruneThreshold: Double?

    @Flag(help: "Set a damaged store aside (naviscan.db.damaged-TIME) and start a new one; every track is analysed again.")
    var rebuildStore = false

    @Option(help: ArgumentHelp(
        "Analyse only shard K of N (from 0) of the library, by a stable hash of each track's path; auto/N reads K from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX. Each shard needs its own --out; `naviscan merge` joins them.",
        valueName: "K/N|auto/N"))
    var shard: String?

    @Flag(name: .shortAndLong, help: "No progress output; the summary only when the exit status is not 0.")
    var quiet = false

    @Flag(help: "Print the summary as JSON on standard output.")
    var json = false

    @Option(name: .customLong("fail-on"), help: ArgumentHelp(
        "Failures that make the exit status 1: new (only files that failed for the first time), any, or never (\(Settings.failOn.defaultText)).",
        valueName: "new|any|never"))
    var failOn: String?

    @OptionGroup var store: StoreOptions
    @OptionGroup(title: "Visualizer") var visualizer: VisualizerOptions
    @OptionGroup(title: "DJ profile") var profile: ProfileOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if let jobs, let problem = Settings.jobs.outOfRange(Double(jobs)) { throw ValidationError("--jobs \(problem)") }
        if let pruneThreshold, !(0...100).contains(pruneThreshold) { throw ValidationError("--prune-threshold is a percentage, 0 to 100; got \(pruneThreshold)") }
        if let failOn, FailurePolicy(rawValue: failOn) == nil { throw ValidationError("--fail-on must be new, any or never, not '\(failOn)'") }
        _ = try resolvedShard()
    }

    /// The --shard value, with auto/N read from the job scheduler's variables.
    func resolvedShard() throws -> Shard? {
        guard let shard else { return nil }
        do { return try Shard(parsing: shard, environment: ProcessInfo.processInfo.environment) } catch {
            throw ValidationError("--shard \(shard): \(error.description)")
        }
    }

    var flags: [String: SettingValue] {
        var values = visualizer.flags.merging(profile.flags) { a, _ in a }.merging(store.flags(library: library)) { a, _ in a }
        if let jobs { values[Settings.jobs.key] = .int(jobs) }
        if let vis { values[Settings.writeVis.key] = .bool(vis) }
        if let dj { values[Settings.writeDJ.key] = .bool(dj) }
        if let failOn { values[Settings.failOn.key] = .string(failOn) }
        if let followExternalLinks { values[Settings.followExternalLinks.key] = .bool(followExternalLinks) }
        return values
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let loaded = try await StoreSettings.load(flags: flags, configFile: store.config.path, libraryArgument: library, command: "scan")
        let (location, recorded, settings) = (loaded.location, loaded.recorded, loaded.settings)
        guard let libraryPath = location.library else {
            throw CLIError("which library? Give it as `naviscan scan ~/Music` or set 'library' in the config file")
        }
        var options = try AnalysisSettings.plainScanOptions(settings, library: libraryPath, out: location.out)
        let policyName = settings.string(Settings.failOn) ?? FailurePolicy.new.rawValue
        guard let policy = FailurePolicy(rawValue: policyName) else {
            throw CLIError("\(settings.origin(Settings.failOn)) must be new, any or never, not '\(policyName)'")
        }
        options.force = force
        options.retryFailed = retryFailed
        options.prune = prune
        if let pruneThreshold { options.pruneThreshold = pruneThreshold / 100 }
        options.rebuildStore = rebuildStore
        options.shard = try resolvedShard()
        if let recorded, let parameters = options.parameters, !quiet, !force {
            let changes = RecordedParameters.differences(from: recorded, to: parameters.values)
            if !changes.isEmpty {
                // The planner's own count: what this scan will analyse (new and changed files too).
                let count = (try? LibraryScanner(options: options, logger: logger).preview().work.count).map(String.init) ?? "all"
                FileHandle.standardError.write(Data("naviscan: parameters changed (\(changes.joined(separator: ", "))): \(count) tracks will be analysed\n".utf8))
            }
        }
        let scanner = LibraryScanner(options: options, logger: logger)
        let signals = Self.installStopHandlers(scanner)
        defer { withExtendedLifetime(signals) {} }
        let reporter = quiet ? nil : ProgressReporter(scanner: scanner)
        reporter?.start()
        var summary: ScanSummary
        do {
            summary = try scanner.run()
        } catch {
            reporter?.stop()
            throw CLIError(UserMessage.describe(error), code: (error as? LibraryError)?.isFault == true ? 3 : 2)
        }
        reporter?.stop()
        if let fault = summary.faultError.map(UserMessage.describe) ?? summary.fault {
            throw CLIError("stopped: \(fault)\nNothing stored was lost; \(summary.pending) tracks are left to analyse: "
                + "fix this and run the scan again.", code: 3)
        }
        let counted = summary.failures.filter { policy == .any || (policy == .new && !$0.known) }
        let failing = !counted.isEmpty || summary.interrupted
        if json {
            try JSONOutput.write(summary)
        } else if !quiet || failing {
            // --quiet prints the summary only with a failing status: cron mails only then.
            FileHandle.standardError.write(Data(Self.describe(summary, library: libraryPath, out: location.out,
                                                              explicitOut: settings.string(Settings.out) != nil).utf8))
        }
        if failing { throw ExitCode(1) }
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

    static func describe(_ s: ScanSummary, library: String, out: String, explicitOut: Bool) -> String {
        let scope = s.shard.map { " in shard \($0) (\(s.otherShards) left to the other shards)" } ?? ""
        var text = "\(library): \(s.total) audio files\(scope): \(s.analysed) analysed, \(s.unchanged) unchanged, \(s.failed) failed, "
            + "\(s.unsupported) unsupported, \(s.pruned) removed from the store\n"
        if s.analysed > 0 {
            text += String(format: "%.2f h of audio analysed in %@ (%.0fx realtime)\n", s.audioSeconds / 3600,
                           formatClock(s.wallSeconds), s.realtimeFactor)
            // Only worth a line when some tracks ran part of their analysis (an upgrade).
            if !s.work.partial.isEmpty { text += "Analysed: " + s.work.lines.joined(separator: "; ") + "\n" }
        }
        if !s.failures.isEmpty {
            let known = s.failures.filter(\.known).count
            text += "Failed" + (known > 0 ? " (\(known) already in earlier runs):\n" : ":\n")
            // Names may hold newlines; the summary often lands in a log (a timer's journal).
            for f in s.failures.prefix(10) {
                text += "  \(EscapingLogHandler.escaped(f.relativePath)): \(EscapingLogHandler.escaped(f.reason))\(f.known ? " (known)" : "")\n"
            }
            if s.failures.count > 10 { text += "  … and \(s.failures.count - 10) more (`naviscan status` lists all)\n" }
        }
        if s.relinked > 0 { text += "\(s.relinked) moved or renamed files kept their analysis\n" }
        if let held = s.pruneHeldBack {
            text += "Kept \(s.keptMissing) tracks that are gone from the library, as missing: \(held). "
                + "If they were removed on purpose, run the scan again with --prune.\n"
        }
        if !s.externalLinks.isEmpty {
            text += "Not followed: \(s.externalLinks.count) folder symlinks lead outside the library (\(EscapingLogHandler.escaped(s.externalLinks.prefix(3).joined(separator: ", ")))"
                + (s.externalLinks.count > 3 ? ", …" : "") + "); pass --follow-external-links to scan them\n"
        }
        if s.unverified > 0 { text += "\(s.unverified) stored tracks are in folders that could not be read this time; they were kept\n" }
        if let aside = s.storeSetAside { text += "The damaged store was moved to \(aside)\n" }
        if !s.unsupportedFiles.isEmpty {
            text += "Unsupported formats (not analysed): \(EscapingLogHandler.escaped(s.unsupportedFiles.prefix(3).joined(separator: ", ")))"
                + (s.unsupportedFiles.count > 3 ? " and \(s.unsupportedFiles.count - 3) more" : "") + "\n"
        }
        let outArgument = explicitOut ? " --out \(shellQuoted(out))" : ""
        text += "Results: \(out) (\(OutputLayout(root: out).presentEntries().joined(separator: ", ")))\n"
        if s.interrupted {
            text += "Interrupted: \(s.pending) files not analysed yet; run the same command again to resume.\n"
        } else if let shard = s.shard {
            text += "Next: once every shard is scanned, `naviscan merge OUT \(shellQuoted(out)) …` joins this shard (\(shard)) with the others into one store.\n"
        } else {
            text += "Next: `naviscan serve --library \(shellQuoted(library))\(outArgument)` serves them to players; "
                + "`naviscan status\(explicitOut ? outArgument : " " + shellQuoted(library))` shows the store.\n"
        }
        return text
    }
}

func shellQuoted(_ path: String) -> String {
    path.allSatisfy { $0.isLetter || $0.isNumber || "/._-~+".contains($0) } ? path : "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

func formatClock(_ seconds: Double) -> String {
    let s = min(max(Int(saturating: seconds.rounded()), 0), 359_999_999)
    return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
}
