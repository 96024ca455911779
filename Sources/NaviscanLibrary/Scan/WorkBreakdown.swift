import NaviscanCore

/// What a scan does or did to its tracks, by kind of work: analysed whole (new, changed, failed
/// before, or of unknown versions), or for some stages only ("12,408 tracks: tempo and beat grid").
/// `naviscan status` shows it for the next scan, the scan's summary for the one that ran.
public struct WorkBreakdown: Encodable, Sendable, Equatable {
    public struct Partial: Encodable, Sendable, Equatable {
        /// The stages that run (`AnalysisStage` names, in pipeline order).
        public var stages: [String]
        public var tracks: Int

        public init(stages: [String], tracks: Int) {
            self.stages = stages
            self.tracks = tracks
        }
    }

    public var whole = 0
    /// Largest first.
    public var partial: [Partial] = []

    /// `requested`: the stages the scan writes (a `.stages` work that covers them all is whole).
    public init(_ work: [TrackWork], requested: Set<AnalysisStage>) {
        var counts: [Set<AnalysisStage>: Int] = [:]
        for item in work {
            let stages = item.stages(requested: requested)
            if stages.isSuperset(of: requested) { whole += 1 } else { counts[stages, default: 0] += 1 }
        }
        partial = counts.map { Partial(stages: $0.key.sorted().map(\.rawValue), tracks: $0.value) }
            .sorted { ($0.tracks, $1.stages.joined()) > ($1.tracks, $0.stages.joined()) }
    }

    /// One line per kind of work: "3 tracks: everything", "12,408 tracks: tempo and beat grid".
    public var lines: [String] {
        (whole > 0 ? ["\(whole) tracks: the whole analysis (new, changed, or analysed by an older release)"] : [])
            + partial.map { "\($0.tracks) tracks: \(AnalysisStage.words(Set($0.stages.compactMap(AnalysisStage.init(rawValue:))))) only" }
    }
}
