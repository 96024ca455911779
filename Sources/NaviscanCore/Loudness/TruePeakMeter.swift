import Foundation

/// The true peak (BS.1770-4 Annex 2): the largest absolute value of the signal oversampled 4× below
/// 96 kHz, 2× below 192 kHz, as it is at higher rates, over every channel.
///
/// The interpolator is libebur128's: a 49-tap Hann-windowed sinc, split into one polyphase branch per
/// output phase, so the values equal those libebur128 reports (and ReplayGain taggers built on it).
/// BS.1770-4 gives its 48-tap table as an example; measured against libebur128 on sines near
/// 15 kHz and on clipped noise, that table reads 0.16 and 0.41 dB apart from it (docs/performance.md).
///
/// Each block is taken apart into one buffer per channel that keeps the last samples of the block
/// before; each phase is then one FIR over the block, eight outputs at a time in SIMD registers,
/// with no allocation after `init`.
public final class TruePeakMeter {
    public static let taps = 49

    public let factor: Int
    private let channels: Int
    /// Per delay d, the weights of phases 1, 2 and 3 (zero where a phase has no such tap): output
    /// phase f at sample n is Σ_d weights[d][f − 1] · x[n − d]. Phase 0 is the sample itself.
    private let weights: [SIMD4<Float>]
    private let gain: Float
    /// Samples of the block before, kept in front of each channel's samples.
    private let history: Int
    private let maxFrames: Int
    /// Per channel, `history + maxFrames` floats: the last `history` samples of the block before,
    /// then the block's.
    private let buffer: UnsafeMutablePointer<Float>
    /// The largest sample of each stretch of the channel at hand.
    private let stretchPeaks: UnsafeMutablePointer<Float>
    private var peak: Float = 0

    public init(sampleRate: Int, channels: Int, maxBlockFrames: Int) {
        factor = sampleRate < 96_000 ? 4 : sampleRate < 192_000 ? 2 : 1
        self.channels = channels
        maxFrames = maxBlockFrames
        history = factor > 1 ? (Self.taps - 1) / factor : 0
        var weights = [SIMD4<Float>](repeating: .zero, count: history + 1)
        for j in 0..<Self.taps where factor > 1 && j % factor != 0 {
            let m = Double(j) - Double(Self.taps - 1) / 2
            var c = abs(m) > 1e-6 ? Foundation.sin(m * .pi / Double(factor)) / (m * .pi / Double(factor)) : 1
            c *= 0.5 * (1 - Foundation.cos(2 * .pi * Double(j) / Double(Self.taps - 1)))
            // Tap j weighs the sample j / factor back, in phase j % factor; a weight of (nearly) zero
            // (the window's ends) is left out, as libebur128 leaves it out. Phase 0's taps other than
            // the centre fall on the sinc's zeros: it is the samples, delayed.
            if abs(c) > 1e-10 { weights[j / factor][j % factor - 1] = Float(c) }
        }
        // Delays past the last nonzero weight (the window's end, phase 0's) cost work and add nothing.
        weights.removeSubrange(((weights.lastIndex { $0 != .zero } ?? -1) + 1)...)
        // At 4×, phase 2 (half a sample) is symmetric: its weights at d and the last delay − d pair
        // up, so each pair costs one product. The pair's two weights differ only by the window's
        // rounding (about 1e-8), so they are made equal.
        let last = weights.count - 1
        if factor == 4 {
            for d in 0..<(weights.count / 2) {
                let mean = (weights[d][1] + weights[last - d][1]) / 2
                (weights[d][1], weights[last - d][1]) = (mean, mean)
            }
        }
        self.weights = weights
        // The most any phase can amplify: the largest sum of its weights' magnitudes (1 for phase 0).
        gain = max(1, (0..<3).map { f in weights.reduce(Float(0)) { $0 + abs($1[f]) } }.max() ?? 1)
        buffer = .allocate(capacity: (history + maxBlockFrames) * channels)
        buffer.initialize(repeating: 0, count: (history + maxBlockFrames) * channels)
        stretchPeaks = .allocate(capacity: maxBlockFrames / Self.stretch + 1)
    }

    deinit {
        buffer.deallocate()
        stretchPeaks.deallocate()
    }

    public func process(_ block: AudioBlock) {
        var offset = 0
        while offset < block.frameCount {
            let n = min(maxFrames, block.frameCount - offset)
            process(block.samples + offset * channels, frames: n)
            offset += n
        }
    }

    private func process(_ interleaved: UnsafePointer<Float>, frames n: Int) {
        guard factor > 1 else {
            peak = max(peak, PeakScan.maxAbs(interleaved, count: n * channels))
            return
        }
        var peakBits = SIMD8<Int32>(repeating: 0)
        // In a local: a stored property of a class is checked for exclusive access at every use.
        var peak = self.peak
        deinterleave(interleaved, frames: n)
        for c in 0..<channels {
            let channel = buffer + c * (history + maxFrames)
            let samples = channel + history
            // Phase 0, the samples themselves, from each stretch's largest sample (one pass).
            var stretches = 0
            for start in Swift.stride(from: 0, to: n, by: Self.stretch) {
                stretchPeaks[stretches] = PeakScan.maxAbs(samples + start, count: min(Self.stretch, n - start))
                peak = max(peak, stretchPeaks[stretches])
                stretches += 1
            }
            // An output is at most `gain` times the largest sample in its taps' reach: a stretch
            // whose samples cannot reach the peak so far is not filtered. The result is the same;
            // in music, most stretches are quieter than the loudest one by more than that.
            weights.withUnsafeBufferPointer { weights in
                var start = 0, k = 0
                while start < n {
                    let count = min(Self.stretch, n - start)
                    // The stretch and the `history` samples before it, which its first outputs reach.
                    let reach = max(stretchPeaks[k], PeakScan.maxAbs(samples + start - history, count: history))
                    k += 1
                    if gain * reach > max(peak, Self.value(peakBits)) {
                        peakBits = factor == 2 ? Self.filterHalf(samples + start, count: count, weights: weights, peak: peakBits)
                            : Self.filterQuarter(samples + start, count: count, weights: weights, peak: peakBits)
                    }
                    start += count
                }
            }
            // The last `history` samples of this block and the one before, in order, in front.
            channel.update(from: channel + n, count: history)
        }
        self.peak = max(peak, Self.value(peakBits))
    }

    /// Each channel's samples after its history. Stereo four frames at a time (a vector's even and
    /// odd lanes); others by a pointer that steps (an index times the channel count is checked for
    /// overflow at every sample, and that was most of the meter's time).
    private func deinterleave(_ interleaved: UnsafePointer<Float>, frames n: Int) {
        let stride = history + maxFrames
        var i = 0
        if channels == 2 {
            let left = buffer + history, right = buffer + stride + history
            while i + 4 <= n {
                let v = UnsafeRawPointer(interleaved + 2 * i).loadUnaligned(as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(left + i).storeBytes(of: v.evenHalf, as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(right + i).storeBytes(of: v.oddHalf, as: SIMD4<Float>.self)
                i += 4
            }
        }
        for c in 0..<channels {
            var source = interleaved + i * channels + c
            let samples = buffer + c * stride + history
            for k in i..<n {
                samples[k] = source.pointee
                source += channels
            }
        }
    }

    /// Samples per stretch the skip test looks at.
    static let stretch = 256

    /// The largest magnitude folded into `bits`. Infinity or NaN from a broken stream reads as the
    /// largest finite value, as `PeakScan` reads it.
    private static func value(_ bits: SIMD8<Int32>) -> Float {
        Float(bitPattern: UInt32(min(bits.max(), Int32(bitPattern: Float.greatestFiniteMagnitude.bitPattern))))
    }

    /// Folds the magnitudes of `sum` into `peak` as bits, lane by lane: a float's magnitude orders
    /// like an integer, and NaN sorts above every number.
    private static func fold(_ sum: SIMD8<Float>, into peak: inout SIMD8<Int32>) {
        let magnitude = unsafeBitCast(sum, to: SIMD8<Int32>.self) & 0x7FFF_FFFF
        peak.replace(with: magnitude, where: magnitude .> peak)
    }

    /// Phases 1 to 3 at 4× over `count` samples (with the taps' history before them), eight outputs
    /// of each at a time in registers, each window loaded once for the three: the largest |output|
    /// folded into `peak`. Phase 2 is computed from pairs of samples, Σ w[d] · (x[n − d] + x[n − last + d]).
    private static func filterQuarter(_ samples: UnsafePointer<Float>, count n: Int, weights: UnsafeBufferPointer<SIMD4<Float>>,
                                      peak: SIMD8<Int32>) -> SIMD8<Int32> {
        var peak = peak
        let delays = weights.count, last = delays - 1
        var i = 0
        while i + 8 <= n {
            var s1 = SIMD8<Float>(), s2 = SIMD8<Float>(), s3 = SIMD8<Float>()
            for d in 0..<(delays / 2) {
                let x = UnsafeRawPointer(samples + i - d).loadUnaligned(as: SIMD8<Float>.self)
                let y = UnsafeRawPointer(samples + i - (last - d)).loadUnaligned(as: SIMD8<Float>.self)
                let w = weights[d], v = weights[last - d]
                s1 += w[0] * x + v[0] * y
                s3 += w[2] * x + v[2] * y
                s2 += w[1] * (x + y)
            }
            if delays % 2 == 1 {
                let d = delays / 2
                let x = UnsafeRawPointer(samples + i - d).loadUnaligned(as: SIMD8<Float>.self)
                s1 += weights[d][0] * x
                s2 += weights[d][1] * x
                s3 += weights[d][2] * x
            }
            fold(s1, into: &peak)
            fold(s2, into: &peak)
            fold(s3, into: &peak)
            i += 8
        }
        return tail(samples, from: i, count: n, weights: weights, peak: peak)
    }

    /// Phase 1 at 2× (the others have no weights), as `filterQuarter` computes it.
    private static func filterHalf(_ samples: UnsafePointer<Float>, count n: Int, weights: UnsafeBufferPointer<SIMD4<Float>>,
                                   peak: SIMD8<Int32>) -> SIMD8<Int32> {
        var peak = peak
        var i = 0
        while i + 8 <= n {
            var s1 = SIMD8<Float>()
            for d in 0..<weights.count {
                s1 += weights[d][0] * UnsafeRawPointer(samples + i - d).loadUnaligned(as: SIMD8<Float>.self)
            }
            fold(s1, into: &peak)
            i += 8
        }
        return tail(samples, from: i, count: n, weights: weights, peak: peak)
    }

    /// Outputs `from`..<`n` one at a time (fewer than eight left).
    private static func tail(_ samples: UnsafePointer<Float>, from start: Int, count n: Int, weights: UnsafeBufferPointer<SIMD4<Float>>,
                             peak: SIMD8<Int32>) -> SIMD8<Int32> {
        var peak = peak
        for i in start..<max(start, n) {
            var sum = SIMD4<Float>()
            for d in 0..<weights.count { sum += weights[d] * samples[i - d] }
            for f in 0..<3 { peak[0] = max(peak[0], Int32(bitPattern: sum[f].bitPattern) & 0x7FFF_FFFF) }
        }
        return peak
    }

    /// The true peak, linear (1 is full scale); 0 for silence.
    public func finish() -> Double { Double(peak) }
}
