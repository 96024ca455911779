import NaviscanCore

/// What a scan does. With neither output requested the CLI asks for both.
public struct ScanOptions: Sendable {
    public var library: String
    /// Output directory; the CLI defaults it to LIBRARY/.naviscan.
    public var output: String
    public var visualizer: VisualizerConfig?
    public var profile: ProfileConfig?
    /// Worker threads; one per core by default.
    public var jobs: Int
    /// Re-analyse every track, whatever the store says.
    public var force = false
    /// Retry tracks that failed before even when the file did not change.
    public var retryFailed = false
    /// Delete the tracks gone from the library even when the prune guard would keep them.
    public var prune = false
    /// The share of stored tracks that may vanish in one scan before the guard keeps them instead.
    public var pruneThreshold = 0.2
    /// Set a damaged store aside and start a new one.
    public var rebuildStore = false
    /// Analyse only this shard's tracks (nil: the whole library). Stored tracks of other shards are
    /// left as they are: never pruned, relinked or analysed.
    public var shard: Shard?
    /// Who holds OUT/naviscan.lock for the run (named to a second scan that is refused).
    public var lockOwner: ScanLock.Owner = .scan
    /// Each disc of a multi-disc album is its own album for album gain.
    public var albumPerDisc = false
    /// Follow folder symlinks whose target lies outside the library (off: such links are listed
    /// and what was stored under them is kept).
    public var followExternalLinks = false

    public init(library: String, output: String, visualizer: VisualizerConfig?, profile: ProfileConfig?, jobs: Int, force: Bool = false) {
        self.library = library
        self.output = output
        self.visualizer = visualizer
        self.profile = profile
        self.jobs = max(1, jobs)
        self.force = force
    }
}

/// A track that could not be analysed, and why.
public struct ScanFailure: Codable, Sendable, Equatable {
    public var relativePath: String
    public var reason: String
    /// The failure was recorded by an earlier run and the file has not changed since.
    public var known: Bool

    public init(relativePath: String, reason: String, known: Bool = false) {
        self.relativePath = relativePath
        self.reason = reason
        self.known = known
    }

    enum CodingKeys: String, CodingKey { case relativePath = "relative_path", reason, known }
}

/// The end-of-scan report (also printed as JSON with --json).
public struct ScanSummary: Encodable, Sendable {
    /// Supported files found in the library (in this shard, on a shard scan).
    public var total = 0
    /// The shard scanned ("2/4"); nil for the whole library.
    public var shard: String?
    /// Supported files of the library left to other shards.
    public var otherShards = 0
    public var analysed = 0
    public var unchanged = 0
    /// Files that failed this time, plus unchanged files that failed before (they are not retried).
    public var failed: Int { failures.count }
    public var pruned = 0
    /// Moved or renamed files whose analysis was carried over to the new path, with no decode.
    public var relinked = 0
    /// Tracks gone from the library but kept (marked missing) because the prune guard held.
    public var keptMissing = 0
    /// Why the prune guard held; nil when it did not.
    public var pruneHeldBack: String?
    /// Stored tracks under folders that could not be read this time (kept as they are).
    public var unverified = 0
    /// The output or store fault that stopped the scan (nothing was recorded for the tracks in flight).
    public var fault: String?
    /// Tracks left to analyse when the scan stopped early (interrupted or a fault); the next run does them.
    public var pending = 0
    /// Where a damaged store was moved by --rebuild-store.
    public var storeSetAside: String?
    public var unsupported: Int { unsupportedFiles.count }
    public var symlinkLoops = 0
    /// Folder symlinks not followed because they lead outside the library.
    public var externalLinks: [String] = []
    public var failures: [ScanFailure] = []
    public var unsupportedFiles: [String] = []
    /// Seconds of audio analysed in this run.
    public var audioSeconds = 0.0
    public var wallSeconds = 0.0
    /// True when the scan was stopped (Ctrl-C / SIGTERM) before all work was done.
    public var interrupted = false
    /// Albums whose loudness was measured again (from stored data) because a member changed.
    public var albumsMeasured = 0

    public var realtimeFactor: Double { wallSeconds > 0 ? audioSeconds / wallSeconds : 0 }

    enum CodingKeys: String, CodingKey {
        case total, shard, otherShards = "other_shards", analysed, unchanged, failed, pruned, relinked, keptMissing = "kept_missing"
        case pruneHeldBack = "prune_held_back", unverified, fault, pending, storeSetAside = "store_set_aside", unsupported, symlinkLoops = "symlink_loops", externalLinks = "external_links", failures
        case unsupportedFiles = "unsupported_files", audioSeconds = "audio_seconds", wallSeconds = "wall_seconds"
        case interrupted, realtimeFactor = "x_realtime", albumsMeasured = "albums_measured"
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(total, forKey: .total)
        try c.encodeIfPresent(shard, forKey: .shard)
        if shard != nil { try c.encode(otherShards, forKey: .otherShards) }
        try c.encode(analysed, forKey: .analysed)
        try c.encode(unchanged, forKey: .unchanged)
        try c.encode(failed, forKey: .failed)
        try c.encode(pruned, forKey: .pruned)
        try c.encode(relinked, forKey: .relinked)
        try c.encode(keptMissing, forKey: .keptMissing)
        try c.encode(pruneHeldBack, forKey: .pruneHeldBack)
        try c.encode(unverified, forKey: .unverified)
        try c.encode(fault, forKey: .fault)
        try c.encode(pending, forKey: .pending)
        try c.encode(storeSetAside, forKey: .storeSetAside)
        try c.encode(unsupported, forKey: .unsupported)
        try c.encode(symlinkLoops, forKey: .symlinkLoops)
        try c.encode(externalLinks, forKey: .externalLinks)
        try c.encode(failures, forKey: .failures)
        try c.encode(unsupportedFiles, forKey: .unsupportedFiles)
        try c.encode((audioSeconds * 1000).rounded() / 1000, forKey: .audioSeconds)
        try c.encode((wallSeconds * 1000).rounded() / 1000, forKey: .wallSeconds)
        try c.encode(interrupted, forKey: .interrupted)
        try c.encode(albumsMeasured, forKey: .albumsMeasured)
        try c.encode((realtimeFactor * 10).rounded() / 10, forKey: .realtimeFactor)
    }
}

/// A live view of a running scan, for progress display.
public struct ScanProgress: Sendable {
    public var queued = 0
    public var finished = 0
    public var failed = 0
    public var bytesQueued: Int64 = 0
    public var bytesFinished: Int64 = 0
    public var audioSeconds = 0.0
    public var elapsed = 0.0
    /// The files to analyse, in the order they are handed out (for a progress display to probe).
    public var plannedFiles: [LibraryFile] = []
    /// Seconds of audio decoded so far, including the files still in flight.
    public var audioSecondsDecoded = 0.0

    /// Seconds still to go, extrapolated from the bytes done so far.
    public var estimatedRemaining: Double? {
        guard bytesFinished > 0, elapsed > 0 else { return nil }
        return elapsed * Double(bytesQueued - bytesFinished) / Double(bytesFinished)
    }
}
