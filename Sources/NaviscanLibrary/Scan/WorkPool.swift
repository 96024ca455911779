import Foundation

/// `jobs` worker threads handing out items one at a time, in the order given (a scan puts the
/// longest files first, so no long file finishes last alone). Shared by `scan` and `bench`.
public struct WorkPool: Sendable {
    public let jobs: Int

    public init(jobs: Int) { self.jobs = max(1, jobs) }

    /// Runs `body(index, item)` for every item until done or until `shouldStop()` says so (items
    /// not yet handed out are then skipped); returns when every thread has finished.
    public func run<Item: Sendable>(_ items: [Item], shouldStop: @escaping @Sendable () -> Bool = { false },
                                    _ body: @escaping @Sendable (Int, Item) -> Void) {
        let cursor = Cursor(count: items.count)
        let group = DispatchGroup()
        for _ in 0..<min(jobs, max(items.count, 1)) {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                while let index = cursor.next(unless: shouldStop) { body(index, items[index]) }
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
        group.wait()
    }
}

/// The next index to hand out, under a lock.
private final class Cursor: @unchecked Sendable {
    private let lock = NSLock()
    private var position = 0
    private let count: Int

    init(count: Int) { self.count = count }

    func next(unless stop: () -> Bool) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard position < count, !stop() else { return nil }
        position += 1
        return position - 1
    }
}
