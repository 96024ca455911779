import Foundation
import Logging
import NaviscanCore

/// `naviscan scan`: one way through —
///
///     planner (walk + store → plan: analyse, unchanged, relink, prune or keep)
///       → work pool (one decode per file, outputs under temporary names)
///       → store writer (files flushed, rows committed in batches, each stamped with the change sequence)
///
/// A fault of the output or the store stops the run: nothing is recorded for the tracks in flight,
/// what was committed stays, and the summary carries the fault.
public final class LibraryScanner: @unchecked Sendable {
    public let options: ScanOptions
    public let layout: OutputLayout
    private let logger: Logger
    private let lock = NSLock()
    private var stopRequested = false
    private var live = ScanProgress()
    private var startedAt = ContinuousClock.now

    public init(options: ScanOptions, logger: Logger) {
        self.options = options
        layout = OutputLayout(root: options.output)
        self.logger = logger
    }

    /// Stop handing out work; files in flight are dropped (nothing partial is written). Safe from any thread.
    public func requestStop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
    }

    public var isStopping: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    public func progress() -> ScanProgress {
        lock.lock()
        defer { lock.unlock() }
        var p = live
        p.elapsed = seconds(since: startedAt)
        return p
    }

    public func run() throws -> ScanSummary {
        startedAt = .now
        // Check the library before anything is created: its default output directory lies inside it.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: options.library, isDirectory: &isDirectory) else {
            throw LibraryError.libraryUnreadable(path: options.library, reason: "no such directory")
        }
        guard isDirectory.boolValue else { throw LibraryError.libraryUnreadable(path: options.library, reason: "not a directory") }
        try OutputLayout.createWritableDirectory(options.output)
        let scanLock = try ScanLock(path: layout.lockPath, outputDirectory: options.output, owner: options.lockOwner)
        defer { withExtendedLifetime(scanLock) {} }
        var summary = ScanSummary()
        if options.rebuildStore && FileManager.default.fileExists(atPath: layout.databasePath) {
            summary.storeSetAside = try TrackStore.setAside(path: layout.databasePath)
        }
        let store = try TrackStore(path: layout.databasePath)
        try checkShardCoverage(of: store)
        layout.removeTemporaryFiles()

        // The walk and the store's rows are independent reads: they are taken side by side.
        var walked: Result<LibraryListing, Error>?
        var stored: Result<[TrackRecord], Error>?
        let walker = LibraryWalker(root: options.library, excluding: [options.output], followExternalLinks: options.followExternalLinks)
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            if side == 0 { walked = Result { try walker.walk() } } else { stored = Result { try store.planningTracks() } }
        }
        let listing = try walked!.get()
        let identity = LibraryIdentity(root: try store.meta(MetaKey.libraryRoot),
                                       device: try store.meta(MetaKey.libraryDevice).flatMap { UInt64($0) })
        let plan = ScanPlanner(options: options).plan(listing: listing, stored: try stored!.get(), identity: identity)
        summary.total = plan.files
        summary.shard = options.shard?.description
        summary.otherShards = plan.otherShardFiles
        summary.unsupportedFiles = options.shard.map { shard in listing.unsupported.filter { shard.contains(relativePath: $0) } } ?? listing.unsupported
        summary.symlinkLoops = listing.symlinkLoops.count
        summary.externalLinks = listing.externalLinks
        summary.unchanged = plan.unchanged
        summary.unverified = plan.unverified
        summary.pruneHeldBack = plan.pruneHeldBack
        summary.keptMissing = plan.keptMissing.count
        summary.failures = listing.unreadable.map { ScanFailure(relativePath: $0.path, reason: "cannot read: \($0.reason)") } + plan.knownFailures
        if let held = plan.pruneHeldBack {
            logger.warning("tracks gone from the library are kept", metadata: ["count": "\(plan.keptMissing.count)", "why": "\(held)"])
        }

        let writer = StoreWriter(store: store, flushPath: options.output)
        let processor = TrackProcessor(layout: layout, visualizer: options.visualizer, profile: options.profile, logger: logger)
        var work = plan.work
        do {
            // Store-only decisions first: they need no decode.
            try store.setShardCoverage(options.shard.map(ShardSet.init))
            if plan.libraryTrusted {
                try store.setMeta(MetaKey.libraryRoot, options.library)
                try store.setMeta(MetaKey.libraryDevice, String(listing.rootDevice))
            }
            try store.setMissing(plan.reappeared, since: nil)
            try store.setMissing(plan.keptMissing.filter { $0.missingSince == nil }.map(\.relativePath), since: Date().timeIntervalSince1970)
            // Row first, files second: a crash in between leaves orphan files, never a row without files.
            for record in plan.prune {
                writer.submit(.init(changes: [.delete(relativePath: record.relativePath)], removeAfter: outputs(of: record)))
            }
            summary.pruned = plan.prune.count
            for relink in plan.relinks {
                if let full = try store.track(relativePath: relink.from.relativePath),
                   let moved = try processor.relink(relink, previous: full) {
                    let stale = outputs(of: full).filter { !outputs(of: moved).contains($0) }
                    writer.submit(.init(changes: [.delete(relativePath: full.relativePath), .save(moved)], removeAfter: stale))
                    summary.relinked += 1
                } else {
                    work.append(WorkItem(file: relink.to, previous: nil))
                }
            }
        } catch {
            try? writer.finish()
            throw error
        }

        lock.lock()
        live.queued = work.count
        live.bytesQueued = work.reduce(0) { $0 + $1.file.size }
        live.plannedFiles = work.map(\.file)
        lock.unlock()
        logger.info("scan planned", metadata: ["files": "\(listing.files.count)", "to_analyse": "\(work.count)",
                                               "relinked": "\(summary.relinked)", "pruned": "\(summary.pruned)",
                                               "seconds": "\(seconds(since: startedAt))"])

        var outcomes: [TrackOutcome] = []
        var fault: Error?
        WorkPool(jobs: options.jobs).run(work, shouldStop: { [self] in isStopping || writer.fault != nil }) { [self] _, item in
            do {
                let previous = try item.previous.flatMap { try store.track(relativePath: $0.relativePath) }
                let outcome = try processor.process(item.file, previous: previous, isCancelled: { self.isStopping }, onDecoded: { seconds in
                    self.lock.lock()
                    self.live.audioSecondsDecoded += seconds
                    self.lock.unlock()
                })
                if let record = outcome.recordToCommit {
                    guard writer.submit(.init(changes: [.save(record)])) else { return }
                }
                lock.lock()
                outcomes.append(outcome)
                live.finished += 1
                live.bytesFinished += item.file.size
                switch outcome {
                case .analysed(_, let seconds): live.audioSeconds += seconds
                case .failed, .unreadable: live.failed += 1
                }
                lock.unlock()
            } catch is AnalysisCancelled {
                return
            } catch {
                lock.lock()
                if fault == nil { fault = error }
                stopRequested = true
                lock.unlock()
            }
        }
        logger.debug("tracks analysed", metadata: ["tracks": "\(outcomes.count)", "seconds": "\(seconds(since: startedAt))"])
        do { try writer.finish() } catch { fault = fault ?? error }
        logger.debug("tracks recorded", metadata: ["tracks": "\(outcomes.count)", "seconds": "\(seconds(since: startedAt))"])
        if fault == nil {
            do {
                let albums = try AlbumGain.recompute(store: store, layout: layout, albumPerDisc: options.albumPerDisc, jobs: options.jobs)
                summary.albumsMeasured = albums.albumsMeasured
                logger.debug("albums measured", metadata: ["albums": "\(albums.albumsMeasured)", "profiles_rewritten": "\(albums.profilesRewritten)",
                                                           "seconds": "\(seconds(since: startedAt))"])
            } catch { fault = error }
        }

        for outcome in outcomes {
            switch outcome {
            case .analysed(_, let seconds):
                summary.analysed += 1
                summary.audioSeconds += seconds
            case .failed(let record, let reason), .unreadable(let record, let reason):
                summary.failures.append(ScanFailure(relativePath: record.relativePath, reason: reason))
            }
        }
        if let fault {
            summary.fault = "\(fault)"
            summary.pending = work.count - outcomes.count
        }
        summary.interrupted = fault == nil && isStopping && outcomes.count < work.count
        if summary.interrupted { summary.pending = work.count - outcomes.count }
        summary.wallSeconds = seconds(since: startedAt)
        return summary
    }

    /// A shard scan writes into a store of its own: a new one, or the one an earlier run of the same
    /// shard wrote. A plain scan may complete a shard's store into a whole-library one.
    private func checkShardCoverage(of store: TrackStore) throws {
        guard let shard = options.shard else { return }
        let recorded = try store.shardCoverage()
        if recorded == ShardSet(shard) { return }
        if recorded == nil, try store.count() == 0 { return }
        throw LibraryError.shardMismatch(path: options.output, requested: shard.description, recorded: recorded?.description)
    }

    /// The output files a row describes.
    private func outputs(of record: TrackRecord) -> [String] {
        layout.outputPaths(key: record.key)
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = start.duration(to: .now)
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}
