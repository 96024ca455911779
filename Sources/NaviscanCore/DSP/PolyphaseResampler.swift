import Foundation

/// Mono sample-rate conversion by the exact ratio L/M (reduced), as a polyphase windowed-sinc FIR:
/// output m sits at input time m·M/L, and is the dot product of `taps` input samples with the
/// coefficients of its phase (m·M mod L), one of L precomputed rows. There is no state but the input
/// history; outputs are computed a phase row at a time, four at once (see `process`).
///
/// Decimating, the low-pass cuts at 0.47 × the output rate (Kaiser window, β = 7, about 70 dB down
/// past the transition band), with 24 taps per output times the decimation, to the nearest multiple of
/// 8: 56 from 96 kHz (transition band 0.17 × the output rate wide), 24 from 48 kHz (0.2 ×: 0.4 dB down
/// at 18 kHz; 32 taps, 0.1 dB down there, cost a third more for bands nothing reads). Flat to 16 kHz at
/// a 44.1 kHz output, and what folds back lands above the bands the visualizer and the tempo stage read
/// (a 48 kHz source holds nothing that could fold below 20 kHz).
/// Interpolating, it cuts at the input's Nyquist frequency, so images sit above it (a 32 kHz source is
/// 1.6 dB down at 15 kHz, where such files rarely hold anything).
/// Output m is centred on input time m·M/L (no delay); it is produced once the input reaches
/// `taps / 2` samples past it, so the last few outputs of a stream (under 1 ms) are never produced,
/// which neither consumer needs.
public final class PolyphaseResampler {
    /// Phases beyond this are not tabulated (a ratio such as 44,101 / 44,100): `init` returns nil.
    public static let maxPhases = 2048

    public let inputRate: Int
    public let outputRate: Int
    /// L and M of the reduced ratio outputRate / inputRate = L / M.
    package let phases: Int
    package let step: Int
    /// Input samples per output, a multiple of 8.
    package let taps: Int
    /// phases × taps coefficients, row p for the phase p / L.
    package let coefficients: UnsafeMutablePointer<Float>
    private let buffer: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let output: UnsafeMutablePointer<Float>
    private let maxInputFrames: Int
    /// Valid samples in `buffer`.
    private var count: Int
    /// Where the next output's first tap sits in `buffer`, and its phase.
    private var firstTap = 0
    private var phase = 0

    public init?(inputRate: Int, outputRate: Int, maxInputFrames: Int) {
        precondition(inputRate > 0 && outputRate > 0 && maxInputFrames > 0)
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let g = gcd(inputRate, outputRate)
        guard outputRate / g <= Self.maxPhases else { return nil }
        self.inputRate = inputRate
        self.outputRate = outputRate
        phases = outputRate / g
        step = inputRate / g
        let decimation = max(1, Double(inputRate) / Double(outputRate))
        taps = Int((24 * decimation / 8).rounded()) * 8
        // Cut-off in cycles per input sample.
        let cutoff = inputRate < outputRate ? 0.5 : 0.47 * Double(outputRate) / Double(inputRate)
        let half = Double(taps / 2)
        coefficients = .allocate(capacity: phases * taps)
        var row = [Double](repeating: 0, count: taps)
        for p in 0..<phases {
            // Tap j reads input sample q − taps/2 + 1 + j for an output at q + p/L: τ = p/L + taps/2 − 1 − j.
            for j in 0..<taps {
                let tau = Double(p) / Double(phases) + half - 1 - Double(j)
                let x = 2 * cutoff * tau
                let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                row[j] = 2 * cutoff * sinc * KaiserWindow.value(tau / half, beta: 7)
            }
            // Every phase passes DC at exactly unity gain.
            let sum = row.reduce(0, +)
            for j in 0..<taps { coefficients[p * taps + j] = Float(row[j] / sum) }
        }
        self.maxInputFrames = maxInputFrames
        capacity = maxInputFrames + taps + 8
        buffer = .allocate(capacity: capacity)
        buffer.initialize(repeating: 0, count: capacity)
        output = .allocate(capacity: maxInputFrames * phases / step + 4)
        // Start as if preceded by silence, so output 0 is centred on input sample 0.
        count = taps / 2 - 1
    }

    deinit {
        coefficients.deallocate()
        buffer.deallocate()
        output.deallocate()
    }

    /// Hands the resampled samples of `input` (at most `maxInputFrames`) to `body`.
    public func process(_ input: UnsafeBufferPointer<Float>, _ body: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        precondition(input.count <= maxInputFrames, "more input than the resampler was made for")
        guard input.count > 0 else { return }
        (buffer + count).update(from: input.baseAddress!, count: input.count)
        count += input.count
        // The outputs this input completes: output k has its first tap at firstTap + ⌊(phase + k·step) / L⌋.
        let room = count - taps - firstTap
        let produced = room < 0 ? 0 : ((room + 1) * phases - phase + step - 1) / step
        // Outputs k, k + L, k + 2L, … share phase k's coefficient row and sit `step` input samples
        // apart, so they run together with that row held in registers, each input sample loaded once
        // per output rather than input and coefficient both. Every output sums in the same order
        // wherever it falls (`combine`), so the result does not depend on where blocks end.
        for k in 0..<min(phases, produced) {
            let position = phase + k * step
            let first = firstTap + position / phases
            let row = position % phases
            let outputs = (produced - k + phases - 1) / phases
            if taps == 24 {
                runRow24(first: first, row: row, outputs: outputs, at: output + k)
            } else {
                runRow(first: first, outputs: outputs, at: output + k) { dotProduct($0, row) }
            }
        }
        let next = phase + produced * step
        firstTap += next / phases
        phase = next % phases
        // Keep the history the next output needs (when decimating, the next first tap may lie past
        // the input so far: it then stays ahead of the buffer's start).
        let drop = min(firstTap, count)
        buffer.update(from: buffer + drop, count: count - drop)
        count -= drop
        firstTap -= drop
        if produced > 0 { try body(UnsafeBufferPointer(start: output, count: produced)) }
    }

    /// Four outputs' folded dot products to four outputs: one transpose-and-add. A lone output
    /// (`combine(r)`) sums its lanes in the same order.
    @inline(__always)
    private static func combine(_ r0: SIMD4<Float>, _ r1: SIMD4<Float>, _ r2: SIMD4<Float>, _ r3: SIMD4<Float>) -> SIMD4<Float> {
        let s01 = SIMD4(lowHalf: r0.evenHalf, highHalf: r1.evenHalf) + SIMD4(lowHalf: r0.oddHalf, highHalf: r1.oddHalf)
        let s23 = SIMD4(lowHalf: r2.evenHalf, highHalf: r3.evenHalf) + SIMD4(lowHalf: r2.oddHalf, highHalf: r3.oddHalf)
        return SIMD4(lowHalf: s01.evenHalf, highHalf: s23.evenHalf) + SIMD4(lowHalf: s01.oddHalf, highHalf: s23.oddHalf)
    }

    @inline(__always)
    private static func combine(_ r: SIMD4<Float>) -> Float {
        let pairs = r.evenHalf + r.oddHalf
        return pairs[0] + pairs[1]
    }

    /// `outputs` outputs of one phase row, `step` input samples apart from `first` on, written
    /// `phases` apart from `out` on; `dot` folds one output's dot product from its first tap.
    @inline(__always)
    private func runRow(first: Int, outputs: Int, at out: UnsafeMutablePointer<Float>, _ dot: (Int) -> SIMD4<Float>) {
        var first = first, o = out, left = outputs
        while left >= 4 {
            let sums = Self.combine(dot(first), dot(first &+ step), dot(first &+ 2 &* step), dot(first &+ 3 &* step))
            o[0] = sums[0]
            o[phases] = sums[1]
            o[2 &* phases] = sums[2]
            o[3 &* phases] = sums[3]
            first &+= 4 &* step
            o += 4 &* phases
            left &-= 4
        }
        while left > 0 {
            o[0] = Self.combine(dot(first))
            first &+= step
            o += phases
            left &-= 1
        }
    }

    /// `runRow` for 24 taps, with the row's coefficients held in registers and summed in
    /// `dotProduct`'s order.
    @inline(__always)
    private func runRow24(first: Int, row: Int, outputs: Int, at out: UnsafeMutablePointer<Float>) {
        let c = UnsafePointer(coefficients + row &* 24)
        let c0 = loadSIMD4(c), c1 = loadSIMD4(c + 4), c2 = loadSIMD4(c + 8)
        let c3 = loadSIMD4(c + 12), c4 = loadSIMD4(c + 16), c5 = loadSIMD4(c + 20)
        runRow(first: first, outputs: outputs, at: out) { first in
            let x = UnsafePointer(buffer + first)
            var low = c0 * loadSIMD4(x), high = c1 * loadSIMD4(x + 4)
            low += c2 * loadSIMD4(x + 8)
            high += c3 * loadSIMD4(x + 12)
            low += c4 * loadSIMD4(x + 16)
            high += c5 * loadSIMD4(x + 20)
            return low + high
        }
    }

    /// One output's dot product, folded to four lanes: lane k sums the taps j ≡ k (mod 4), the first
    /// half of each eight in one accumulator and the second in another (two chains of adds, not one).
    @inline(__always)
    private func dotProduct(_ first: Int, _ phase: Int) -> SIMD4<Float> {
        let x = UnsafePointer(buffer + first), c = UnsafePointer(coefficients + phase &* taps)
        var low = loadSIMD4(c) * loadSIMD4(x), high = loadSIMD4(c + 4) * loadSIMD4(x + 4)
        var j = 8
        while j < taps {
            low += loadSIMD4(c + j) * loadSIMD4(x + j)
            high += loadSIMD4(c + j + 4) * loadSIMD4(x + j + 4)
            j &+= 8
        }
        return low + high
    }
}
