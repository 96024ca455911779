import Foundation
import NaviscanStore

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
