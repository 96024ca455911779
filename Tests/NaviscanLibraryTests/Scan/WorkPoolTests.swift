import Foundation
import NaviscanLibrary
import Testing

@Suite("WorkPool: every item once, in order handed out, stoppable")
struct WorkPoolTests {
    @Test("Each item runs exactly once, on at most `jobs` threads at a time", arguments: [1, 3, 8])
    func everyItemOnce(jobs: Int) {
        let lock = NSLock()  // guards the counters below
        nonisolated(unsafe) var seen = [Int](repeating: 0, count: 500)
        nonisolated(unsafe) var running = 0, most = 0
        WorkPool(jobs: jobs).run(Array(0..<500)) { index, item in
            lock.withLock { running += 1; most = max(most, running); seen[item] += 1; #expect(index == item) }
            usleep(100)
            lock.withLock { running -= 1 }
        }
        #expect(seen.allSatisfy { $0 == 1 })
        #expect(most <= jobs && most >= 1)
    }

    @Test("Items are handed out in the order given; once shouldStop says so no new item starts")
    func orderAndStop() {
        let lock = NSLock()  // guards the counters below
        nonisolated(unsafe) var order: [Int] = []
        WorkPool(jobs: 1).run(Array(0..<50)) { _, item in lock.withLock { order.append(item) } }
        #expect(order == Array(0..<50))

        nonisolated(unsafe) var started = 0
        WorkPool(jobs: 4).run(Array(0..<1000), shouldStop: { lock.withLock { started >= 10 } }) { _, _ in
            lock.withLock { started += 1 }
        }
        // Up to one item per thread may have been handed out as the tenth began.
        #expect(started >= 10 && started <= 13, "\(started)")
        nonisolated(unsafe) var none = 0
        WorkPool(jobs: 4).run([Int]()) { _, _ in none += 1 }
        #expect(none == 0)
    }
}
