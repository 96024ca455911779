#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A VisFrameBuffer file read through one open descriptor in fixed-size chunks, for servers: memory
/// stays at one chunk whatever the track length (a mapping would count the whole file as resident),
/// and a file replaced or removed after opening is not seen half-way. Opening validates the header;
/// `validatePayload` checks every value before anything is sent, so a damaged file becomes an error
/// answer rather than a broken one.
public final class VisFrameFile {
    public let header: VisFrameHeader
    public let path: String
    /// Seconds since 1970 of the file's last change (for ETags).
    public let modificationTime: Double
    private let fd: Int32
    private let chunk: UnsafeMutableRawBufferPointer

    /// `chunkBytes` is rounded to whole frames (at least one).
    public init(path: String, chunkBytes: Int = 256 * 1024) throws {
        self.path = path
        let opened: RegularFile.Opened
        do { opened = try RegularFile.open(path) } catch {
            throw VisFrameError(opening: path, error)
        }
        var head = [UInt8](repeating: 0, count: VisFrameHeader.size)
        do {
            let n = try head.withUnsafeMutableBytes { try RegularFile.read(fd: opened.fd, into: $0.baseAddress!, count: $0.count, offset: 0) }
            head.removeLast(head.count - n)
            header = try head.withUnsafeBytes { try VisFrameHeader(decoding: $0, fileSize: opened.size) }
        } catch {
            close(opened.fd)
            if let failure = error as? RegularFile.Failure { throw VisFrameError(opening: path, failure) }
            throw error
        }
        fd = opened.fd
        modificationTime = opened.modificationTime
        let stride = max(header.frameStride, 1)
        chunk = .allocate(byteCount: max(chunkBytes / stride, 1) * stride, alignment: 64)
    }

    deinit {
        close(fd)
        chunk.deallocate()
    }

    public var frameCount: Int { header.frameCount }
    public var bandCount: Int { header.bandCount }
    /// The bytes a reader needs: the header and the frames (anything after them is ignored).
    public var byteCount: Int { header.expectedFileSize }
    /// Frames per chunk of `readFrames`.
    public var framesPerChunk: Int { chunk.count / header.frameStride }

    /// Reads the whole payload once and throws `VisFrameError.corruptPayload` at the first value
    /// outside [0, 1].
    public func validatePayload() throws {
        var frame = 0
        while frame < frameCount {
            let bytes = try readFrameBytes(from: frame)
            try VisFramePayload.validate(bytes, header: header, firstFrame: frame)
            frame += bytes.count / header.frameStride
        }
    }

    /// Raw bytes `offset..<offset + count` of the file (at most one chunk), for sending it as is.
    public func readBytes(at offset: Int, maxCount: Int) throws -> UnsafeRawBufferPointer {
        let count = min(maxCount, chunk.count, byteCount - offset)
        guard count > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return try readExactly(count, at: offset)
    }

    /// Frames from `first` on, decoded to Float, handed to `body` one frame at a time (the pointer
    /// is valid only during the call); returns how many were read (at most one chunk's worth).
    @discardableResult
    public func readFrames(from first: Int, _ body: (UnsafeBufferPointer<Float>) throws -> Void) throws -> Int {
        let bytes = try readFrameBytes(from: first)
        let frames = bytes.count / header.frameStride
        try withUnsafeTemporaryAllocation(of: Float.self, capacity: bandCount) { values in
            for f in 0..<frames {
                VisFrameDecoding.decode(bytes.baseAddress! + f * header.frameStride, encoding: header.encoding,
                                        count: bandCount, into: values.baseAddress!)
                try body(UnsafeBufferPointer(values))
            }
        }
        return frames
    }

    private func readFrameBytes(from first: Int) throws -> UnsafeRawBufferPointer {
        let frames = min(framesPerChunk, frameCount - first)
        guard frames > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return try readExactly(frames * header.frameStride, at: header.headerSize + first * header.frameStride)
    }

    private func readExactly(_ count: Int, at offset: Int) throws -> UnsafeRawBufferPointer {
        let n: Int
        do { n = try RegularFile.read(fd: fd, into: chunk.baseAddress!, count: count, offset: offset) } catch {
            throw VisFrameError(opening: path, error)
        }
        guard n == count else { throw VisFrameError.truncated(expectedBytes: offset + count, actualBytes: offset + n) }
        return UnsafeRawBufferPointer(start: chunk.baseAddress, count: count)
    }
}

/// Stored values → Float, shared by the mapped and the chunked reader.
enum VisFrameDecoding {
    static func decode(_ src: UnsafeRawPointer, encoding: VisSampleEncoding, count: Int, into dst: UnsafeMutablePointer<Float>) {
        switch encoding {
        case .float32:
            for b in 0..<count {
                dst[b] = Float(bitPattern: UInt32(littleEndian: src.loadUnaligned(fromByteOffset: 4 * b, as: UInt32.self)))
            }
        case .float16:
            for b in 0..<count {
                dst[b] = HalfFloat.value(from: UInt16(littleEndian: src.loadUnaligned(fromByteOffset: 2 * b, as: UInt16.self)))
            }
        case .uint8:
            let bytes = src.assumingMemoryBound(to: UInt8.self)
            for b in 0..<count { dst[b] = Float(bytes[b]) * (1 / 255) }
        }
    }
}
