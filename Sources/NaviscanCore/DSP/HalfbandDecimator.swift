import Foundation

/// Halves the sample rate of a mono stream: a 47-tap half-band low-pass (Kaiser-windowed sinc,
/// β = 6: flat within 0.05 dB to 0.41·f_out, 60 dB down from 0.59·f_out, so nothing folds back below
/// 0.41·f_out), then every second sample.
/// Half the taps of a half-band filter are zero: an output is the centre sample times 0.5 plus twelve
/// symmetric pairs of odd-phase samples, computed phase-split so the loops over outputs vectorise.
/// Streaming, with fixed buffers; output m is centred on input sample 2m, and is produced once input
/// sample 2m + 23 has arrived (the last 11 outputs of a stream are never needed by the onset stage).
public final class HalfbandDecimator {
    static let taps = 47
    static let half = 23
    static let pairs = 12
    /// Coefficients of the odd offsets ±1, ±3, …, ±23 (the centre tap is 0.5, even offsets are 0).
    private let oddTaps: [Float]
    private let buffer: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let output: UnsafeMutablePointer<Float>
    /// The odd-phase samples around one batch of outputs.
    private let oddPhase: UnsafeMutablePointer<Float>
    /// Valid samples in `buffer`; buffer[0] is the oldest sample still needed.
    private var count = 0
    /// Where the next output's centre sample sits in `buffer`.
    private var nextCentre = 0

    public init(maxInputFrames: Int) {
        precondition(maxInputFrames > 0)
        var odd: [Double] = []
        for j in 0..<Self.pairs {
            let n = Double(2 * j + 1)
            let ratio = n / Double(Self.half)
            let window = KaiserWindow.value(ratio, beta: 6)
            odd.append(sin(Double.pi * n / 2) / (Double.pi * n) * window)
        }
        // Unity gain at DC: centre 0.5 plus twice the odd taps must sum to 1.
        let scale = 0.5 / (2 * odd.reduce(0, +))
        oddTaps = odd.map { Float($0 * scale) }
        capacity = maxInputFrames + Self.taps + 1
        buffer = .allocate(capacity: capacity)
        buffer.initialize(repeating: 0, count: capacity)
        output = .allocate(capacity: maxInputFrames / 2 + Self.taps)
        oddPhase = .allocate(capacity: maxInputFrames / 2 + 2 * Self.taps)
        // Start as if preceded by silence, so the first output is centred on input sample 0.
        count = Self.half
        nextCentre = Self.half
    }

    deinit {
        buffer.deallocate()
        output.deallocate()
        oddPhase.deallocate()
    }

    /// Hands the decimated samples of `input` (at most `maxInputFrames`) to `body`.
    public func process(_ input: UnsafeBufferPointer<Float>, _ body: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        precondition(count + input.count <= capacity, "more input than the decimator was made for")
        (buffer + count).update(from: input.baseAddress!, count: input.count)
        count += input.count
        // Outputs whose window [centre − 23, centre + 23] is complete.
        let produced = nextCentre + Self.half < count ? (count - 1 - Self.half - nextCentre) / 2 + 1 : 0
        if produced > 0 {
            // y[i] = 0.5·x[c + 2i] + Σ_j tap_j·(odd[i + 11 − j] + odd[i + 12 + j]), odd[k] = x[c − 23 + 2k].
            let first = buffer + nextCentre
            for i in 0..<produced { output[i] = first[2 * i] }
            let oddStart = first - Self.half
            for k in 0..<(produced + Self.half) { oddPhase[k] = oddStart[2 * k] }
            // Sixteen outputs at a time as four independent SIMD4 sums (one running sum would wait on
            // each add in turn); each output still sums its terms in the same order. Then four, then one.
            oddTaps.withUnsafeBufferPointer { c in
                var i = 0
                while i + 16 <= produced {
                    let out = output + i
                    var s0 = 0.5 * loadSIMD4(out), s1 = 0.5 * loadSIMD4(out + 4), s2 = 0.5 * loadSIMD4(out + 8), s3 = 0.5 * loadSIMD4(out + 12)
                    // Pair j: odd[i + 11 − j] + odd[i + 12 + j], for sixteen consecutive outputs.
                    var before = UnsafePointer(oddPhase + i + Self.pairs - 1), after = UnsafePointer(oddPhase + i + Self.pairs)
                    for j in 0..<Self.pairs {
                        let tap = c[j]
                        s0 += tap * (loadSIMD4(before) + loadSIMD4(after))
                        s1 += tap * (loadSIMD4(before + 4) + loadSIMD4(after + 4))
                        s2 += tap * (loadSIMD4(before + 8) + loadSIMD4(after + 8))
                        s3 += tap * (loadSIMD4(before + 12) + loadSIMD4(after + 12))
                        before -= 1
                        after += 1
                    }
                    storeSIMD4(s0, out); storeSIMD4(s1, out + 4); storeSIMD4(s2, out + 8); storeSIMD4(s3, out + 12)
                    i += 16
                }
                while i + 4 <= produced {
                    var sum = 0.5 * loadSIMD4(output + i)
                    var before = UnsafePointer(oddPhase + i + Self.pairs - 1), after = UnsafePointer(oddPhase + i + Self.pairs)
                    for j in 0..<Self.pairs {
                        sum += c[j] * (loadSIMD4(before) + loadSIMD4(after))
                        before -= 1
                        after += 1
                    }
                    storeSIMD4(sum, output + i)
                    i += 4
                }
                while i < produced {
                    var sum = 0.5 * output[i]
                    for j in 0..<Self.pairs { sum += c[j] * (oddPhase[i + Self.pairs - 1 - j] + oddPhase[i + Self.pairs + j]) }
                    output[i] = sum
                    i += 1
                }
            }
            nextCentre += 2 * produced
        }
        // Keep the history the next centre needs.
        let keepFrom = nextCentre - Self.half
        count -= keepFrom
        buffer.update(from: buffer + keepFrom, count: count)
        nextCentre -= keepFrom
        if produced > 0 { try body(UnsafeBufferPointer(start: output, count: produced)) }
    }
}
