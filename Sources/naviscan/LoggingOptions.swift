import ArgumentParser
import Logging
import NaviscanCore

/// Shared by every subcommand; only the executable configures logging.
struct LoggingOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log debug details to standard error.")
    var verbose = false

    func makeLogger() -> Logger {
        let level: Logger.Level = verbose ? .debug : .warning
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
        return Logger(label: "naviscan")
    }
}
