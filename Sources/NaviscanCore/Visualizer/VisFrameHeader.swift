/// The 128-byte header of a VisFrameBuffer file (see docs/vis-format.md for the byte layout).
public struct VisFrameHeader: Equatable, Sendable {
    public static let magic: [UInt8] = Array("NVISFRM\0".utf8)
    public static let currentVersion: UInt16 = 1
    public static let size = 128
    /// Payload alignment: the header size is a multiple of this, so frames can be mapped and read in place.
    public static let alignment = 64

    public var version: UInt16 = currentVersion
    public var headerSize: Int = size
    public var encoding: VisSampleEncoding
    /// 0 = logarithmic band spacing (the only one defined in version 1).
    public var bandSpacing: UInt8 = 0
    public var bandCount: Int
    public var fps: Float
    public var analysisRate: Int
    public var frameCount: Int
    public var duration: Double
    public var fftSize: Int
    public var hop: Float
    public var minHz: Float
    public var maxHz: Float
    public var normalization: LevelNormalization
    public var sourceSampleRate: Int
    public var sourceChannels: Int

    public init(config: VisualizerConfig, frameCount: Int, duration: Double, sourceSampleRate: Int, sourceChannels: Int) {
        encoding = config.encoding
        bandCount = config.bandCount
        fps = Float(config.fps)
        analysisRate = config.analysisRate
        self.frameCount = frameCount
        self.duration = duration
        fftSize = config.fftSize
        hop = Float(config.hop)
        minHz = Float(config.minHz)
        maxHz = Float(config.maxHz)
        normalization = config.normalization
        self.sourceSampleRate = sourceSampleRate
        self.sourceChannels = sourceChannels
    }

    /// Bytes per frame: bandCount × bytes per value.
    public var frameStride: Int { bandCount * encoding.bytesPerValue }

    /// Total file size the header implies.
    public var expectedFileSize: Int { headerSize + frameCount * frameStride }

    public func encoded() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.size)
        out.withUnsafeMutableBytes { p in
            func put<T: FixedWidthInteger>(_ v: T, _ at: Int) { p.storeBytes(of: v.littleEndian, toByteOffset: at, as: T.self) }
            func putF(_ v: Float, _ at: Int) { put(v.bitPattern, at) }
            for (i, b) in Self.magic.enumerated() { p[i] = b }
            put(version, 8)
            put(UInt16(headerSize), 10)
            p[12] = encoding.rawValue
            p[13] = bandSpacing
            put(UInt16(bandCount), 14)
            putF(fps, 16)
            put(UInt32(analysisRate), 20)
            put(UInt64(frameCount), 24)
            put(duration.bitPattern, 32)
            put(UInt32(fftSize), 40)
            putF(hop, 44)
            putF(minHz, 48)
            putF(maxHz, 52)
            putF(normalization.floorDB, 56)
            putF(normalization.rangeDB, 60)
            putF(normalization.attack, 64)
            putF(normalization.release, 68)
            putF(normalization.minReferenceDB, 72)
            put(UInt32(frameStride), 76)
            put(UInt32(sourceSampleRate), 80)
            put(UInt16(sourceChannels), 84)
            put(CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[0..<124])), 124)
        }
        return out
    }

    /// `header` (at least 128 bytes) with its checksum recomputed: for tools and tests that edit a
    /// header on purpose.
    public static func resealed(_ header: [UInt8]) -> [UInt8] {
        var out = header
        let crc = out.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<124])) }
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { out[124 + i] = $0[i] } }
        return out
    }

    /// Parses and validates a header. `fileSize` is checked against the frame count it declares.
    public init(decoding p: UnsafeRawBufferPointer, fileSize: Int) throws {
        guard p.count >= 16 else { throw VisFrameError.truncated(expectedBytes: Self.size, actualBytes: p.count) }
        guard Array(p[0..<8]) == Self.magic else { throw VisFrameError.notAFrameFile }
        func get<T: FixedWidthInteger>(_ at: Int, _: T.Type) -> T { T(littleEndian: p.loadUnaligned(fromByteOffset: at, as: T.self)) }
        func getF(_ at: Int) -> Float { Float(bitPattern: get(at, UInt32.self)) }
        version = get(8, UInt16.self)
        guard version == Self.currentVersion else { throw VisFrameError.unsupportedVersion(version) }
        guard p.count >= Self.size else { throw VisFrameError.truncated(expectedBytes: Self.size, actualBytes: p.count) }
        let storedCRC = get(124, UInt32.self)
        guard storedCRC == CRC32.checksum(UnsafeRawBufferPointer(rebasing: p[0..<124])) else {
            throw VisFrameError.corruptHeader("header checksum mismatch")
        }
        headerSize = Int(get(10, UInt16.self))
        guard headerSize >= Self.size, headerSize % Self.alignment == 0 else {
            throw VisFrameError.corruptHeader("header size \(headerSize) is not a multiple of \(Self.alignment) ≥ \(Self.size)")
        }
        guard let enc = VisSampleEncoding(rawValue: p[12]) else { throw VisFrameError.corruptHeader("unknown sample encoding \(p[12])") }
        encoding = enc
        bandSpacing = p[13]
        guard bandSpacing == 0 else { throw VisFrameError.corruptHeader("unknown band spacing \(bandSpacing)") }
        bandCount = Int(get(14, UInt16.self))
        fps = getF(16)
        analysisRate = Int(get(20, UInt32.self))
        let frames = get(24, UInt64.self)
        guard frames <= UInt64(Int32.max) else { throw VisFrameError.corruptHeader("frame count \(frames) is implausible") }
        frameCount = Int(frames)
        duration = Double(bitPattern: get(32, UInt64.self))
        fftSize = Int(get(40, UInt32.self))
        hop = getF(44)
        minHz = getF(48)
        maxHz = getF(52)
        normalization = LevelNormalization(floorDB: getF(56), rangeDB: getF(60), attack: getF(64),
                                           release: getF(68), minReferenceDB: getF(72))
        sourceSampleRate = Int(get(80, UInt32.self))
        sourceChannels = Int(get(84, UInt16.self))
        try checkRanges(storedStride: Int(get(76, UInt32.self)))
        guard fileSize >= expectedFileSize else {
            throw VisFrameError.truncated(expectedBytes: expectedFileSize, actualBytes: fileSize)
        }
    }

    /// Every field a reader uses is checked against what a writer can produce: a header with a
    /// valid checksum can still come from a buggy or hostile writer, and a reader that trusts it
    /// divides by zero, overflows or allocates without bound.
    private func checkRanges(storedStride: Int) throws {
        func fail(_ why: String) -> VisFrameError { .corruptHeader(why) }
        guard VisualizerConfig.bandCountRange.contains(bandCount) else { throw fail("band count \(bandCount) is outside 1…4096") }
        guard storedStride == frameStride else {
            throw fail("frame stride \(storedStride) does not match \(bandCount) bands of \(encoding.name)")
        }
        guard fps.isFinite, fps > 0, Double(fps) <= VisualizerConfig.maximumFPS else { throw fail("fps \(fps) is outside (0, 1000]") }
        guard (8000...384_000).contains(analysisRate) else { throw fail("analysis rate \(analysisRate) Hz is outside 8000…384000") }
        guard fftSize >= 64, fftSize <= 65_536, fftSize & (fftSize - 1) == 0 else {
            throw fail("FFT size \(fftSize) is not a power of two in 64…65536")
        }
        guard hop.isFinite, hop > 0, abs(Double(hop) - Double(analysisRate) / Double(fps)) <= 1e-3 * Double(hop) else {
            throw fail("hop \(hop) does not equal analysis rate / fps")
        }
        guard minHz.isFinite, maxHz.isFinite, minHz > 0, maxHz > minHz, maxHz <= Float(analysisRate) / 2 else {
            throw fail("band range \(minHz)–\(maxHz) Hz is not within (0, \(analysisRate / 2)]")
        }
        let n = normalization
        guard [n.floorDB, n.rangeDB, n.attack, n.release, n.minReferenceDB].allSatisfy({ $0.isFinite }),
              n.rangeDB > 0, n.attack >= 0, n.release >= 0 else {
            throw fail("normalization parameters are not valid (range \(n.rangeDB) dB, attack \(n.attack) s, release \(n.release) s)")
        }
        guard sourceSampleRate > 0, sourceChannels > 0 else {
            throw fail("source \(sourceSampleRate) Hz × \(sourceChannels) channels is not a stream")
        }
        // The frame count is ceil(duration × fps): one that disagrees by more than a frame means
        // one of the two is damaged.
        guard duration.isFinite, duration >= 0,
              abs(Double(frameCount) - duration * Double(fps)) <= 1 else {
            throw fail("duration \(duration) s does not match \(frameCount) frames at \(fps) fps")
        }
    }
}

public enum VisFrameError: Error, Equatable, CustomStringConvertible {
    init(opening path: String, _ failure: RegularFile.Failure) {
        switch failure {
        case .system(let reason): self = .io(path: path, reason: reason)
        case .notRegular: self = .notARegularFile(path: path)
        }
    }

    case notAFrameFile
    case unsupportedVersion(UInt16)
    case corruptHeader(String)
    case truncated(expectedBytes: Int, actualBytes: Int)
    /// A stored value outside [0, 1] (NaN, infinity, negative, huge): the header checksum does not
    /// cover the payload, so every reader checks the values it serves.
    case corruptPayload(frame: Int, band: Int, value: Float)
    case notARegularFile(path: String)
    case io(path: String, reason: String)

    public var description: String {
        switch self {
        case .notAFrameFile: return "not a naviscan frame file (bad magic bytes)"
        case .unsupportedVersion(let v): return "frame file version \(v) is not supported by this reader (it reads version \(VisFrameHeader.currentVersion)); re-run the analysis or upgrade the reader"
        case .corruptHeader(let why): return "frame file header is corrupt: \(why); re-run the analysis"
        case .truncated(let expected, let actual): return "frame file is truncated: \(actual) bytes, the header needs \(expected); re-run the analysis"
        case .corruptPayload(let frame, let band, let value): return "frame file payload is corrupt: frame \(frame), band \(band) holds \(value), outside [0, 1]; re-run the analysis"
        case .notARegularFile(let path): return "\(path): not a regular file (a folder, FIFO or device); re-run the analysis"
        case .io(let path, let reason): return "\(path): \(reason)"
        }
    }
}
