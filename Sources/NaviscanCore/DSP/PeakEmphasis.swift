/// y[i] = max(0, x[i] − mean(x[i−h…i+h])), the window cut at both ends of the sequence: removes the
/// slowly varying part of an envelope and keeps its positive peaks. Streaming, with h values of delay;
/// memory is the window, whatever the length.
public struct PeakEmphasis {
    public let half: Int
    private var window: [Double]
    private var count = 0
    /// Sum of the values in the ring (the last 2h + 1, fewer at the start).
    private var sum = 0.0
    private var emitted = 0

    public init(half: Int) {
        precondition(half >= 1)
        self.half = half
        window = [Double](repeating: 0, count: 2 * half + 1)
    }

    /// Takes x[count]; emits y for the value h places back once its window is complete.
    public mutating func append(_ x: Double, emit: (Double) -> Void) {
        let size = window.count
        if count >= size { sum -= window[count % size] }
        window[count % size] = x
        sum += x
        count += 1
        let i = count - 1 - half
        guard i >= 0 else { return }
        let lo = max(0, i - half)
        emit(max(0, window[i % size] - sum / Double(count - lo)))
        emitted += 1
    }

    /// Emits the last h values (their windows cut at the end).
    public mutating func finish(emit: (Double) -> Void) {
        let size = window.count
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
