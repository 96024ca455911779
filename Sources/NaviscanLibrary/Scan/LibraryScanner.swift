import Foundation
import Logging
import NaviscanCore
import NaviscanStore

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

    /// Runs the scan and records it in the store (parameters, last scan, failed paths), whoever
    /// runs it: the CLI, `serve` keeping a library analysed, or a shard's job.
    public func run() throws -> ScanSummary {
        startedAt = .now
        let (store, scanLock, setAside) = try openOutput()
        defer { withExtendedLifetime(scanLock) {} }
        let failedBefore = try store.failedPaths()
        let (listing, plan) = try planScan(store: store)
        var summary = ScanSummary(plan: plan, listing: listing, shard: options.shard)
        summary.storeSetAside = setAside
        if let held = plan.pruneHeldBack {
            logger.warning("tracks gone from the library are kept", metadata: ["count": "\(plan.keptMissing.count)", "why": "\(held)"])
        }

        let writer = StoreWriter(store: store, flushPath: options.output)
        let processor = TrackProcessor(layout: layout, visualizer: options.visualizer, profile: options.profile,
                                       stageVersions: options.stageVersions, logger: logger)
        let work: [WorkItem]
        do {
            work = try applyStoreDecisions(plan, listing: listing, store: store, writer: writer, processor: processor, summary: &summary)
        } catch {
            try? writer.finish()
            throw error
        }
        publishPlan(work, listing: listing, summary: summary)
        var (outcomes, done, fault) = analyse(work, store: store, writer: writer, processor: processor)
        do { try writer.finish() } catch { fault = fault ?? error }
        logger.debug("tracks recorded", metadata: ["tracks": "\(outcomes.count)", "seconds": "\(seconds(since: startedAt))"])
        if fault == nil {
            do { summary.albumsMeasured = try measureAlbums(store: store) } catch { fault = error }
            if fault == nil { normaliseFeatures(store: store) }
        }
        summary.add(outcomes, of: work.count, fault: fault, stopped: isStopping)
        summary.work = WorkBreakdown(done, requested: options.freshness.requested)
        for i in summary.failures.indices where failedBefore.contains(summary.failures[i].relativePath) {
            summary.failures[i].known = true
        }
        summary.wallSeconds = seconds(since: startedAt)
        // A scan that ran to its end (finished or interrupted) is recorded, so an interrupted one
        // resumes with the same parameters; a fault records nothing more.
        if summary.fault == nil {
            do {
                try store.recordScan(ScanRecord(summary: summary, by: options.lockOwner), parameters: options.parameters,
                                     failures: summary.failures.map(\.relativePath), interrupted: summary.interrupted)
            } catch {
                summary.fault = "\(error)"
                summary.faultError = error as? LibraryError
            }
        }
        // The main file alone is then the whole store. A scan stopped by a fault tries too: what
        // was committed is worth having in it.
        do { try store.checkpoint() } catch where summary.fault == nil {
            summary.fault = "\(error)"
            summary.faultError = error as? LibraryError
        } catch {}
        return summary
    }

    /// Throws unless `library` is an existing folder. Checked before anything is created: the default
    /// output directory lies inside the library, and creating it would make a mistyped library exist.
    public static func checkLibraryFolder(_ library: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: library, isDirectory: &isDirectory) else {
            throw LibraryError.libraryUnreadable(path: library, reason: "no such directory")
        }
        guard isDirectory.boolValue else { throw LibraryError.libraryUnreadable(path: library, reason: "not a directory") }
    }

    /// Checks the library, then takes the output folder: its lock, its store (set aside first when
    /// asked to rebuild it), and a clean slate of temporary files.
    private func openOutput() throws -> (LibraryStore, ScanLock, setAside: String?) {
        try Self.checkLibraryFolder(options.library)
        try OutputLayout.createWritableDirectory(options.output)
        let scanLock = try ScanLock(path: layout.lockPath, outputDirectory: options.output, owner: options.lockOwner)
        var setAside: String?
        if options.rebuildStore && FileManager.default.fileExists(atPath: layout.databasePath) {
            setAside = try LibraryStore.setAside(path: layout.databasePath)
        }
        let store = try LibraryStore(path: layout.databasePath)
        try checkShardCoverage(of: store)
        layout.removeTemporaryFiles()
        return (store, scanLock, setAside)
    }

    /// What a scan with these options would do now, from a read-only look at the store: the planner's
    /// own decisions (moves carried over, known failures, the prune guard), without a decode or a write.
    /// `naviscan status` counts its work as pending.
    public func preview() throws -> ScanPlan {
        try planScan(store: try LibraryStore.readOnly(path: layout.databasePath)).1
    }

    /// Walk + store → plan. The walk and the store's rows are independent reads: taken side by side.
    private func planScan(store: LibraryStore) throws -> (LibraryListing, ScanPlan) {
        // Each side writes its own result only.
        nonisolated(unsafe) var walked: Result<LibraryListing, Error>?
        nonisolated(unsafe) var stored: Result<[TrackRecord], Error>?
        let walker = LibraryWalker(root: options.library, excluding: [options.output], followExternalLinks: options.followExternalLinks)
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            if side == 0 { walked = Result { try walker.walk() } } else { stored = Result { try store.planningTracks() } }
        }
        let listing = try walked!.get()
        let plan = ScanPlanner(options: options).plan(listing: listing, stored: try stored!.get(), identity: try store.libraryIdentity())
        return (listing, plan)
    }

    /// The plan's decisions that need no decode: coverage, library identity, missing marks, prunes
    /// and relinks. Returns the work left for the pool (relinks that could not be carried over join it).
    private func applyStoreDecisions(_ plan: ScanPlan, listing: LibraryListing, store: LibraryStore, writer: StoreWriter,
                                     processor: TrackProcessor, summary: inout ScanSummary) throws -> [WorkItem] {
        var work = plan.work
        try store.recordShardCoverage(options.shard.map(ShardSet.init))
        if plan.libraryTrusted { try store.recordLibraryIdentity(root: options.library, device: listing.rootDevice) }
        try store.markMissing(plan.reappeared, since: nil)
        try store.markMissing(plan.keptMissing.filter { $0.missingSince == nil }.map(\.relativePath), since: Date().timeIntervalSince1970)
        // Row first, files second: a crash in between leaves orphan files, never a row without files.
        for record in plan.prune {
            writer.submit(.init(changes: [.delete(relativePath: record.relativePath)], removeAfter: layout.outputPaths(key: record.key)))
        }
        summary.pruned = plan.prune.count
        for relink in plan.relinks {
            if let full = try store.track(relativePath: relink.from.relativePath),
               let moved = try processor.relink(relink, previous: full) {
                let stale = layout.outputPaths(key: full.key).filter { !layout.outputPaths(key: moved.key).contains($0) }
                writer.submit(.init(changes: [.delete(relativePath: full.relativePath), .save(moved)], removeAfter: stale))
                summary.relinked += 1
            } else {
                work.append(WorkItem(file: relink.to, previous: nil))
            }
        }
        return work
    }

    private func publishPlan(_ work: [WorkItem], listing: LibraryListing, summary: ScanSummary) {
        lock.lock()
        live.queued = work.count
        live.bytesQueued = work.reduce(0) { $0 + $1.file.size }
        live.plannedFiles = work.map(\.file)
        lock.unlock()
        logger.info("scan planned", metadata: ["files": "\(listing.files.count)", "to_analyse": "\(work.count)",
                                               "relinked": "\(summary.relinked)", "pruned": "\(summary.pruned)",
                                               "seconds": "\(seconds(since: startedAt))"])
    }

    /// The work pool: one decode per file; each row goes to the writer once its files are written.
    /// Returns the outcomes of the files done and the fault that stopped the pool, if any.
    private func analyse(_ work: [WorkItem], store: LibraryStore, writer: StoreWriter,
                         processor: TrackProcessor) -> (outcomes: [TrackOutcome], analysed: [TrackWork], fault: Error?) {
        // All three guarded by `lock`.
        nonisolated(unsafe) var outcomes: [TrackOutcome] = []
        nonisolated(unsafe) var analysed: [TrackWork] = []
        nonisolated(unsafe) var fault: Error?
        WorkPool(jobs: options.jobs).run(work, shouldStop: { [self] in isStopping || writer.fault != nil }) { [self] _, item in
            do {
                let previous = try item.previous.flatMap { try store.track(relativePath: $0.relativePath) }
                let outcome = try processor.process(item.file, previous: previous, work: item.work, isCancelled: { self.isStopping }, onDecoded: { seconds in
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
                case .analysed(_, let seconds):
                    live.audioSeconds += seconds
                    analysed.append(item.work)
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
        return (outcomes, analysed, fault)
    }

    /// The features' normalisation over the library as it now is (for `naviscan similar` and /similar).
    private func normaliseFeatures(store: LibraryStore) {
        do { try store.refreshSimilarityIndex() } catch {
            logger.warning("could not measure the similarity normalisation; queries measure it themselves", metadata: ["error": "\(error)"])
        }
    }

    /// The album pass, from the store alone (album loudness and gain; profiles left to write).
    private func measureAlbums(store: LibraryStore) throws -> Int {
        let albums = try AlbumGain.recompute(store: store, layout: layout, albumPerDisc: options.albumPerDisc, jobs: options.jobs,
                                             version: options.albumPassVersion)
        logger.debug("albums measured", metadata: ["albums": "\(albums.albumsMeasured)", "profiles_rewritten": "\(albums.profilesRewritten)",
                                                   "seconds": "\(seconds(since: startedAt))"])
        return albums.albumsMeasured
    }

    /// A shard scan writes into a store of its own: a new one, or the one an earlier run of the same
    /// shard wrote. A plain scan may complete a shard's store into a whole-library one.
    private func checkShardCoverage(of store: LibraryStore) throws {
        guard let shard = options.shard else { return }
        let recorded = try store.shardCoverage()
        if recorded == ShardSet(shard) { return }
        if recorded == nil, try store.count() == 0 { return }
        throw LibraryError.shardMismatch(path: options.output, requested: shard.description, recorded: recorded?.description)
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = start.duration(to: .now)
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}
