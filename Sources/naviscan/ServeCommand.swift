import ArgumentParser
import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NIOCore
import NaviscanStore

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
            re-scans everything every --rescan-interval. --no-watch turns all of that off. A library never \
            scanned gets a new store and its first scan in the background (even with --no-watch); /health \
            and the page show the progress, and the API answers what is done so far. Open http://HOST:PORT/ \
            for the web page.

            Off loopback (--host 0.0.0.0, a LAN address) the audio, the page and every write need an access \
            token: --token, NAVISCAN_SERVE_TOKEN or 'serve.token' in the config file, else the one in OUT/token, \
            made at the first start and printed that once. Players send it as `Authorization: Bearer TOKEN`; a \
            browser opens http://HOST:PORT/?token=TOKEN once. The companion's reads (profiles, frames, \
            waveforms, /ws/push) stay open for the mobile app unless --protect-companion; /health is always open.

            Players send the paths Navidrome reports. The library-relative path works as it is; with \
            Navidrome's "Report Real Path" on, its absolute paths work once --navidrome-music-folder names \
            its music folder (/music in its container); with it off (Navidrome's default), the path Navidrome \
            builds from the tags (Album Artist/Album/DD-TT - Title.ext) is looked up in the stored tags. A \
            Navidrome song ID (id=ID instead of relative_path=P) is looked up in Navidrome's own database \
            when --navidrome-db names it (read only).

            Behind a reverse proxy under a sub-path, pass --base-path /naviscan: requests work with or without \
            the prefix, and every URL of the page is relative to it.

            Examples:
              naviscan serve --library ~/Music
              naviscan serve -o /srv/naviscan --host 0.0.0.0 --port 8080
              NAVISCAN_SERVE_TOKEN=$(cat /etc/naviscan/token) naviscan serve --library /music --host 0.0.0.0
              naviscan serve --library ~/Music --base-path /naviscan --log-level warning
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

    @Option(help: ArgumentHelp("Access token (\(Settings.token.defaultText)); prefer NAVISCAN_SERVE_TOKEN or the config file, which `ps` does not show.",
                               valueName: "token"))
    var token: String?

    @Flag(name: .customLong("protect-companion"), help: "Require the token for the companion's reads too (profiles, frames, waveforms, /ws/push).")
    var protectCompanion = false

    @Option(help: ArgumentHelp("Path prefix of a reverse proxy's sub-path, as /naviscan (\(Settings.basePath.defaultText)).", valueName: "path"))
    var basePath: String?

    @Option(help: ArgumentHelp("Navidrome's music folder as the absolute paths it reports with Report Real Path start, e.g. /music (\(Settings.navidromeMusicFolder.defaultText)).",
                               valueName: "path"))
    var navidromeMusicFolder: String?

    @Option(name: .customLong("navidrome-db"),
            help: ArgumentHelp("Navidrome's database, read only, so that its song IDs (id=ID) find their tracks (\(Settings.navidromeDatabase.defaultText)).",
                               valueName: "navidrome.db"))
    var navidromeDatabase: String?

    @Option(help: ArgumentHelp("trace, debug, info (a line per request), notice, warning, error or critical (\(Settings.logLevel.defaultText)).",
                               valueName: "level"))
    var logLevel: String?

    @OptionGroup var store: StoreOptions

    func validate() throws {
        if let token, let problem = AccessToken.problem(token) { throw ValidationError("--token: \(problem)") }
        if let basePath, BasePath.normalized(basePath) == nil {
            throw ValidationError("--base-path must be a path of plain names such as /naviscan or /music/naviscan, not '\(basePath)'")
        }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical, not '\(logLevel)'")
        }
        if let port, let problem = Settings.port.outOfRange(Double(port)) { throw ValidationError("--port \(problem)") }
        if let jobs, let problem = Settings.serveJobs.outOfRange(Double(jobs)) { throw ValidationError("--jobs \(problem)") }
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
        if let token { values[Settings.token.key] = .string(token) }
        if protectCompanion { values[Settings.protectCompanion.key] = .bool(true) }
        if let basePath { values[Settings.basePath.key] = .string(basePath) }
        if let logLevel { values[Settings.logLevel.key] = .string(logLevel) }
        if let navidromeMusicFolder { values[Settings.navidromeMusicFolder.key] = .string(navidromeMusicFolder) }
        if let navidromeDatabase { values[Settings.navidromeDatabase.key] = .string(navidromeDatabase) }
        return values
    }

    func run() async throws {
        // Precompute analyses with the parameters the store's scans recorded.
        let loaded = try await StoreSettings.load(flags: flags, configFile: store.config.path, libraryArgument: nil, command: "serve --library")
        let (location, settings) = (loaded.location, loaded.settings)
        // A mistyped library must not be created (its store would be) and served empty.
        if let library = location.library {
            do { try LibraryScanner.checkLibraryFolder(library) } catch { throw CLIError(UserMessage.describe(error)) }
        }
        let host = settings.text(Settings.host)
        let port = try settings.integer(Settings.port)
        let jobs = try settings.integer(Settings.serveJobs)

        let levelName = settings.text(Settings.logLevel)
        guard let level = Logger.Level(rawValue: levelName) else {
            throw CLIError("\(settings.origin(Settings.logLevel)) must be trace, debug, info, notice, warning, error or critical, not '\(levelName)'")
        }
        let basePathText = settings.string(Settings.basePath) ?? ""
        guard let basePath = BasePath.normalized(basePathText) else {
            throw CLIError("\(settings.origin(Settings.basePath)) must be a path of plain names such as /naviscan, not '\(basePathText)'")
        }
        let access = try Self.accessPolicy(settings, host: host, out: location.out, port: port, basePath: basePath)

        // Request lines are logged at info: the server logs at info unless told otherwise.
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "naviscan.serve")
        var configuration = ServerConfiguration(dataDirectory: location.out, library: location.library, host: host, port: port)
        configuration.precomputeJobs = jobs
        configuration.stream = settings.isOn(Settings.stream)
        configuration.corsOrigin = settings.string(Settings.corsOrigin)
        configuration.basePath = basePath
        if let folder = settings.string(Settings.navidromeMusicFolder) {
            guard folder.hasPrefix("/") else {
                throw CLIError("\(settings.origin(Settings.navidromeMusicFolder)) must be an absolute path such as /music, not '\(folder)'")
            }
            configuration.navidromeMusicFolder = folder
        }
        configuration.navidromeDatabase = settings.string(Settings.navidromeDatabase).map(StoreLocation.standardized)
        configuration.access = access
        configuration.settingNames.token = Settings.token.howToSet
        configuration.settingNames.navidromeDatabase = Settings.navidromeDatabase.howToSet
        configuration.settingNames.navidromeMusicFolder = Settings.navidromeMusicFolder.howToSet
        if settings.isOn(Settings.watch) {
            let text = settings.text(Settings.rescanInterval)
            guard let interval = Self.interval(text) else {
                throw CLIError("\(settings.origin(Settings.rescanInterval)) must be a number with s, m, h or d (30m, 6h, 1d), or 0 for none; got '\(text)'")
            }
            var maintenance = Maintenance()
            maintenance.jobs = jobs
            maintenance.followExternalLinks = settings.isOn(Settings.followExternalLinks)
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
            try await NaviscanAPI.run(app, logger: logger)
        } catch {
            throw CLIError(Self.describe(error, host: host, port: port))
        }
    }

    /// The token rule for this address: a configured token always applies; off loopback without
    /// one, the data folder's token file is used, made (and printed, that once) at the first start.
    static func accessPolicy(_ settings: EffectiveConfiguration, host: String, out: String, port: Int, basePath: String) throws -> AccessPolicy {
        var policy = AccessPolicy(protectCompanion: settings.isOn(Settings.protectCompanion))
        if let token = settings.string(Settings.token) {
            if let problem = AccessToken.problem(token) { throw CLIError("\(settings.origin(Settings.token)): \(problem)") }
            policy.token = token
        } else if !isLoopback(host) {
            let file = OutputLayout(root: out).tokenPath
            if !FileManager.default.fileExists(atPath: out) {
                do { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) } catch {
                    throw CLIError("cannot create the data folder \(out) for the access token; make its parent writable or pass --out DIR")
                }
            }
            let token: String, created: Bool, tightenedFrom: mode_t?
            do { (token, created, tightenedFrom) = try AccessToken.loadOrCreate(file: file) } catch {
                throw CLIError(UserMessage.describe(error))
            }
            policy.token = token
            if let tightenedFrom {
                FileHandle.standardError.write(Data("naviscan: the access token file \(file) was open to other users (mode \(String(tightenedFrom, radix: 8))); made it readable by its owner only (mode 600)\n".utf8))
            }
            if created {
                let shown = host == "0.0.0.0" || host == "::" ? "THIS-MACHINE" : host
                FileHandle.standardError.write(Data("""
                    naviscan: \(host) is reachable from the network, so the audio, the web page and writes need an access token.
                    naviscan: made one and kept it in \(file) (readable by its owner only); it is shown this once:
                      \(token)
                    naviscan: open http://\(shown):\(port)\(basePath)/?token=<token> once in a browser; players send `Authorization: Bearer <token>`.

                    """.utf8))
            }
        }
        if policy.protectCompanion && policy.token == nil {
            throw CLIError("\(settings.origin(Settings.protectCompanion)) needs a token: give one with --token or NAVISCAN_SERVE_TOKEN")
        }
        return policy
    }

    /// Addresses only this machine reaches.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
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
