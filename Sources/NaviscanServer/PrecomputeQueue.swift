import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary

/// The server's own worker pool for POST /visualizer/precompute: tracks are analysed on dispatch
/// threads (never on the event loops), a few at a time; the result lands in the store, and the store
/// watcher tells the WebSocket clients.
actor PrecomputeQueue {
    private let processor: TrackProcessor
    private let store: TrackStore
    private let workers: Int
    private var pending: [LibraryFile] = []
    private var queued: Set<String> = []
    private var running = 0
    private let logger: Logger

    init(processor: TrackProcessor, store: TrackStore, workers: Int, logger: Logger) {
        self.processor = processor
        self.store = store
        self.workers = max(1, workers)
        self.logger = logger
    }

    /// Queues a track; a track already waiting or running is not queued twice.
    func enqueue(_ file: LibraryFile) {
        guard !queued.contains(file.relativePath) else { return }
        queued.insert(file.relativePath)
        pending.append(file)
        startWorkers()
    }

    private func startWorkers() {
        while running < workers, !pending.isEmpty {
            let file = pending.removeFirst()
            running += 1
            Task { await self.run(file) }
        }
    }

    private func run(_ file: LibraryFile) async {
        let processor = self.processor, store = self.store, logger = self.logger
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global(qos: .utility).async {
                do {
                    let previous = try store.track(relativePath: file.relativePath)
                    _ = try processor.process(file, previous: previous)
                } catch {
                    logger.warning("precompute failed", metadata: ["path": "\(file.relativePath)", "error": "\(error)"])
                }
                done.resume()
            }
        }
        running -= 1
        queued.remove(file.relativePath)
        startWorkers()
    }
}
