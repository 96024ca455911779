import CMpg123
import Foundation

/// MP3 (and MP2) through libmpg123, gapless: the LAME encoder delay and padding are removed, so
/// sample 0 is the first sample a player plays and the length is the encoder's source length.
public final class Mpg123Decoder: AudioDecoder {
    public let info: AudioStreamInfo
    private let path: String
    private var handle: OpaquePointer?
    /// The buffered stream mpg123 reads through (see the shim); closed after the handle.
    private var stream: UnsafeMutableRawPointer?
    private var framesRead: Int64 = 0
    private var finished = false

    private static let libraryReady: Bool = { mpg123_init() == MPG123_OK.rawValue }()

    public init(path: String, layer: Int = 3) throws {
        self.path = path
        guard Self.libraryReady else {
            throw DecodeError.corrupt(path: path, reason: "libmpg123 failed to initialise")
        }
        var err: Int32 = 0
        guard let mh = mpg123_new(nil, &err) else {
            throw DecodeError.corrupt(path: path, reason: "libmpg123: \(String(cString: mpg123_plain_strerror(err)))")
        }
        handle = mh
        let flags = Int(MPG123_GAPLESS.rawValue | MPG123_QUIET.rawValue | MPG123_SKIP_ID3V2.rawValue)
        _ = naviscan_mpg123_param(mh, MPG123_ADD_FLAGS, flags, 0)
        // Float output at whatever rate/channels the stream has; narrowed after the first header.
        mpg123_format_none(mh)
        var rates: UnsafePointer<Int>?
        var rateCount = 0
        mpg123_rates(&rates, &rateCount)
        for i in 0..<rateCount {
            mpg123_format(mh, rates![i], Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue),
                          Int32(naviscan_mpg123_float32))
        }
        var opened: Int32 = 0
        stream = SystemPath.withCString(path) { naviscan_mpg123_open_buffered(mh, $0, &opened) }
        guard stream != nil else {
            let reason = opened == MPG123_ERR.rawValue && errno != 0 ? String(cString: strerror(errno)) : "libmpg123: " + String(cString: mpg123_strerror(mh))
            mpg123_delete(mh)
            handle = nil
            throw DecodeError.unreadable(path: path, reason: reason)
        }
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        guard mpg123_getformat(mh, &rate, &channels, &encoding) == MPG123_OK.rawValue,
              rate > 0, channels > 0 else {
            let reason = String(cString: mpg123_strerror(mh))
            mpg123_delete(mh)
            handle = nil
            naviscan_mpg123_close_stream(stream)
            throw DecodeError.corrupt(path: path, reason: "no decodable MPEG frames (libmpg123: \(reason))")
        }
        // Pin the output layout: a stream that flips between mono and stereo is converted by mpg123.
        mpg123_format_none(mh)
        mpg123_format(mh, rate, channels, Int32(naviscan_mpg123_float32))

        let length = naviscan_mpg123_length(mh)
        let exact = naviscan_mpg123_accurate(mh) != 0 && length > 0
        var info = AudioStreamInfo(sampleRate: rate, channels: Int(channels),
                                   frameCount: exact ? Int64(length) : nil,
                                   codec: layer == 2 ? "mp2" : "mp3", container: "mp3")
        if !exact && length > 0 { info.estimatedFrameCount = Int64(length) }
        self.info = info
    }

    deinit {
        if let handle {
            mpg123_close(handle)
            mpg123_delete(handle)
        }
        if let stream { naviscan_mpg123_close_stream(stream) }
    }

    public func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int {
        guard let mh = handle, !finished else { return 0 }
        let frameBytes = info.channels * MemoryLayout<Float>.size
        let capacity = maxFrames * frameBytes
        var filled = 0
        let raw = UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self)
        while filled < capacity {
            var done = 0
            let status = mpg123_read(mh, raw + filled, capacity - filled, &done)
            filled += done
            if status == MPG123_OK.rawValue || status == MPG123_NEW_FORMAT.rawValue { continue }
            if status == MPG123_DONE.rawValue {
                finished = true
                break
            }
            if status == MPG123_NEED_MORE.rawValue { finished = true; break }
            let reason = String(cString: mpg123_strerror(mh))
            throw DecodeError.corrupt(path: path, reason: "libmpg123: \(reason) after \(framesRead) frames")
        }
        let frames = filled / frameBytes
        framesRead += Int64(frames)
        if finished, let expected = info.frameCount {
            // Allow one MPEG frame of slack: the gapless trim is applied at frame granularity by some encoders.
            if framesRead + 1152 < expected {
                throw DecodeError.truncated(path: path, expectedFrames: expected, decodedFrames: framesRead)
            }
        }
        return frames
    }
}
