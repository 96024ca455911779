import Foundation

/// Every default that more than one layer needs, in one place: the command line's settings table,
/// the scan's options and the server's configuration read them from here.
public enum Defaults {
    /// Worker threads of a scan: one per core.
    public static var jobs: Int { ProcessInfo.processInfo.activeProcessorCount }
    /// The share of stored tracks that may vanish in one scan before the prune guard keeps them.
    public static let pruneThreshold = 0.2
    /// Where `naviscan serve` listens.
    public static let host = "127.0.0.1"
    public static let port = 8000
    /// The full re-scan `serve` runs while it keeps a library analysed, as the setting writes it.
    public static let rescanInterval = "1d"
    public static let rescanIntervalSeconds = 86_400
    /// How long the library must be quiet before `serve` scans the changes.
    public static let settleSeconds = 3
}
