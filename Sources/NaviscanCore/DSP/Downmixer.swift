/// Interleaved frames → mono, the mean of all channels. Output buffer allocated once.
///
/// Stereo whose channels cancel (one channel's polarity inverted, L ≈ −R: some tracker modules and
/// "wide" mixes) has a near-silent mean, in which neither the visualizer nor the onset stage would
/// find anything. When a block's difference carries 20 dB more energy than its sum, the mix becomes
/// the half difference, until the sum comes back to within 10 dB of it (hysteresis, so ordinary
/// stereo never flips).
public final class Downmixer {
    public let channels: Int
    private let output: UnsafeMutablePointer<Float>
    private let capacity: Int
    /// Whether stereo is currently mixed as the half difference.
    public private(set) var mixesDifference = false

    public init(channels: Int, maxFrames: Int) {
        precondition(channels > 0 && maxFrames > 0)
        self.channels = channels
        self.capacity = maxFrames
        output = .allocate(capacity: maxFrames)
    }

    deinit { output.deallocate() }

    /// The mono mix of `block`, valid until the next call.
    public func process(_ block: AudioBlock) -> UnsafeBufferPointer<Float> {
        precondition(block.frameCount <= capacity && block.channels == channels)
        let n = block.frameCount
        let src = block.samples
        switch channels {
        case 1:
            output.update(from: src, count: n)
        case 2:
            // Eight frames at a time (a running float sum does not vectorise by itself).
            var sum8 = SIMD8<Float>(), difference8 = SIMD8<Float>()
            var i = 0
            while i + 8 <= n {
                let pair = SIMD16<Float>(lowHalf: loadSIMD8(src + 2 * i), highHalf: loadSIMD8(src + 2 * i + 8))
                let sum = pair.evenHalf + pair.oddHalf, difference = pair.evenHalf - pair.oddHalf
                sum8 += sum * sum
                difference8 += difference * difference
                i += 8
            }
            var sumEnergy = sum8.sum(), differenceEnergy = difference8.sum()
            for j in i..<n {
                let l = src[2 * j], r = src[2 * j + 1]
                sumEnergy += (l + r) * (l + r)
                differenceEnergy += (l - r) * (l - r)
            }
            if mixesDifference {
                if sumEnergy * 10 > differenceEnergy { mixesDifference = false }
            } else if differenceEnergy > 100 * sumEnergy {
                mixesDifference = true
            }
            let sign: Float = mixesDifference ? -1 : 1
            i = 0
            while i + 8 <= n {
                let pair = SIMD16<Float>(lowHalf: loadSIMD8(src + 2 * i), highHalf: loadSIMD8(src + 2 * i + 8))
                storeSIMD8(0.5 * (pair.evenHalf + sign * pair.oddHalf), output + i)
                i += 8
            }
            for j in i..<n { output[j] = 0.5 * (src[2 * j] + sign * src[2 * j + 1]) }
        default:
            let scale = 1 / Float(channels)
            for i in 0..<n {
                var sum: Float = 0
                let frame = src + i * channels
                for c in 0..<channels { sum += frame[c] }
                output[i] = sum * scale
            }
        }
        return UnsafeBufferPointer(start: output, count: n)
    }
}
