import NaviscanCore

/// How `naviscan serve` runs.
public struct ServerConfiguration: Sendable {
    /// The scan's output directory (naviscan.db, profiles/, vis/).
    public var dataDirectory: String
    /// The library root; when nil, the one the last scan recorded in the store.
    public var library: String?
    /// Loopback unless told otherwise.
    public var host: String = "127.0.0.1"
    public var port: Int = 8000
    /// Worker threads for POST /visualizer/precompute.
    public var precomputeJobs: Int = 1
    /// Tracks waiting for a precompute worker at most; more are answered 503.
    public var precomputeQueueCapacity: Int = 256
    /// The parameters precompute analyses with: those the store's scans use, so a later scan finds
    /// the track up to date.
    public var visualizer = VisualizerConfig()
    public var profile = ProfileConfig()
    /// How often the store is polled for changes to push over /ws/push.
    public var pollInterval: Duration = .milliseconds(500)
    /// Timeouts and the connection cap (see docs/hardening.md).
    public var limits = ConnectionLimits()

    public init(dataDirectory: String, library: String? = nil, host: String = "127.0.0.1", port: Int = 8000) {
        self.dataDirectory = dataDirectory
        self.library = library
        self.host = host
        self.port = port
    }
}
