import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// How `naviscan serve` runs.
public struct ServerConfiguration: Sendable {
    /// The scan's output directory (naviscan.db, profiles/, vis/).
    public var dataDirectory: String
    /// The library root; when nil, the one the last scan recorded in the store.
    public var library: String?
    /// Loopback unless told otherwise.
    public var host: String = Defaults.host
    public var port: Int = Defaults.port
    /// Worker threads for POST /visualizer/precompute.
    public var precomputeJobs: Int = 1
    /// Expensive requests (/similar, /path, bulk profiles) running at once at most; more are answered
    /// 503 with Retry-After. Two per core: their work runs on as many threads as cores, and more than
    /// that only waits.
    public var expensiveRequests = 2 * Defaults.jobs
    /// Tracks waiting for a precompute worker at most; more are answered 503.
    public var precomputeQueueCapacity: Int = 256
    /// The parameters precompute analyses with: those the store's scans use, so a later scan finds
    /// the track up to date.
    public var visualizer = VisualizerConfig()
    public var profile = ProfileConfig()
    /// The settings that made `visualizer` and `profile`, recorded with each background scan.
    public var parameters: AnalysisParameters?
    /// How often the store is polled for changes to push over /ws/push.
    public var pollInterval: Duration = .milliseconds(500)
    /// Keeping the library analysed: watch, settle time, periodic re-scans (off unless set; `naviscan
    /// serve` sets it unless --no-watch).
    public var maintenance: Maintenance?
    /// Serve the audio files themselves (GET /stream).
    public var stream = true
    /// The origin allowed by CORS answers (`*` for any); nil sends no CORS headers.
    public var corsOrigin: String?
    /// Timeouts and the connection cap (see docs/hardening.md).
    public var limits = ConnectionLimits()
    /// The path prefix a reverse proxy serves naviscan under ("" or "/naviscan"): requests may come
    /// with or without it, and every URL the page uses is relative to it.
    public var basePath = ""
    /// Who may use what (the token; see `AccessPolicy`).
    public var access = AccessPolicy()
    /// Navidrome's music folder as its real paths start (`/music`), so that those paths find tracks.
    public var navidromeMusicFolder: String?
    /// Navidrome's database (navidrome.db), read for the song IDs its clients send.
    public var navidromeDatabase: String?
    /// How a user sets the options the server's answers point to.
    public var settingNames = SettingNames()

    public init(dataDirectory: String, library: String? = nil, host: String = Defaults.host, port: Int = Defaults.port) {
        self.dataDirectory = dataDirectory
        self.library = library
        self.host = host
        self.port = port
    }
}

/// How a user sets each option an answer of the server may point to. The server's own words name the
/// config file's keys; `naviscan serve` gives its flags and variables, so no server message names a flag.
public struct SettingNames: Sendable {
    public var token = "the serve.token setting"
    public var navidromeDatabase = "the serve.navidrome-db setting"
    public var navidromeMusicFolder = "the serve.navidrome-music-folder setting"

    public init() {}
}

/// The access token's rule: with a token, `/stream`, the web page and every write endpoint need it;
/// the companion's read endpoints (profiles, frames, waveforms, the push socket) need it only with
/// `protectCompanion`. `/health` never does (health checks carry no secrets).
public struct AccessPolicy: Sendable {
    public var token: String?
    public var protectCompanion = false

    public init(token: String? = nil, protectCompanion: Bool = false) {
        self.token = token
        self.protectCompanion = protectCompanion
    }
}

/// How the server keeps the library analysed while it runs.
public struct Maintenance: Sendable {
    /// Watch the library with inotify (false: periodic re-scans only).
    public var watch = true
    /// Quiet time after the last change before a scan starts.
    public var settle: Duration = .seconds(Defaults.settleSeconds)
    /// Full re-scans even without a change; nil for none.
    public var rescanInterval: Duration? = .seconds(Defaults.rescanIntervalSeconds)
    /// The share of stored tracks that may vanish in one scan before the prune guard keeps them.
    public var pruneThreshold = Defaults.pruneThreshold
    /// Worker threads for background scans.
    public var jobs = 1
    /// Follow folder symlinks that lead outside the library.
    public var followExternalLinks = false

    public init() {}
}
