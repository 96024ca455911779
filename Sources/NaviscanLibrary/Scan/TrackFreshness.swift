import NaviscanCore
import NaviscanStore

/// What a scan does with one file.
public enum TrackWork: Sendable, Equatable {
    /// Decode it and run every requested stage: new, changed, failed before, or of unknown versions.
    case full
    /// Decode it once and run these stages only: the row's other results and files stay as they are.
    case stages(Set<AnalysisStage>)

    /// The stages it runs, given those the scan asks for.
    public func stages(requested: Set<AnalysisStage>) -> Set<AnalysisStage> {
        switch self {
        case .full: requested
        case .stages(let stages): stages
        }
    }
}

/// The one answer to "must this track be analysed again, and which of its stages?", shared by the
/// scan's planner, `naviscan status` (what a plain re-scan would do) and the server's precompute.
///
/// All of it when its size or mtime changed or its row predates stage versions (before 0.5.9).
/// Otherwise only the requested stages whose version changed (with the stages that read their
/// results), whose parameters changed, or whose output file is missing or is not the one the row
/// describes (a profile whose row has no stamp yet is written by the album pass). The product
/// version is never a reason. A failed track is retried when its failure was an access error,
/// with `retryFailed`, or when a stage changed; otherwise only when the file changes.
public struct TrackFreshness: Sendable {
    /// Re-analyse every track, whatever the store says.
    public var force: Bool
    /// Retry tracks that failed before even when the file did not change.
    public var retryFailed: Bool
    /// The stamp of a track's output file (by kind and key), nil when it is absent.
    public var outputStamp: @Sendable (OutputLayout.TrackOutput, String) -> String?
    /// The stage versions of this build (a test changes one to see what an upgrade does).
    public var versions: StageVersions
    /// The requested outputs' parameter fingerprints (nil: that output is not requested).
    private let visFingerprint: String?
    private let profileFingerprint: String?

    public init(visualizer: VisualizerConfig?, profile: ProfileConfig?, layout: OutputLayout, force: Bool = false,
                retryFailed: Bool = false, versions: StageVersions = .current) {
        self.force = force
        self.retryFailed = retryFailed
        self.versions = versions
        let reader = OutputStampReader(layout: layout)
        outputStamp = { reader.stamp($0, key: $1) }
        visFingerprint = visualizer.map(AnalysisFingerprint.visualizer)
        profileFingerprint = profile.map(AnalysisFingerprint.profile)
    }

    /// The stages this scan asks for.
    public var requested: Set<AnalysisStage> {
        AnalysisStage.of(visualizer: visFingerprint != nil, profile: profileFingerprint != nil)
    }

    public func needsAnalysis(_ file: LibraryFile, _ record: TrackRecord) -> Bool {
        work(file, record) != nil
    }

    /// What to do with a stored track; nil when it is current.
    public func work(_ file: LibraryFile, _ record: TrackRecord) -> TrackWork? {
        if force || record.size != file.size || record.mtime != file.mtime { return .full }
        guard let analysedWith = record.analysedWith else { return .full }
        let changed = versions.stale(analysedWith, among: Set(AnalysisStage.allCases))
        if record.status == .failed {
            // A stage changed: what failed may now succeed. (A failed row has no features version.)
            let retry = retryFailed || record.failureKind == .access || !changed.subtracting([.features]).isEmpty
            return retry ? .full : nil
        }
        var stages = changed.intersection(requested)
        if let visFingerprint {
            if record.visFingerprint != visFingerprint || !outputMatches(OutputLayout.visualizerFrames, key: record.key, stamp: record.visStamp) {
                stages.insert(.visualizer)
            }
        }
        if let profileFingerprint {
            // No stamp: the album pass has still to write the file from the stored profile.
            if record.profileFingerprint != profileFingerprint
                || record.profileStamp != nil && !outputMatches(OutputLayout.profile, key: record.key, stamp: record.profileStamp) {
                stages.formUnion(AnalysisStage.profile)
            }
        }
        if stages.isEmpty { return nil }
        return stages.isSuperset(of: requested) ? .full : .stages(stages)
    }

    /// The row's results are current for every stage it holds: an unchanged file's row that can be
    /// carried to a new path (a move) as it is.
    func current(_ record: TrackRecord) -> Bool {
        guard let analysedWith = record.analysedWith else { return false }
        return versions.stale(analysedWith, among: Self.held(record)).isEmpty
    }

    /// The stages whose results the row holds.
    static func held(_ record: TrackRecord) -> Set<AnalysisStage> {
        AnalysisStage.of(visualizer: record.visFingerprint != nil, profile: record.profileFingerprint != nil)
    }

    /// The file exists and, when the row recorded its stamp, is still that file.
    private func outputMatches(_ output: OutputLayout.TrackOutput, key: String, stamp: String?) -> Bool {
        guard let current = outputStamp(output, key) else { return false }
        return stamp == nil || stamp == current
    }
}
