import ArgumentParser
import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NIOCore

/// `naviscan serve`: the companion API's read endpoints over a scan's store.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve profiles, visualizer frames, the audio and a web page over HTTP, keeping the library analysed.",
        discussion: """
            --out defaults to LIBRARY/.naviscan for the library given with --library (or 'library' in the \
            config file), the same place `scan` writes. --data is the same as --out. Ctrl-C or SIGTERM stops \
            it cleanly.

            While it serves, it keeps the library analysed: it scans once at start, watches the library \
            (inotify, new folders included) and scans again, incrementally and with the same prune guard as \
            `naviscan scan`, once changes have been quiet for 3 s and no file is still being written; and it \
            re-scans everything every --rescan-interval. --no-watch turns all of that off. Open \
            http://HOST:PORT/ for the web page.

            Examples:
              naviscan serve --library ~/Music
              naviscan serve -o /srv/naviscan --host 0.0.0.0 --port 8080
            """
    )

    @Option(help: "The music library (default: the one the last scan recorded in the store).")
    var library: String?

    @Option(help: ArgumentHelp("Address to bind; loopback unless told otherwise (\(Settings.host.defaultText)).", valueName: "address"))
    var host: String?

    @Option(help: ArgumentHelp("TCP port (\(Settings.port.defaultText)).", valueName: "port"))
    var port: Int?

    @Option(name: .shortAndLong, help: ArgumentHelp("Worker threads for POST /visualizer/precompute and background scans (\(Settings.serveJobs.defaultText))."))
    var jobs: Int?

    @Flag(name: .customLong("no-watch"), help: "Do not keep the library analysed: no watch, no background scans.")
    var noWatch = false

    @Option(help: ArgumentHelp("Full re-scan of the library while serving, as 30m, 6h, 1d; 0 for none (\(Settings.rescanInterval.defaultText)).",
                               valueName: "interval"))
    var rescanInterval: String?

    @Flag(name: .customLong("no-stream"), help: "Do not serve the audio files (GET /stream answers 404).")
    var noStream = false

    @Option(help: ArgumentHelp("Allow browser pages from this origin to call the API (CORS), e.g. https://music.example.org, or * for any (\(Settings.corsOrigin.defaultText)).",
                               valueName: "origin"))
    var corsOrigin: String?

    @OptionGroup var store: StoreOptions

    func validate() throws {
        if let port, !(0...65_535).contains(port) { throw ValidationError("--port must be 0…65535") }
        if let jobs, !(1...64).contains(jobs) { throw ValidationError("--jobs must be 1…64") }
        if let rescanInterval, Self.interval(rescanInterval) == nil {
            throw ValidationError("--rescan-interval must be a number with s, m, h or d (30m, 6h, 1d), or 0 for none; got '\(rescanInterval)'")
        }
    }

    var flags: [String: SettingValue] {
        var values = store.flags(library: library)
        if let host { values[Settings.host.key] = .string(host) }
        if let port { values[Settings.port.key] = .int(port) }
        if let jobs { values[Settings.serveJobs.key] = .int(jobs) }
        if noWatch { values[Settings.watch.key] = .bool(false) }
        if let rescanInterval { values[Settings.rescanInterval.key] = .string(rescanInterval) }
        if noStream { values[Settings.stream.key] = .bool(false) }
        if let corsOrigin { values[Settings.corsOrigin.key] = .string(corsOrigin) }
        return values
    }

    func run() async throws {
        // Precompute analyses with the parameters the store's scans recorded.
        let loaded = try await StoreSettings.load(flags: flags, configFile: store.config.path, libraryArgument: nil, command: "serve --library")
        let (location, settings) = (loaded.location, loaded.settings)
        let host = settings.string(Settings.host) ?? Defaults.host
        let port = settings.int(Settings.port) ?? Defaults.port
        guard (0...65_535).contains(port) else { throw CLIError("\(settings.origin(Settings.port)) must be 0…65535, got \(port)") }
        let jobs = settings.int(Settings.serveJobs) ?? 1
        guard (1...64).contains(jobs) else { throw CLIError("\(settings.origin(Settings.serveJobs)) must be 1…64, got \(jobs)") }

        // Request lines are logged at info: the server logs at info unless told otherwise.
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = .info
            return handler
        }
        let logger = Logger(label: "naviscan.serve")
        var configuration = ServerConfiguration(dataDirectory: location.out, library: location.library, host: host, port: port)
        configuration.precomputeJobs = jobs
        configuration.stream = settings.bool(Settings.stream) ?? true
        configuration.corsOrigin = settings.string(Settings.corsOrigin)
        if settings.bool(Settings.watch) ?? true {
            let text = settings.string(Settings.rescanInterval) ?? Defaults.rescanInterval
            guard let interval = Self.interval(text) else {
                throw CLIError("\(settings.origin(Settings.rescanInterval)) must be a number with s, m, h or d (30m, 6h, 1d), or 0 for none; got '\(text)'")
            }
            var maintenance = Maintenance()
            maintenance.jobs = jobs
            maintenance.followExternalLinks = settings.bool(Settings.followExternalLinks) ?? false
            maintenance.rescanInterval = interval > .zero ? interval : nil
            configuration.maintenance = maintenance
        }
        configuration.visualizer = try AnalysisSettings.visualizer(settings)
        configuration.profile = try AnalysisSettings.profile(settings)
        // Background scans record what a plain `naviscan scan` with these settings would.
        configuration.parameters = AnalysisParameters(AnalysisSettings.recorded(settings, outputs: try AnalysisSettings.outputs(settings)))
        do {
            let app = try NaviscanAPI.makeApplication(configuration: configuration, logger: logger) { port in
                // One plain line, so scripts (and the tests) learn the port when --port 0 picked one.
                FileHandle.standardError.write(Data("naviscan: listening on http://\(host):\(port)\n".utf8))
            }
            try await app.runService()
        } catch {
            throw CLIError(Self.describe(error, host: host, port: port))
        }
    }

    /// `30m`, `6h`, `1d`, `90s` (or a bare number of seconds); `0` is zero (no periodic re-scan).
    static func interval(_ text: String) -> Duration? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var scale = 1.0
        if let last = number.last, let unit = units[last] {
            scale = unit
            number = number.dropLast()
        }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return .milliseconds(Int64(Int(saturating: value * scale * 1000)))
    }

    /// Socket errors in words: which address, what to do.
    static func describe(_ error: Error, host: String, port: Int) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case EADDRINUSE:
                return "port \(port) on \(host) is already in use (another naviscan serve, or another server); stop it or pass --port N"
            case EACCES:
                return "no permission to listen on port \(port) (ports below 1024 need root or CAP_NET_BIND_SERVICE); pass --port 8000 or higher"
            case EADDRNOTAVAIL:
                return "cannot listen on \(host): it is not an address of this machine; pass --host 127.0.0.1, or 0.0.0.0 for every interface"
            default:
                return "cannot listen on \(host):\(port): \(String(cString: strerror(io.errnoCode)))"
            }
        }
        if error is SocketAddressError || error is SocketAddressError.UnknownHost {
            return "cannot listen on \(host):\(port): '\(host)' is not a known host name or address; pass --host 127.0.0.1 or 0.0.0.0"
        }
        return UserMessage.describe(error)
    }
}
