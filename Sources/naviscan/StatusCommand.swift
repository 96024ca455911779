import ArgumentParser
import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// `naviscan status`: what a store holds, what failed and why, what a plain re-scan would do.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a store: tracks analysed, failed, unsupported and pending, the last scan, disk used.",
        discussion: """
            Pending counts the library's files a plain `naviscan scan` would analyse now: new, changed, or \
            made with other parameters. It walks the library when it is reachable.

            Examples:
              naviscan status ~/Music
              naviscan status -o /srv/naviscan --json
            """
    )

    @Argument(help: "The music library (its store is LIBRARY/.naviscan unless --out says otherwise).")
    var library: String?

    @Flag(help: "Print as JSON.")
    var json = false

    @OptionGroup var store: StoreOptions

    struct Report: Encodable {
        struct Failure: Encodable { var relativePath: String; var reason: String
            enum CodingKeys: String, CodingKey { case relativePath = "relative_path", reason } }
        var store: String
        var library: String?
        /// The shards the store holds ("2/8"); nil for the whole library.
        var shards: String?
        var analysed = 0
        var failed = 0
        var unsupported: Int?
        var pending: Int?
        /// What the pending work is: whole analyses, or some stages of unchanged tracks.
        var pendingWork: WorkBreakdown?
        var lastScan: ScanRecord?
        var parameters: [String: String] = [:]
        var diskBytes: [String: Int64] = [:]
        var failures: [Failure] = []

        enum CodingKeys: String, CodingKey {
            case store, library, shards, analysed, failed, unsupported, pending, pendingWork = "pending_work", lastScan = "last_scan", parameters
            case diskBytes = "disk_bytes", failures
        }
    }

    func run() async throws {
        let loaded = try await StoreSettings.load(flags: store.flags(library: library), configFile: store.config.path,
                                                  libraryArgument: library, command: "status")
        let location = loaded.location
        try location.requireStore()
        let trackStore: LibraryStore
        do { trackStore = try LibraryStore(path: location.databasePath) } catch { throw CLIError(UserMessage.describe(error)) }
        let tracks = try trackStore.allTracks()
        var report = Report(store: location.out)
        report.library = location.library ?? (try? trackStore.libraryIdentity().root) ?? nil
        let coverage = try trackStore.shardCoverage()
        report.shards = coverage?.description
        report.analysed = tracks.filter { $0.status == .ok }.count
        let failures = tracks.filter { $0.status == .failed }.sorted { $0.relativePath < $1.relativePath }
        report.failed = failures.count
        report.failures = failures.map { Report.Failure(relativePath: $0.relativePath, reason: $0.errorMessage ?? "failed") }
        report.lastScan = try trackStore.lastScan()
        report.parameters = (loaded.recorded ?? [:]).mapValues(\.description)
        report.diskBytes = OutputLayout(root: location.out).diskUse()

        // Pending: what a plain re-scan would analyse, with the parameters it would use.
        if let libraryRoot = report.library, FileManager.default.fileExists(atPath: libraryRoot) {
            let options = try AnalysisSettings.plainScanOptions(loaded.settings, library: libraryRoot, out: location.out)
            if let plan = try? LibraryScanner(options: options, logger: Logger(label: "naviscan.status")).preview() {
                report.unsupported = plan.unsupported
                let pending = plan.work.filter { coverage?.contains(relativePath: $0.file.relativePath) ?? true }
                report.pending = pending.count
                report.pendingWork = WorkBreakdown(pending.map(\.work), requested: options.freshness.requested)
            }
        }

        if json {
            try JSONOutput.write(report)
            return
        }
        print("store:       \(report.store)")
        print("library:     \(report.library ?? "unknown")")
        if let shards = report.shards { print("shards:      \(shards) of the library (`naviscan merge` joins the others)") }
        var counts = "tracks:      \(report.analysed) analysed, \(report.failed) failed"
        if let unsupported = report.unsupported { counts += ", \(unsupported) unsupported" }
        counts += report.pending.map { ", \($0) pending" } ?? " (library not reachable: pending unknown)"
        print(counts)
        if let last = report.lastScan {
            print("last scan:   \(last.finishedAt): \(last.analysed) analysed, \(last.failed) failed"
                  + (last.interrupted ? ", interrupted with \(last.pending) pending" : "") + (last.by.map { " (\($0))" } ?? ""))
        }
        if !report.parameters.isEmpty {
            // What a plain re-scan (the nightly timer's) will do: each analyser on or off, then its parameters.
            let analysers = [Settings.writeVis, Settings.writeDJ].map { setting in
                "\(setting.key) " + (report.parameters[setting.key].map { $0 == "true" ? "on" : "off" } ?? "not decided (on)")
            }
            print("remembered:  " + analysers.joined(separator: ", ") + " (a plain `naviscan scan` writes these; --no-vis or --no-dj turns one off)")
            let rest = report.parameters.filter { $0.key != Settings.writeVis.key && $0.key != Settings.writeDJ.key }
            print("parameters:  " + rest.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        let disk = report.diskBytes.sorted { $0.key < $1.key }.map { "\($0.key) \(Self.megabytes($0.value))" }
        print("disk:        \(Self.megabytes(report.diskBytes.values.reduce(0, +))) (\(disk.joined(separator: ", ")))")
        if !report.failures.isEmpty {
            print("failed:")
            for f in report.failures { print("  \(f.relativePath): \(f.reason)") }
        }
        if let pending = report.pending, pending > 0 {
            if let work = report.pendingWork, !work.partial.isEmpty { print("next scan:   " + work.lines.joined(separator: "; ")) }
            print("run `naviscan scan` on the library to analyse the \(pending) pending files")
        }
    }

    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }
}
