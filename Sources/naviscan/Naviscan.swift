import ArgumentParser

@main
struct Naviscan: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "naviscan",
        abstract: "Offline audio analysis for music libraries: visualizer frames and DJ profiles.",
        version: version,
        subcommands: [AnalyzeCommand.self, InspectCommand.self]
    )
}
