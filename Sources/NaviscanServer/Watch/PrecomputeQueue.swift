import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// The server's own workers for POST /visualizer/precompute. A bounded queue (duplicates collapse);
/// each track is analysed on a dispatch thread, never on the event loops, under the same lock a
/// scan holds (OUT/naviscan.lock), so a precompute and a scan never write the store or its files at
/// once: while a scan runs, a precompute waits for it (and usually finds its track done by then). The
/// row is committed with the next change sequence, so the store watcher pushes the result: a
/// `track_analyzed` or a `track_failed` event.
actor PrecomputeQueue {
    enum Admission: Equatable { case queued, alreadyQueued, full }
    enum State: String { case queued, running }

    nonisolated let capacity: Int
    private let processor: TrackProcessor
    private let store: StoreHandle
    private let hub: PushHub
    private let layout: OutputLayout
    /// The scan's own rule: a track the store holds as it would analyse it now is not analysed again.
    nonisolated let freshness: TrackFreshness
    private let workers: Int
    private var pending: [LibraryFile] = []
    private var states: [String: State] = [:]
    private var running = 0
    private let logger: Logger

    init(processor: TrackProcessor, store: StoreHandle, hub: PushHub, workers: Int, capacity: Int = 256, logger: Logger) {
        self.processor = processor
        self.store = store
        self.hub = hub
        layout = processor.layout
        freshness = TrackFreshness(visualizer: processor.visualizer, profile: processor.profile, layout: processor.layout)
        self.workers = max(1, workers)
        self.capacity = capacity
        self.logger = logger
    }

    func state(of relativePath: String) -> State? { states[relativePath] }

    /// Nothing waiting or running: background scans may run.
    var isIdle: Bool { states.isEmpty }

    /// Tracks waiting or running.
    var count: Int { states.count }

    /// Queues a track; one already waiting or running is not queued twice.
    func enqueue(_ file: LibraryFile) -> Admission {
        if states[file.relativePath] != nil { return .alreadyQueued }
        guard pending.count < capacity else { return .full }
        states[file.relativePath] = .queued
        pending.append(file)
        startWorkers()
        return .queued
    }

    private func startWorkers() {
        while running < workers, !pending.isEmpty {
            let file = pending.removeFirst()
            running += 1
            states[file.relativePath] = .running
            Task { await self.run(file) }
        }
    }

    private func run(_ file: LibraryFile) async {
        let processor = self.processor, store = self.store.current, layout = self.layout, logger = self.logger, freshness = self.freshness
        // A fault (disk full, store unwritable) records nothing: the client hears of it here.
        let fault = await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            DispatchQueue.global(qos: .utility).async {
                var fault: String?
                defer { done.resume(returning: fault) }
                // Wait while a scan holds the output directory.
                var lock: ScanLock?
                while lock == nil {
                    lock = ScanLock.attempt(path: layout.lockPath, outputDirectory: layout.root, owner: .precompute)
                    if lock == nil { usleep(500_000) }
                }
                defer { withExtendedLifetime(lock) {} }
                do {
                    let previous = try store.track(relativePath: file.relativePath)
                    let work = previous.map { freshness.work(file, $0) } ?? .full
                    guard let work else { return }
                    let outcome = try processor.process(file, previous: previous, work: work)
                    if let record = outcome.recordToCommit {
                        // The processor synced this track's files itself (durability .immediate).
                        try StoreWriter.commitNow(.init(changes: [.save(record)]), store: store, flushPath: nil)
                    }
                    switch outcome {
                    case .analysed: try store.updateFailedPaths(adding: [], removing: [file.relativePath])
                    case .failed: try store.updateFailedPaths(adding: [file.relativePath], removing: [])
                    case .unreadable(_, let reason): fault = reason
                    }
                } catch {
                    fault = "\(error)"
                    logger.warning("precompute failed", metadata: ["path": "\(file.relativePath)", "error": "\(error)"])
                }
            }
        }
        if let fault { await hub.trackFailed(file.relativePath, reason: fault) }
        running -= 1
        states[file.relativePath] = nil
        startWorkers()
    }
}
