import Foundation

/// The true peak (BS.1770-4 Annex 2): the largest absolute value of the signal oversampled 4× below
/// 96 kHz, 2× below 192 kHz, as it is at higher rates, over every channel.
///
/// The interpolator is libebur128's: a 49-tap Hann-windowed sinc, split into one polyphase branch per
/// output phase, so the values equal those libebur128 reports (and ReplayGain taggers built on it).
/// BS.1770-4 gives its 48-tap table as an example; measured against libebur128 on sines near
/// 15 kHz and on clipped noise, that table reads 0.16 and 0.41 dB apart from it (docs/profile-format.md).
///
/// Each block is taken apart by channel into a buffer that keeps the last samples of the one
/// before, and each phase is one FIR over the whole block: loops over contiguous memory that the
/// compiler vectorises, with no allocation after `init`.
public final class TruePeakMeter {
    public static let taps = 49

    public let factor: Int
    private let channels: Int
    /// Per phase, its coefficients: output phase f at sample n is Σ_t phases[f][t] · x[n − t].
    private let phases: [[Float]]
    /// Samples of the block before, kept in front of each channel's samples.
    private let history: Int
    private let maxFrames: Int
    /// One channel at a time: `history` samples, then the block's.
    private let buffer: UnsafeMutablePointer<Float>
    /// The last `history` samples of each channel.
    private let tails: UnsafeMutablePointer<Float>
    private let output: UnsafeMutablePointer<Float>
    private var peak: Float = 0

    public init(sampleRate: Int, channels: Int, maxBlockFrames: Int) {
        factor = sampleRate < 96_000 ? 4 : sampleRate < 192_000 ? 2 : 1
        self.channels = channels
        maxFrames = maxBlockFrames
        var phases = [[Float]](repeating: [], count: factor)
        for j in 0..<Self.taps {
            let m = Double(j) - Double(Self.taps - 1) / 2
            var c = abs(m) > 1e-6 ? Foundation.sin(m * .pi / Double(factor)) / (m * .pi / Double(factor)) : 1
            c *= 0.5 * (1 - Foundation.cos(2 * .pi * Double(j) / Double(Self.taps - 1)))
            // Tap j is the j / factor-th of phase j % factor; a tap of (nearly) zero weight still
            // holds its place, so that every phase indexes its taps by delay.
            phases[j % factor].append(abs(c) > 1e-10 ? Float(c) : 0)
        }
        self.phases = phases
        history = (phases.map(\.count).max() ?? 1) - 1
        buffer = .allocate(capacity: history + maxBlockFrames)
        tails = .allocate(capacity: max(1, history * channels))
        tails.initialize(repeating: 0, count: max(1, history * channels))
        output = .allocate(capacity: maxBlockFrames)
    }

    deinit {
        buffer.deallocate()
        tails.deallocate()
        output.deallocate()
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
        let samples = buffer + history
        for c in 0..<channels {
            let tail = tails + c * history
            buffer.update(from: tail, count: history)
            for i in 0..<n { samples[i] = interleaved[i * channels + c] }
            for coefficients in phases {
                output.update(repeating: 0, count: n)
                for (t, weight) in coefficients.enumerated() where weight != 0 {
                    let x = UnsafePointer(samples - t)
                    for i in 0..<n { output[i] += weight * x[i] }
                }
                peak = max(peak, PeakScan.maxAbs(output, count: n))
            }
            // The last `history` samples of this block and the one before, in order.
            tail.update(from: buffer + n, count: history)
        }
    }

    /// The true peak, linear (1 is full scale); 0 for silence.
    public func finish() -> Double { Double(peak) }
}
