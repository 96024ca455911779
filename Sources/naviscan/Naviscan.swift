import ArgumentParser
import Foundation
import NaviscanCore

@main
struct Naviscan: AsyncParsableCommand {
    static let version = NaviscanVersion.version

    static let configuration = CommandConfiguration(
        commandName: "naviscan",
        abstract: "Offline audio analysis for music libraries: visualizer frames and DJ profiles.",
        version: version,
        subcommands: [ScanCommand.self, AnalyzeCommand.self, InspectCommand.self, ServeCommand.self, BenchCommand.self],
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
        FFTPlanner.useWisdom(file: fftwWisdomFile)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            if let exitCode = error as? ExitCode { Foundation.exit(exitCode.rawValue) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}
