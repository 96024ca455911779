/// Interleaved frames → mono, the mean of all channels. Output buffer allocated once.
public final class Downmixer {
    public let channels: Int
    private let output: UnsafeMutablePointer<Float>
    private let capacity: Int

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
            for i in 0..<n { output[i] = 0.5 * (src[2 * i] + src[2 * i + 1]) }
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
