import Foundation
import NaviscanStore

/// A file to analyse, with the row it had (nil when new) and what to run.
public struct WorkItem: Sendable {
    public var file: LibraryFile
    public var previous: TrackRecord?
    public var work: TrackWork = .full

    public init(file: LibraryFile, previous: TrackRecord?, work: TrackWork = .full) {
        self.file = file
        self.previous = previous
        self.work = work
    }
}

/// A stored track that moved: the file at `to` has the same audio as the vanished row `from`.
public struct Relink: Sendable {
    public var from: TrackRecord
    public var to: LibraryFile
}

/// What a scan will do, decided before any audio is read.
public struct ScanPlan: Sendable {
    public var work: [WorkItem] = []
    public var unchanged = 0
    /// Unchanged files that failed before: listed again, not retried.
    public var knownFailures: [ScanFailure] = []
    public var relinks: [Relink] = []
    /// Rows of files gone from the library, to delete with their outputs.
    public var prune: [TrackRecord] = []
    /// Rows of files gone from the library, kept because the prune guard held (marked missing).
    public var keptMissing: [TrackRecord] = []
    /// Rows marked missing earlier whose files are back.
    public var reappeared: [String] = []
    /// Stored tracks under folders that could not be read this time: left as they are.
    public var unverified = 0
    /// Why tracks that vanished were kept instead of pruned; nil when nothing was held back.
    public var pruneHeldBack: String?
    /// The walk saw the library the store describes: its identity can be recorded.
    public var libraryTrusted = false
    /// The library's files this plan covers: all of them, or those of the scan's shard.
    public var files = 0
    /// Audio files of formats naviscan does not decode, found by the walk.
    public var unsupported = 0
    /// The library's files that belong to other shards (skipped).
    public var otherShardFiles = 0
    /// Stored tracks that belong to other shards: left as they are.
    public var otherShardTracks = 0
}

