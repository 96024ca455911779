import NaviscanCore
import NaviscanStore

/// What a scan does: the outputs it writes (nil: not written) and how it walks and prunes.
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
    public var pruneThreshold = Defaults.pruneThreshold
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
    /// The analysis parameters to record with the scan (the settings that made `visualizer` and
    /// `profile`), so that a later plain scan analyses the same way; nil records none.
    public var parameters: AnalysisParameters?
    /// The stage versions of this build; a test changes one to see what an upgrade does.
    public var stageVersions = StageVersions.current
    /// The album pass's version (`AlbumGain.version`), likewise.
    public var albumPassVersion = AlbumGain.version

    public init(library: String, output: String, visualizer: VisualizerConfig?, profile: ProfileConfig?, jobs: Int, force: Bool = false) {
        self.library = library
        self.output = output
        self.visualizer = visualizer
        self.profile = profile
        self.jobs = max(1, jobs)
        self.force = force
    }
}

extension ScanOptions {
    /// The freshness rule these options ask for.
    public var freshness: TrackFreshness {
        TrackFreshness(visualizer: visualizer, profile: profile, layout: OutputLayout(root: output), force: force, retryFailed: retryFailed,
                      versions: stageVersions)
    }
}
