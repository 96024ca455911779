import Foundation
import NaviscanStore

/// What one track's analysis produced: the row to record once its files are durable.
public enum TrackOutcome: Sendable {
    /// Analysed; `seconds` of audio.
    case analysed(TrackRecord, seconds: Double)
    /// The file's own problem (or an access error), recorded against the track.
    case failed(TrackRecord, reason: String)
    /// A track analysed before that could not be read this time (a permission, an I/O error): its
    /// stored row and outputs stay as they are (`record` is that row), nothing is committed, and the
    /// next scan tries again, since the file still differs from the row.
    case unreadable(TrackRecord, reason: String)

    public var record: TrackRecord {
        switch self {
        case .analysed(let record, _), .failed(let record, _), .unreadable(let record, _): return record
        }
    }

    /// The row to commit; nil when the stored one stays.
    public var recordToCommit: TrackRecord? {
        if case .unreadable = self { return nil }
        return record
    }
}
