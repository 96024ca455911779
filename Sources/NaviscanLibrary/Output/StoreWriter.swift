import Foundation
import NaviscanCore
import NaviscanStore

/// The store's single writer for a run: workers hand it rows whose files are written, and it commits
/// them in batches (group commit) on its own thread: every `interval`, or sooner when `batchSize`
/// rows wait. Before a batch's rows are committed, the output file system is flushed once, so a row
/// never names a file that is not on disk, at the cost of one flush per batch instead of two file
/// and two directory syncs per track.
///
/// A failed commit (disk full, I/O error) is a fault: it is kept in `fault`, later submissions are
/// dropped, and the run stops; rows already committed stay.
public final class StoreWriter: @unchecked Sendable {
    public struct Commit: Sendable {
        public var changes: [StoreChange]
        /// Output files to remove once the changes are committed (a moved track's old outputs).
        public var removeAfter: [String]

        public init(changes: [StoreChange], removeAfter: [String] = []) {
            self.changes = changes
            self.removeAfter = removeAfter
        }
    }

    public let store: LibraryStore
    private let flushPath: String?
    private let interval: Double
    private let batchSize: Int
    private let condition = NSCondition()
    private var pending: [Commit] = []
    private var stopping = false
    private var finished = false
    private var storedFault: Error?

    /// `flushPath`: a path on the output file system, flushed before each commit (nil: outputs were
    /// synced by whoever wrote them).
    public init(store: LibraryStore, flushPath: String?, interval: Double = 0.25, batchSize: Int = 64) {
        self.store = store
        self.flushPath = FileSystemSync.isAvailable ? flushPath : nil
        self.interval = interval
        self.batchSize = max(1, batchSize)
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "naviscan store writer"
        thread.start()
    }

    /// The fault that stopped the writer, if any.
    public var fault: Error? {
        condition.lock()
        defer { condition.unlock() }
        return storedFault
    }

    /// Queues rows for the next batch. Returns false (and records nothing) once the writer faulted.
    @discardableResult
    public func submit(_ commit: Commit) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard storedFault == nil, !stopping else { return false }
        pending.append(commit)
        // Wake the writer for the first row of a batch (it starts the interval) and for a full one.
        if pending.count == 1 || pending.count >= batchSize { condition.broadcast() }
        return true
    }

    /// Flushes and commits one batch at once, on the caller's thread, by the same path as the queued
    /// batches (the server's precompute, one track at a time). Throws the fault.
    public static func commitNow(_ commit: Commit, store: LibraryStore, flushPath: String?) throws {
        if let error = Self.commit([commit], store: store, flushPath: FileSystemSync.isAvailable ? flushPath : nil) { throw error }
    }

    /// Commits what is queued and stops the thread; throws the fault, if any.
    public func finish() throws {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        let fault = storedFault
        condition.unlock()
        if let fault { throw fault }
    }

    private func loop() {
        condition.lock()
        while true {
            // Wait for work, then give the batch `interval` to fill (or until it is full / we stop).
            while pending.isEmpty && !stopping { condition.wait() }
            if !pending.isEmpty && !stopping {
                let deadline = Date(timeIntervalSinceNow: interval)
                while pending.count < batchSize && !stopping && condition.wait(until: deadline) {}
            }
            if pending.isEmpty && stopping { break }
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            condition.unlock()
            let error = Self.commit(batch, store: store, flushPath: flushPath)
            condition.lock()
            if let error {
                storedFault = error
                pending.removeAll()
                break
            }
        }
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Output files first (one flush of their file system), then the rows that name them.
    private static func commit(_ batch: [Commit], store: LibraryStore, flushPath: String?) -> Error? {
        let changes = batch.flatMap(\.changes)
        do {
            if let flushPath { try FileSystemSync.flush(containing: flushPath) }
            try store.commitTracks(changes)
        } catch {
            return LibraryError.fault(error) ?? error
        }
        for path in batch.flatMap(\.removeAfter) { OutputLayout.removeFile(path) }
        return nil
    }
}
