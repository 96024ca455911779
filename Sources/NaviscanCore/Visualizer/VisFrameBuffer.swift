#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A memory-mapped VisFrameBuffer file. Opening validates the header, the size and every stored
/// value once; reading a frame afterwards is a copy out of the mapping, with no parsing and no
/// allocation.
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
        let fd: Int32, size: Int
        do { (fd, size) = try RegularFile.open(path).descriptorAndSize } catch {
            throw VisFrameError(opening: path, error)
        }
        defer { close(fd) }
        guard size > 0 else { throw VisFrameError.truncated(expectedBytes: VisFrameHeader.size, actualBytes: 0) }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else {
            throw VisFrameError.io(path: path, reason: "mmap failed: \(String(cString: strerror(errno)))")
        }
        do {
            let file = UnsafeRawBufferPointer(start: base, count: size)
            let header = try VisFrameHeader(decoding: file, fileSize: size)
            try VisFramePayload.validate(UnsafeRawBufferPointer(rebasing: file[header.headerSize..<header.expectedFileSize]),
                                         header: header, firstFrame: 0)
            self.header = header
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
        return min(max(Int(saturating: (time * fps).rounded()), 0), frameCount - 1)
    }

    /// Copies frame `index` into `destination` (at least `bandCount` values) as Float in [0, 1].
    public func copyFrame(at index: Int, into destination: UnsafeMutableBufferPointer<Float>) {
        precondition(index >= 0 && index < frameCount, "frame \(index) is outside 0..<\(frameCount)")
        precondition(destination.count >= bandCount, "destination holds \(destination.count) values, a frame has \(bandCount)")
        let src = mapping! + header.headerSize + index * header.frameStride
        VisFrameDecoding.decode(src, encoding: header.encoding, count: bandCount, into: destination.baseAddress!)
    }

    /// Array convenience: reuses `destination`'s storage when it already holds `bandCount` values.
    public func copyFrame(at index: Int, into destination: inout [Float]) {
        if destination.count != bandCount { destination = [Float](repeating: 0, count: bandCount) }
        destination.withUnsafeMutableBufferPointer { copyFrame(at: index, into: $0) }
    }
}
