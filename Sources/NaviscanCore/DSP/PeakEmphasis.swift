/// y[i] = max(0, x[i] − mean(x[i−h…i+h])), the window cut at both ends of the sequence: removes the
/// slowly varying part of an envelope and keeps its positive peaks. Streaming, with h values of delay;
/// memory is the window, whatever the length. It runs once per envelope value and region, so the ring
/// is raw memory with indices that wrap by comparison (no array checks, no division per value).
public final class PeakEmphasis {
    public let half: Int
    private let size: Int
    private let window: UnsafeMutablePointer<Double>
    private var count = 0
    /// Where x[count] goes (count % size), and where the value to emit next sits once x[count − 1]
    /// is in: (count − 1 − h) mod size.
    private var writeIndex = 0
    private var centreIndex: Int
    /// Sum of the values in the ring (the last 2h + 1, fewer at the start).
    private var sum = 0.0
    private var emitted = 0

    public init(half: Int) {
        precondition(half >= 1)
        self.half = half
        size = 2 * half + 1
        window = .allocate(capacity: size)
        window.initialize(repeating: 0, count: size)
        centreIndex = half   // (−1 − h) mod (2h + 1)
    }

    deinit { window.deallocate() }

    /// Takes x[count]; emits y for the value h places back once its window is complete.
    @inline(__always)
    public func append(_ x: Double, emit: (Double) -> Void) {
        if count >= size { sum -= window[writeIndex] }
        window[writeIndex] = x
        sum += x
        count += 1
        writeIndex = writeIndex + 1 == size ? 0 : writeIndex + 1
        centreIndex = centreIndex + 1 == size ? 0 : centreIndex + 1
        let i = count - 1 - half
        guard i >= 0 else { return }
        let lo = max(0, i - half)
        emit(max(0, window[centreIndex] - sum / Double(count - lo)))
        emitted += 1
    }

    /// Emits the last h values (their windows cut at the end).
    public func finish(emit: (Double) -> Void) {
        var tailSum = sum
        var lo = max(0, count - size)
        // Windows still to emit, from `emitted`: [max(0, i−h), count).
        for i in emitted..<count {
            while lo < i - half {
                tailSum -= window[lo % size]
                lo += 1
            }
            emit(max(0, window[i % size] - tailSum / Double(count - lo)))
        }
        emitted = count
    }
}
