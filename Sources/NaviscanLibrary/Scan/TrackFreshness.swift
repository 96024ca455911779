import NaviscanCore
import NaviscanStore

/// The one answer to "must this track be analysed again?", shared by the scan's planner, `naviscan
/// status` (what a plain re-scan would do) and the server's precompute.
///
/// A track is analysed again when its size or mtime changed, the analyser version changed, a
/// requested output's parameters changed, or a requested output file is missing or is not the one
/// the row describes (a profile whose row has no stamp yet is written by the album pass). A failed
/// track is retried when its failure was an access error or with `retryFailed`; otherwise only when
/// the file or the analyser changes.
public struct TrackFreshness: Sendable {
    /// Re-analyse every track, whatever the store says.
    public var force: Bool
    /// Retry tracks that failed before even when the file did not change.
    public var retryFailed: Bool
    /// The stamp of a track's output file (by kind and key), nil when it is absent.
    public var outputStamp: @Sendable (OutputLayout.TrackOutput, String) -> String?
    /// The requested outputs' parameter fingerprints (nil: that output is not requested).
    private let visFingerprint: String?
    private let profileFingerprint: String?

    public init(visualizer: VisualizerConfig?, profile: ProfileConfig?, layout: OutputLayout, force: Bool = false, retryFailed: Bool = false) {
        self.force = force
        self.retryFailed = retryFailed
        let reader = OutputStampReader(layout: layout)
        outputStamp = { reader.stamp($0, key: $1) }
        visFingerprint = visualizer.map(AnalysisFingerprint.visualizer)
        profileFingerprint = profile.map(AnalysisFingerprint.profile)
    }

    public func needsAnalysis(_ file: LibraryFile, _ record: TrackRecord) -> Bool {
        if force { return true }
        if record.size != file.size || record.mtime != file.mtime { return true }
        if Self.madeByAnotherVersion(record) { return true }
        if record.status == .failed { return retryFailed || record.failureKind == .access }
        if let visFingerprint {
            if record.visFingerprint != visFingerprint { return true }
            if !outputMatches(OutputLayout.visualizerFrames, key: record.key, stamp: record.visStamp) { return true }
        }
        if let profileFingerprint {
            if record.profileFingerprint != profileFingerprint { return true }
            // No stamp: the album pass has still to write the file from the stored profile.
            if record.profileStamp != nil, !outputMatches(OutputLayout.profile, key: record.key, stamp: record.profileStamp) { return true }
            // Sound features of another version (the processor measures them alone, see `featuresOnly`).
            if Self.featuresStale(record) { return true }
        }
        return false
    }

    /// An analysed track whose sound features are missing or of another version, while its profile
    /// is current: only the features are measured again.
    static func featuresStale(_ record: TrackRecord) -> Bool {
        record.status == .ok && record.profileFingerprint != nil && record.featuresVersion != SonicFeatures.version
    }

    /// The row was written by another naviscan version (or marked for re-analysis by a reader).
    public static func madeByAnotherVersion(_ record: TrackRecord) -> Bool {
        record.analyzerVersion != NaviscanVersion.version
    }

    /// The stored file and its row describe the same analysis: unchanged file, same analyser.
    static func sameFileAndAnalyser(_ file: LibraryFile, _ record: TrackRecord) -> Bool {
        record.size == file.size && record.mtime == file.mtime && !madeByAnotherVersion(record)
    }

    /// The file exists and, when the row recorded its stamp, is still that file.
    private func outputMatches(_ output: OutputLayout.TrackOutput, key: String, stamp: String?) -> Bool {
        guard let current = outputStamp(output, key) else { return false }
        return stamp == nil || stamp == current
    }
}
