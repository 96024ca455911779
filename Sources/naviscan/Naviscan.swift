import ArgumentParser
import Foundation
import NaviscanCore

@main
struct Naviscan: AsyncParsableCommand {
    static let version = NaviscanVersion.version

    static let configuration = CommandConfiguration(
        commandName: "naviscan",
        abstract: "Offline audio analysis for music libraries: visualizer frames and DJ profiles.",
        discussion: """
            Examples:
              naviscan ~/Music                 # scan (the default command): analyse the library
              naviscan serve --library ~/Music # serve the results to players on port 8000
              naviscan status ~/Music          # what is analysed, failed, pending; disk used
              naviscan tag ~/Music             # ReplayGain and BPM into the files' tags, for Navidrome
              naviscan merge OUT SHARD_OUT...  # join sharded scans (scan --shard K/N) into one store
              naviscan help scan               # every option of a command
            """,
        version: version,
        subcommands: [ScanCommand.self, ServeCommand.self, StatusCommand.self, ShowCommand.self, TagCommand.self,
                      SimilarCommand.self, MixCommand.self, PathCommand.self, ConfigCommand.self,
                      MergeCommand.self, AnalyzeCommand.self, InspectCommand.self, BenchCommand.self],
        defaultSubcommand: ScanCommand.self
    )

    /// Where measured FFTW plans are kept: $NAVISCAN_FFTW_WISDOM (empty: none), else
    /// $XDG_CACHE_HOME/naviscan/fftw-wisdom, else ~/.cache/naviscan/fftw-wisdom.
    static var fftwWisdomFile: String? {
        let env = ProcessInfo.processInfo.environment
        if let file = env["NAVISCAN_FFTW_WISDOM"] { return file.isEmpty ? nil : file }
        if let cache = env["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/naviscan/fftw-wisdom" }
        if let home = env["HOME"], home.hasPrefix("/") { return home + "/.cache/naviscan/fftw-wisdom" }
        return nil
    }

    /// Usage errors exit with 2 (not ArgumentParser's 64), as `scan` documents.
    static func main() async {
        // The Swift runtime reads the command line (and Foundation this executable's path) from
        // /proc; without it a command would run with no arguments, or stop on a trap.
        if access("/proc/self/cmdline", R_OK) != 0 {
            FileHandle.standardError.write(Data(("naviscan: /proc is not mounted, and naviscan reads its own command line from it. "
                + "Mount it first (`mount -t proc proc /proc`; in a chroot, `mount --bind /proc CHROOT/proc`; in a container, "
                + "run it with /proc, as every container runtime provides by default).\n").utf8))
            Foundation.exit(2)
        }
        // From argv's bytes as file names are read (SystemPath): `CommandLine.arguments` repairs a
        // Latin-1 name to U+FFFD, which names no file; an escaped one opens the file and matches the store.
        let arguments = (1..<Int(CommandLine.argc)).map { SystemPath.string(fromCString: CommandLine.unsafeArgv[$0]!) }
        if let message = mistypedCommand(arguments) {
            FileHandle.standardError.write(Data("naviscan: \(message)\n".utf8))
            Foundation.exit(2)
        }
        FFTPlanner.useWisdom(file: fftwWisdomFile)
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("naviscan: \(error.message)\n".utf8))
            Foundation.exit(error.code)
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            if let exitCode = error as? ExitCode { Foundation.exit(exitCode.rawValue) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }

    static var commandNames: [String] {
        configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
    }

    /// `naviscan scna`: the first argument is taken as the library of the default `scan` unless it
    /// looks like a misspelt command: not an existing path, no slash, and close to a command's name.
    static func mistypedCommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-"), !first.contains("/"),
              !commandNames.contains(first), !FileManager.default.fileExists(atPath: first) else { return nil }
        let word = first.lowercased()
        let prefixed = commandNames.filter { word.count >= 2 && $0.hasPrefix(word) }
        let nearest = commandNames.map { ($0, editDistance(word, $0)) }.min { $0.1 < $1.1 }
        let suggestion: String
        if prefixed.count == 1 {
            suggestion = prefixed[0]
        } else if let nearest, nearest.1 <= max(1, nearest.0.count / 3) {
            suggestion = nearest.0
        } else {
            return nil
        }
        return "unknown command '\(first)' — did you mean \(suggestion)? (`naviscan help` lists the commands; a library folder that does not exist is not scanned)"
    }

    /// Levenshtein distance, with a swap of two neighbours counted as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}
