import Foundation
import Logging
import NaviscanLibrary
import ServiceLifecycle

/// Keeps the library analysed while the server runs: the watch's changes (or the periodic re-scan)
/// start the scan's own way through (LibraryScanner: planner → work pool → store writer, the same
/// incremental rules and prune guard as `naviscan scan`), once the library has been quiet for
/// `settle` and no file is still being written. The store watcher then pushes what lands.
///
/// Precompute requests come first: a background scan is stopped for them (the files in flight are
/// dropped, nothing half-written is kept) and starts again, incrementally, once the precompute
/// queue is idle.
final class LibraryMaintainer: Service, @unchecked Sendable {
    /// A file still open for writing holds scans back this long at most (a stalled copy).
    static let writerTimeout: Duration = .seconds(600)

    /// What /health and the web page show.
    struct Status: Sendable {
        var watching: Bool
        var scanning: Bool
        /// A change is waiting for the library to settle (or for writers to finish).
        var waiting: Bool
        var pending: Int
        var lastScan: Date?
        var lastScanError: String?

        /// `scanning`, `waiting` (for changes to settle) or `idle`.
        var state: String { scanning ? "scanning" : waiting ? "waiting" : "idle" }
    }

    private let options: ScanOptions
    private let settings: Maintenance
    private let precompute: PrecomputeQueue
    /// False while the store is gone (an unmounted share): no scan starts then, so none writes a
    /// new store where the real one will be again.
    private let storeAvailable: @Sendable () -> Bool
    private let logger: Logger
    private let lock = NSLock()
    private var watch: DirectoryWatch?
    private var scanRequested = true
    private var lastChange = ContinuousClock.now
    /// Files being written (seen created or modified, not yet closed) and when they were last written.
    private var writers: [String: ContinuousClock.Instant] = [:]
    private var scanner: LibraryScanner?
    private var lastScan: Date?
    private var lastScanError: String?
    private var nextPeriodicScan: ContinuousClock.Instant?

    init(options: ScanOptions, settings: Maintenance, precompute: PrecomputeQueue,
         storeAvailable: @escaping @Sendable () -> Bool = { true }, logger: Logger) {
        self.options = options
        self.settings = settings
        self.precompute = precompute
        self.storeAvailable = storeAvailable
        self.logger = logger
    }

    func status() -> Status {
        lock.withLock { unlockedStatus() }
    }

    private func unlockedStatus() -> Status {
        var pending = 0
        if let scanner {
            let progress = scanner.progress()
            pending = max(0, progress.queued - progress.finished)
        }
        return Status(watching: watch != nil, scanning: scanner != nil, waiting: scanner == nil && scanRequested,
                      pending: pending, lastScan: lastScan, lastScanError: lastScanError)
    }

    /// Called for every change the watch reports (on the watch's thread, in order).
    func note(_ change: LibraryChange) {
        lock.withLock { unlockedNote(change) }
    }

    private func unlockedNote(_ change: LibraryChange) {
        let now = ContinuousClock.now
        switch change {
        case .writing(let path): writers[path] = now
        case .settled(let path): writers[path] = nil
        case .removed(let path): writers = writers.filter { $0.key != path && !$0.key.hasPrefix(path + "/") }
        case .rescan: break
        }
        scanRequested = true
        lastChange = now
    }

    /// A precompute was queued: a running background scan stops so that it goes first.
    func makeWayForPrecompute() {
        lock.withLock {
            if let scanner {
                scanner.requestStop()
                scanRequested = true
            }
        }
    }

    func run() async throws {
        if settings.watch {
            do {
                let watch = try DirectoryWatch(root: options.library, excluding: [options.output]) { [weak self] in self?.note($0) }
                watch.start()
                lock.withLock { self.watch = watch }
                logger.info("watching the library", metadata: ["library": "\(options.library)", "folders": "\(watch.watchedFolders)"])
                let unwatched = watch.unwatched
                if unwatched.count > 0 {
                    logger.warning("\(unwatched.count) folders are not watched (\(unwatched.reason)); periodic re-scans still cover them")
                }
            } catch {
                logger.warning("\(error)")
            }
        }
        if let interval = settings.rescanInterval { lock.withLock { nextPeriodicScan = .now + interval } }
        await cancelWhenGracefulShutdown { await self.loop() }
        lock.withLock {
            scanner?.requestStop()
            watch?.stop()
            watch = nil
        }
    }

    private func loop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(200))
            guard isDue(), storeAvailable(), await precompute.isIdle else { continue }
            await scan()
        }
    }

    /// A change has settled (or the periodic re-scan is due) and no file is being written.
    private func isDue() -> Bool {
        let now = ContinuousClock.now
        return lock.withLock {
            if let next = nextPeriodicScan, now >= next {
                scanRequested = true
                nextPeriodicScan = settings.rescanInterval.map { now + $0 }
            }
            let writing = writers.values.contains { now - $0 < Self.writerTimeout }
            return scanRequested && now - lastChange >= settings.settle && !writing
        }
    }

    /// One background scan, on a thread of its own (it blocks while its pool works).
    private func scan() async {
        let scanner = LibraryScanner(options: options, logger: logger)
        lock.withLock {
            scanRequested = false
            self.scanner = scanner
        }
        // A precompute queued since the loop looked goes first.
        if !(await precompute.isIdle) { makeWayForPrecompute() }
        let result: Result<ScanSummary, Error> = await withCheckedContinuation { done in
            Thread { done.resume(returning: Result { try scanner.run() }) }.start()
        }
        lock.withLock { finished(result) }
    }

    private func finished(_ result: Result<ScanSummary, Error>) {
        scanner = nil
        switch result {
        case .success(let summary):
            lastScan = Date()
            lastScanError = summary.fault
            // Stopped for a precompute, or a fault: try again (a fault after the next settle time).
            if summary.interrupted || summary.fault != nil {
                scanRequested = true
                lastChange = .now
            }
            if summary.analysed + summary.failed + summary.pruned + summary.relinked > 0 || summary.fault != nil || summary.pruneHeldBack != nil {
                logger.info("library scan", metadata: ["analysed": "\(summary.analysed)", "failed": "\(summary.failed)",
                                                       "pruned": "\(summary.pruned)", "relinked": "\(summary.relinked)",
                                                       "held_back": "\(summary.pruneHeldBack ?? "no")", "fault": "\(summary.fault ?? "none")"])
            }
        case .failure(let error):
            // Another scan holds the output, or the library is unreadable (unmounted): retry later.
            lastScanError = "\(error)"
            scanRequested = true
            lastChange = .now + .seconds(30)
            logger.warning("library scan could not run; retrying in about 30 s", metadata: ["error": "\(error)"])
        }
    }
}
