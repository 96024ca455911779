import Foundation

/// BS.1770's K-weighting filter (a 1.68 kHz high shelf, then a 38 Hz high-pass), with the sums of
/// squares of its output per channel: the energies BS.1770's blocks are made of.
///
/// The coefficients are libebur128's design for the rate, as one fourth-order direct-form-II filter
/// in double precision, so the output equals libebur128's to rounding. libebur128 runs that filter
/// one channel at a time with its state in memory, a store and a reload on every step of the
/// recursion; here two channels share one two-lane register and the state stays in registers,
/// which makes it about a fifth of libebur128's cost (docs/performance.md).
final class KWeightingFilter {
    struct Coefficients {
        var b: (Double, Double, Double, Double, Double)
        /// a1…a4 (a0 is 1).
        var a: (Double, Double, Double, Double)

        /// libebur128's `ebur128_init_filter`, constant for constant.
        init(sampleRate: Int) {
            let rate = Double(sampleRate)
            var f0 = 1681.974450955533
            let gain = 3.999843853973347
            var q = 0.7071752369554196
            var k = tan(Double.pi * f0 / rate)
            let vh = pow(10.0, gain / 20.0)
            let vb = pow(vh, 0.4996667741545416)
            let a0 = 1.0 + k / q + k * k
            let pb = ((vh + vb * k / q + k * k) / a0, 2.0 * (k * k - vh) / a0, (vh - vb * k / q + k * k) / a0)
            let pa = (1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0)
            f0 = 38.13547087602444
            q = 0.5003270373238773
            k = tan(Double.pi * f0 / rate)
            let rb = (1.0, -2.0, 1.0)
            let ra = (1.0, 2.0 * (k * k - 1.0) / (1.0 + k / q + k * k), (1.0 - k / q + k * k) / (1.0 + k / q + k * k))
            b = (pb.0 * rb.0,
                 pb.0 * rb.1 + pb.1 * rb.0,
                 pb.0 * rb.2 + pb.1 * rb.1 + pb.2 * rb.0,
                 pb.1 * rb.2 + pb.2 * rb.1,
                 pb.2 * rb.2)
            a = (pa.0 * ra.1 + pa.1 * ra.0,
                 pa.0 * ra.2 + pa.1 * ra.1 + pa.2 * ra.0,
                 pa.1 * ra.2 + pa.2 * ra.1,
                 pa.2 * ra.2)
        }
    }

    private let coefficients: Coefficients
    private let channels: Int
    /// Channels taken two at a time; a lone last channel runs in lane 0.
    private let pairs: Int
    /// Per pair, the four delayed values v1…v4.
    private let state: UnsafeMutablePointer<SIMD2<Double>>

    init(sampleRate: Int, channels: Int) {
        precondition(channels > 0)
        coefficients = Coefficients(sampleRate: sampleRate)
        self.channels = channels
        pairs = (channels + 1) / 2
        state = .allocate(capacity: 4 * pairs)
        state.initialize(repeating: .zero, count: 4 * pairs)
    }

    deinit { state.deallocate() }

    /// Filters `frames` interleaved frames and adds each channel's sum of squared output to
    /// `sums[channel]`.
    func accumulate(_ samples: UnsafePointer<Float>, frames: Int, into sums: UnsafeMutablePointer<Double>) {
        guard frames > 0 else { return }
        for pair in 0..<pairs {
            let first = 2 * pair
            let total = first + 1 < channels
                ? run(samples + first, stride: channels, frames: frames, pair: pair, bothLanes: true)
                : run(samples + first, stride: channels, frames: frames, pair: pair, bothLanes: false)
            sums[first] += total.x
            if first + 1 < channels { sums[first + 1] += total.y }
        }
    }

    /// One pair's recursion over a run of frames; returns the two lanes' sums of squares.
    @inline(__always)
    private func run(_ start: UnsafePointer<Float>, stride: Int, frames: Int, pair: Int, bothLanes: Bool) -> SIMD2<Double> {
        let c = coefficients
        let b0 = SIMD2(repeating: c.b.0), b1 = SIMD2(repeating: c.b.1), b2 = SIMD2(repeating: c.b.2)
        let b3 = SIMD2(repeating: c.b.3), b4 = SIMD2(repeating: c.b.4)
        let a1 = SIMD2(repeating: c.a.0), a2 = SIMD2(repeating: c.a.1)
        let a3 = SIMD2(repeating: c.a.2), a4 = SIMD2(repeating: c.a.3)
        let s = state + 4 * pair
        var v1 = s[0], v2 = s[1], v3 = s[2], v4 = s[3]
        var sum = SIMD2<Double>.zero
        var p = start
        for _ in 0..<frames {
            let x = SIMD2(Double(p[0]), bothLanes ? Double(p[1]) : 0)
            // Only a1·v1 waits on the previous step; the rest of the sum is computed beside it.
            let v0 = (x - a2 * v2 - a3 * v3 - a4 * v4) - a1 * v1
            let y = b0 * v0 + b1 * v1 + b2 * v2 + b3 * v3 + b4 * v4
            sum += y * y
            v4 = v3
            v3 = v2
            v2 = v1
            v1 = v0
            p += stride
        }
        // After long silence the state decays toward subnormal numbers, which are slow to compute
        // with (libebur128 turns on flush-to-zero for this). Values this small add nothing to any
        // energy, so they are cleared between calls instead.
        let negligible = v1 * v1 + v2 * v2 + v3 * v3 + v4 * v4 .< SIMD2(repeating: 1e-300)
        v1.replace(with: 0, where: negligible)
        v2.replace(with: 0, where: negligible)
        v3.replace(with: 0, where: negligible)
        v4.replace(with: 0, where: negligible)
        s[0] = v1
        s[1] = v2
        s[2] = v3
        s[3] = v4
        return sum
    }
}
