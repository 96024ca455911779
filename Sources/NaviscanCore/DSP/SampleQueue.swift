/// A fixed-capacity run of mono samples for framing stages: append at the end, drop from the front.
/// Allocated once; appending never allocates.
final class SampleQueue {
    let capacity: Int
    /// The first valid sample.
    let start: UnsafeMutablePointer<Float>
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        start = .allocate(capacity: capacity)
    }

    deinit { start.deallocate() }

    var freeSpace: Int { capacity - count }

    /// Appends as many of `samples[offset...]` as fit; returns how many.
    func append(_ samples: UnsafeBufferPointer<Float>, from offset: Int) -> Int {
        let n = min(freeSpace, samples.count - offset)
        (start + count).update(from: samples.baseAddress! + offset, count: n)
        count += n
        return n
    }

    /// Appends up to `n` zeros (as many as fit); returns how many.
    @discardableResult
    func appendZeros(_ n: Int) -> Int {
        let m = min(n, freeSpace)
        (start + count).initialize(repeating: 0, count: m)
        count += m
        return m
    }

    /// Appends `samples` and hands each complete window of `size` samples, `hop` apart, to `body`,
    /// keeping only what the next window needs.
    func windows(of samples: UnsafeBufferPointer<Float>, size: Int, hop: Int, _ body: (UnsafePointer<Float>) -> Void) {
        var offset = 0
        while offset < samples.count {
            offset += append(samples, from: offset)
            var first = 0
            while first + size <= count {
                body(start + first)
                first += hop
            }
            removeFirst(first)
        }
    }

    func removeFirst(_ n: Int) {
        guard n > 0 else { return }
        start.update(from: start + n, count: count - n)
        count -= n
    }
}
