import ArgumentParser
import Foundation
import NaviscanLibrary
import NaviscanStore

/// `naviscan merge OUT SHARD_OUT...`: joins the stores of `scan --shard` runs into one.
struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge the stores of sharded scans (scan --shard K/N) into one store.",
        discussion: """
            Copies every shard's tracks into OUT: their rows, profiles, visualizer frames and every other \
            per-track file (hard links when OUT is on the same file system, copies otherwise), written under \
            temporary names and renamed into place. OUT is then a normal store: `naviscan serve --out OUT` \
            serves it and a plain `naviscan scan LIBRARY --out OUT` finds every merged track unchanged.

            Merging is idempotent: tracks OUT already holds as their shard does are not touched, so running \
            it again changes nothing. A shard scanned again (after a failure, or later) is merged again on its \
            own: OUT's part of that shard becomes what the shard store holds. Shards may be merged as they \
            finish; `naviscan status --out OUT` and the summary say which OUT holds.

            It refuses, before writing anything, stores made with different analysis parameters or naviscan \
            versions, stores that were not made with --shard, and a shard given twice. The shard stores are \
            only read. Exit status: 0 when merged; 2 when refused or for usage errors (another scan or merge \
            writing OUT); 3 when OUT or a shard store failed (disk full, read-only, damaged store).

            Examples:
              naviscan merge /srv/naviscan /scratch/shard-0 /scratch/shard-1 /scratch/shard-2 /scratch/shard-3
              naviscan merge /srv/naviscan /scratch/shard-2        # shard 2 was scanned again
              naviscan merge /music/.naviscan /scratch/shard-* --json
            See docs/scale-out.md for Slurm and Kubernetes recipes.
            """
    )

    @Argument(help: ArgumentHelp("The merged store's folder (created when missing).", valueName: "out"))
    var out: String

    @Argument(help: ArgumentHelp("The --out folders of the shard scans.", valueName: "shard-out"))
    var shardOuts: [String] = []

    @Flag(name: .shortAndLong, help: "No summary when it succeeds.")
    var quiet = false

    @Flag(help: "Print the summary as JSON on standard output.")
    var json = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard !shardOuts.isEmpty else {
            throw ValidationError("give the shard stores to merge after OUT: naviscan merge OUT SHARD_OUT...")
        }
        let sources = shardOuts.map(StoreLocation.standardized)
        if sources.contains(StoreLocation.standardized(out)) {
            throw ValidationError("\(out) is both the output and a shard store; merge into another folder")
        }
        if let missing = shardOuts.first(where: { !FileManager.default.fileExists(atPath: OutputLayout(root: StoreLocation.standardized($0)).databasePath) }) {
            throw ValidationError("\(missing) holds no naviscan store (no naviscan.db); give the --out folders of the `naviscan scan --shard K/N` runs")
        }
    }

    func run() throws {
        let output = StoreLocation.standardized(out)
        let merger = StoreMerger(output: output, sources: shardOuts.map(StoreLocation.standardized), logger: logging.makeLogger())
        let summary: MergeSummary
        do {
            summary = try merger.run()
        } catch {
            throw CLIError(UserMessage.describe(error), code: (error as? LibraryError)?.isFault == true ? 3 : 2)
        }
        if json {
            try JSONOutput.write(summary)
        } else if !quiet {
            let holds = summary.coverage.map { "shards \($0) of the library; merge the others when they are scanned" } ?? "the whole library"
            FileHandle.standardError.write(Data("""
                \(output): \(summary.tracks) tracks: \(summary.written) merged, \(summary.unchanged) unchanged, \(summary.removed) removed \
                (\(summary.filesLinked) files linked, \(summary.filesCopied) copied)
                It holds \(holds).
                Next: `naviscan serve --out \(shellQuoted(output)) --library LIBRARY` serves it; `naviscan status --out \(shellQuoted(output))` shows it.

                """.utf8))
        }
    }
}
