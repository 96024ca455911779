import Foundation
import NaviscanCore
import NaviscanStore

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
    /// The fault as a typed error, for a caller to word (not encoded).
    public var faultError: LibraryError?
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

    package init() {}
    /// True when the scan was stopped (Ctrl-C / SIGTERM) before all work was done.
    public var interrupted = false
    /// Albums whose loudness was measured again (from stored data) because a member changed.
    public var albumsMeasured = 0
    /// The analysed tracks by kind of work: whole, or some stages only.
    public var work = WorkBreakdown([], requested: [])

    public var realtimeFactor: Double { wallSeconds > 0 ? audioSeconds / wallSeconds : 0 }

    enum CodingKeys: String, CodingKey {
        case total, shard, otherShards = "other_shards", analysed, unchanged, failed, pruned, relinked, keptMissing = "kept_missing"
        case pruneHeldBack = "prune_held_back", unverified, fault, pending, storeSetAside = "store_set_aside", unsupported, symlinkLoops = "symlink_loops", externalLinks = "external_links", failures
        case unsupportedFiles = "unsupported_files", audioSeconds = "audio_seconds", wallSeconds = "wall_seconds"
        case interrupted, realtimeFactor = "x_realtime", albumsMeasured = "albums_measured", work
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
        try c.encode(work, forKey: .work)
        try c.encode((realtimeFactor * 10).rounded() / 10, forKey: .realtimeFactor)
    }
}

extension ScanSummary {
    /// The summary of a plan, before any file is analysed.
    init(plan: ScanPlan, listing: LibraryListing, shard: Shard?) {
        total = plan.files
        self.shard = shard?.description
        otherShards = plan.otherShardFiles
        unsupportedFiles = shard.map { shard in listing.unsupported.filter { shard.contains(relativePath: $0) } } ?? listing.unsupported
        symlinkLoops = listing.symlinkLoops.count
        externalLinks = listing.externalLinks
        unchanged = plan.unchanged
        unverified = plan.unverified
        pruneHeldBack = plan.pruneHeldBack
        keptMissing = plan.keptMissing.count
        failures = listing.unreadable.map { ScanFailure(relativePath: $0.path, reason: "cannot read: \($0.reason)") } + plan.knownFailures
    }

    /// Adds the outcomes of the `planned` files the pool finished; `fault` stopped it, or it was `stopped`.
    mutating func add(_ outcomes: [TrackOutcome], of planned: Int, fault: Error?, stopped: Bool) {
        for outcome in outcomes {
            switch outcome {
            case .analysed(_, let seconds):
                analysed += 1
                audioSeconds += seconds
            case .failed(let record, let reason), .unreadable(let record, let reason):
                failures.append(ScanFailure(relativePath: record.relativePath, reason: reason))
            }
        }
        if let fault {
            self.fault = "\(fault)"
            faultError = fault as? LibraryError
            pending = planned - outcomes.count
        }
        interrupted = fault == nil && stopped && outcomes.count < planned
        if interrupted { pending = planned - outcomes.count }
    }
}

extension ScanRecord {
    /// The record of a scan that ended with `summary`, run by `by`.
    public init(summary: ScanSummary, by: ScanLock.Owner, finishedAt: Date = Date()) {
        self.init(finishedAt: TrackProfile.timestamp(finishedAt), analysed: summary.analysed, failed: summary.failed,
                  pending: summary.pending, interrupted: summary.interrupted, by: by.rawValue)
    }
}
