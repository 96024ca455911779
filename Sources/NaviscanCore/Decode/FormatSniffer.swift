#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a file's first bytes say it is. Backends are chosen from this, never from the extension.
public enum SniffedFormat: Equatable, Sendable {
    case mpegAudio(layer: Int)   // MP3 (layer 3) or MP2 (layer 2)
    case flac
    case wav
    case aiff
    case ogg
    /// Decoded through libavformat/libavcodec: MP4/M4A, ASF (WMA), Monkey's Audio, WavPack, Musepack,
    /// TTA, Matroska. The name is for messages only; libavformat identifies the container itself.
    case ffmpeg(String)
    /// A format recognised well enough to name, but not decoded (DSD, AMR, raw ADTS AAC).
    case unsupported(String)
    case unknown
}

/// Reads the head of a file and identifies its container by magic bytes.
public enum FormatSniffer {
    /// How far past an ID3v2 tag (or junk) to look for MPEG frame sync.
    static let syncSearchBytes = 8192

    public static func sniff(path: String) throws -> SniffedFormat {
        try sniffWithSize(path: path).format
    }

    /// The format and the file's size in bytes (what `StreamLimits` weighs a header's length against).
    static func sniffWithSize(path: String) throws -> (format: SniffedFormat, size: Int) {
        let fd: Int32, size: Int
        do { (fd, size) = try RegularFile.open(path).descriptorAndSize } catch {
            switch error {
            case .system(let reason): throw DecodeError.unreadable(path: path, reason: reason)
            case .notRegular(let kind): throw DecodeError.unreadable(path: path, reason: "it is \(kind), not a regular file")
            }
        }
        defer { close(fd) }
        if size == 0 { throw DecodeError.emptyFile(path: path) }

        var head = try readBytes(fd: fd, offset: 0, count: 16, path: path)
        // An ID3v2 tag may precede MP3 frames (and, rarely, FLAC). Its size is a 28-bit syncsafe integer.
        var tagEnd = 0
        if head.count >= 10, head[0] == 0x49, head[1] == 0x44, head[2] == 0x33 {
            let size = (Int(head[6] & 0x7F) << 21) | (Int(head[7] & 0x7F) << 14)
                | (Int(head[8] & 0x7F) << 7) | Int(head[9] & 0x7F)
            let footer = (head[5] & 0x10) != 0 ? 10 : 0
            tagEnd = 10 + size + footer
            head = try readBytes(fd: fd, offset: tagEnd, count: 16, path: path)
        }
        if let format = identifyMagic(head) { return (format, size) }

        let window = try readBytes(fd: fd, offset: tagEnd, count: syncSearchBytes, path: path)
        if let layer = MPEGFrameHeader.findStream(in: window) { return (.mpegAudio(layer: layer), size) }
        return (.unknown, size)
    }

    static func identifyMagic(_ b: [UInt8]) -> SniffedFormat? {
        func ascii(_ s: String, at offset: Int) -> Bool {
            let u = Array(s.utf8)
            guard b.count >= offset + u.count else { return false }
            return Array(b[offset..<offset + u.count]) == u
        }
        if ascii("fLaC", at: 0) { return .flac }
        if ascii("OggS", at: 0) { return .ogg }
        if (ascii("RIFF", at: 0) || ascii("RF64", at: 0) || ascii("BW64", at: 0)) && ascii("WAVE", at: 8) { return .wav }
        if ascii("FORM", at: 0) && (ascii("AIFF", at: 8) || ascii("AIFC", at: 8)) { return .aiff }
        if ascii("ftyp", at: 4) { return .ffmpeg("MP4/M4A") }
        // The ASF header object's GUID, 75B22630-668E-11CF-A6D9-00AA0062CE6C, as stored.
        if b.count >= 16, b[0..<16].elementsEqual([0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11,
                                                   0xA6, 0xD9, 0x00, 0xAA, 0x00, 0x62, 0xCE, 0x6C]) {
            return .ffmpeg("WMA/ASF")
        }
        if ascii("MAC ", at: 0) { return .ffmpeg("Monkey's Audio") }
        if ascii("wvpk", at: 0) { return .ffmpeg("WavPack") }
        if ascii("MPCK", at: 0) || ascii("MP+", at: 0) { return .ffmpeg("Musepack") }
        if ascii("TTA1", at: 0) { return .ffmpeg("TTA") }
        if b.count >= 4, b[0] == 0x1A, b[1] == 0x45, b[2] == 0xDF, b[3] == 0xA3 { return .ffmpeg("Matroska") }
        if ascii("#!AMR", at: 0) { return .unsupported("AMR") }
        if ascii("DSD ", at: 0) || ascii("FRM8", at: 0) { return .unsupported("DSD (DSF/DFF)") }
        if b.count >= 2, b[0] == 0xFF, (b[1] & 0xF6) == 0xF0 { return .unsupported("raw AAC (ADTS)") }
        return nil
    }

    private static func readBytes(fd: Int32, offset: Int, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard n >= 0 else { throw DecodeError.unreadable(path: path, reason: String(cString: strerror(errno))) }
        bytes.removeLast(count - n)
        return bytes
    }
}

/// Just enough of an MPEG-1/2/2.5 audio frame header to confirm a stream: layer, rate, frame length.
struct MPEGFrameHeader {
    let layer: Int
    let sampleRate: Int
    let frameLength: Int

    private static let bitratesV1L3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    private static let bitratesV1L2 = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
    private static let bitratesV2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

    /// Parses 4 bytes at `i`; nil unless they form a valid layer II/III header with a fixed bitrate.
    init?(_ b: [UInt8], at i: Int) {
        guard i + 4 <= b.count, b[i] == 0xFF, (b[i + 1] & 0xE0) == 0xE0 else { return nil }
        let version = Int((b[i + 1] >> 3) & 3)      // 0: 2.5, 1: reserved, 2: 2, 3: 1
        let layerBits = Int((b[i + 1] >> 1) & 3)    // 1: III, 2: II, 3: I
        let bitrateIndex = Int(b[i + 2] >> 4)
        let rateIndex = Int((b[i + 2] >> 2) & 3)
        let padding = Int((b[i + 2] >> 1) & 1)
        guard version != 1, layerBits == 1 || layerBits == 2,
              bitrateIndex != 0, bitrateIndex != 15, rateIndex != 3 else { return nil }
        let layer = layerBits == 1 ? 3 : 2
        let baseRates = [44100, 48000, 32000]
        let rate = baseRates[rateIndex] >> (version == 3 ? 0 : (version == 2 ? 1 : 2))
        let kbps: Int
        if version == 3 { kbps = (layer == 3 ? Self.bitratesV1L3 : Self.bitratesV1L2)[bitrateIndex] }
        else { kbps = Self.bitratesV2[bitrateIndex] }
        let samplesPerFrame = (layer == 3 && version != 3) ? 576 : 1152
        self.layer = layer
        self.sampleRate = rate
        self.frameLength = samplesPerFrame / 8 * kbps * 1000 / rate + padding
    }

    /// The layer of the first position in `bytes` where two consecutive valid frames agree, if any.
    /// Two frames make random data an unlikely match (about 1 in 10^7 per position).
    static func findStream(in bytes: [UInt8]) -> Int? {
        var i = 0
        while i + 4 <= bytes.count {
            if let first = MPEGFrameHeader(bytes, at: i), first.frameLength >= 24 {
                let next = i + first.frameLength
                if let second = MPEGFrameHeader(bytes, at: next),
                   second.layer == first.layer, second.sampleRate == first.sampleRate {
                    return first.layer
                }
            }
            i += 1
        }
        return nil
    }
}
