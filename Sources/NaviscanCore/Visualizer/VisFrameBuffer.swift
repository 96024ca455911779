#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A memory-mapped VisFrameBuffer file. Opening validates the header and size once; reading a frame
/// afterwards is a copy out of the mapping, with no parsing and no allocation.
public final class VisFrameBuffer {
    public let header: VisFrameHeader
    public let path: String
    private let mapping: UnsafeRawPointer?
    private let mappedSize: Int

    public var frameCount: Int { header.frameCount }
    public var bandCount: Int { header.bandCount }
    public var fps: Double { Double(header.fps) }
    public var duration: Double { header.duration }

    public init(path: String) throws {
        self.path = path
        let fd = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { throw VisFrameError.io(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw VisFrameError.io(path: path, reason: String(cString: strerror(errno))) }
        let size = Int(st.st_size)
        guard size > 0 else { throw VisFrameError.truncated(expectedBytes: VisFrameHeader.size, actualBytes: 0) }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else {
            throw VisFrameError.io(path: path, reason: "mmap failed: \(String(cString: strerror(errno)))")
        }
        do {
            header = try VisFrameHeader(decoding: UnsafeRawBufferPointer(start: base, count: size), fileSize: size)
        } catch {
            munmap(base, size)
            throw error
        }
        mapping = UnsafeRawPointer(base)
        mappedSize = size
    }

    deinit {
        if let mapping { munmap(UnsafeMutableRawPointer(mutating: mapping), mappedSize) }
    }

    /// The frame nearest to `time` seconds from the first played sample (frame i is centred at i / fps),
    /// clamped to the file's frames; 0 for a file with no frames.
    public func frameIndex(at time: Double) -> Int {
        guard frameCount > 0, time.isFinite else { return 0 }
        let i = Int((time * fps).rounded())
        return min(max(i, 0), frameCount - 1)
    }

    /// Copies frame `index` into `destination` (at least `bandCount` values) as Float in [0, 1].
    public func copyFrame(at index: Int, into destination: UnsafeMutableBufferPointer<Float>) {
        precondition(index >= 0 && index < frameCount, "frame \(index) is outside 0..<\(frameCount)")
        precondition(destination.count >= bandCount, "destination holds \(destination.count) values, a frame has \(bandCount)")
        let src = mapping! + header.headerSize + index * header.frameStride
        let dst = destination.baseAddress!
        switch header.encoding {
        case .float32:
            for b in 0..<bandCount {
                dst[b] = Float(bitPattern: UInt32(littleEndian: src.loadUnaligned(fromByteOffset: 4 * b, as: UInt32.self)))
            }
        case .float16:
            for b in 0..<bandCount {
                dst[b] = HalfFloat.value(from: UInt16(littleEndian: src.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self)))
            }
        case .uint8:
            let bytes = src.assumingMemoryBound(to: UInt8.self)
            for b in 0..<bandCount { dst[b] = Float(bytes[b]) * (1 / 255) }
        }
    }

    /// Array convenience: reuses `destination`'s storage when it already holds `bandCount` values.
    public func copyFrame(at index: Int, into destination: inout [Float]) {
        if destination.count != bandCount { destination = [Float](repeating: 0, count: bandCount) }
        destination.withUnsafeMutableBufferPointer { copyFrame(at: index, into: $0) }
    }
}
