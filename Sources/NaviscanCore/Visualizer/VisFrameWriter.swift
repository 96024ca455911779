/// Receives normalized frames (bandCount values in [0, 1]) as the analysis produces them.
public protocol VisFrameSink: AnyObject {
    func append(_ frame: UnsafePointer<Float>) throws
}

/// Computes frames and throws them away: the analysis cost without the writing (benchmarks).
public final class DiscardingFrameSink: VisFrameSink {
    public init() {}
    public func append(_ frame: UnsafePointer<Float>) throws {}
}

/// Streams frames into a VisFrameBuffer file: a temporary file, buffered writes, the header written
/// last, then an atomic rename. Memory use is the write buffer, whatever the track length.
public final class VisFrameWriter: VisFrameSink {
    public let config: VisualizerConfig
    private let file: AtomicFile
    private let buffer: UnsafeMutableRawPointer
    private let bufferCapacity: Int
    private var buffered = 0
    public private(set) var frameCount = 0

    public init(path: String, config: VisualizerConfig, durability: AtomicFile.Durability = .immediate) throws {
        self.config = config
        file = try AtomicFile(destination: path, durability: durability)
        let stride = config.bandCount * config.encoding.bytesPerValue
        bufferCapacity = max(64 * 1024 / stride, 1) * stride
        buffer = .allocate(byteCount: bufferCapacity, alignment: 64)
        // Placeholder header; the real one (with the frame count) is written by `finish`.
        let zeros = [UInt8](repeating: 0, count: VisFrameHeader.size)
        try zeros.withUnsafeBytes { try file.write($0) }
    }

    deinit { buffer.deallocate() }

    public func append(_ frame: UnsafePointer<Float>) throws {
        let bands = config.bandCount
        if buffered + bands * config.encoding.bytesPerValue > bufferCapacity { try flush() }
        let out = buffer + buffered
        switch config.encoding {
        case .float32:
            let dst = out.assumingMemoryBound(to: UInt32.self)
            for b in 0..<bands { dst[b] = frame[b].bitPattern.littleEndian }
        case .float16:
            let dst = out.assumingMemoryBound(to: UInt16.self)
            for b in 0..<bands { dst[b] = HalfFloat.bits(from: frame[b]).littleEndian }
        case .uint8:
            let dst = out.assumingMemoryBound(to: UInt8.self)
            for b in 0..<bands { dst[b] = UInt8(clamping: Int(saturating: frame[b] * 255 + 0.5)) }
        }
        buffered += bands * config.encoding.bytesPerValue
        frameCount += 1
    }

    /// Writes the header and renames the file into place.
    public func finish(duration: Double, sourceSampleRate: Int, sourceChannels: Int) throws {
        try flush()
        let header = VisFrameHeader(config: config, frameCount: frameCount, duration: duration,
                                    sourceSampleRate: sourceSampleRate, sourceChannels: sourceChannels)
        try header.encoded().withUnsafeBytes { try file.write($0, at: 0) }
        try file.commit()
    }

    private func flush() throws {
        guard buffered > 0 else { return }
        try file.write(UnsafeRawBufferPointer(start: buffer, count: buffered))
        buffered = 0
    }
}
