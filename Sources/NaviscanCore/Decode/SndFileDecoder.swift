import CSndFile

/// FLAC, WAV, AIFF, Ogg Vorbis and Opus through libsndfile; integer formats arrive scaled to [-1, 1],
/// floating-point ones as stored (`SampleGate` checks them).
public final class SndFileDecoder: AudioDecoder {
    public let info: AudioStreamInfo
    private let path: String
    private var file: OpaquePointer?
    private var framesRead: Int64 = 0

    public init(path: String) throws {
        self.path = path
        var sfInfo = SF_INFO()
        guard let handle = SystemPath.withCString(path, { sf_open($0, Int32(SFM_READ), &sfInfo) }) else {
            let reason = String(cString: sf_strerror(nil))
            throw DecodeError.corrupt(path: path, reason: "libsndfile: \(reason)")
        }
        file = handle
        guard sfInfo.channels > 0, sfInfo.samplerate > 0 else {
            sf_close(handle)
            throw DecodeError.unsupportedStream(path: path, reason: "the stream declares \(sfInfo.channels) channels at \(sfInfo.samplerate) Hz")
        }
        let major = Int(sfInfo.format) & Int(SF_FORMAT_TYPEMASK)
        let sub = Int(sfInfo.format) & Int(SF_FORMAT_SUBMASK)
        let container = Self.containerName(major)
        // FLAC's subformat only gives the bit depth; the codec is FLAC itself.
        let codec = major == Int(SF_FORMAT_FLAC) ? "flac" : Self.codecName(sub)
        // Vorbis/Opus lengths come from the last granule position: good, but not a header promise.
        let exact = codec != "vorbis" && codec != "opus"
        var info = AudioStreamInfo(
            sampleRate: Int(sfInfo.samplerate), channels: Int(sfInfo.channels),
            frameCount: exact && sfInfo.frames >= 0 ? Int64(sfInfo.frames) : nil,
            codec: codec, container: container,
            channelLayout: Self.channelLayout(handle, channels: Int(sfInfo.channels)))
        if !exact && sfInfo.frames > 0 { info.estimatedFrameCount = Int64(sfInfo.frames) }
        self.info = info
    }

    deinit { if let file { sf_close(file) } }

    public func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int {
        guard let file else { return 0 }
        let n = sf_readf_float(file, buffer, sf_count_t(maxFrames))
        if n > 0 {
            framesRead += Int64(n)
            return Int(n)
        }
        let status = sf_error(file)
        if status != Int32(SF_ERR_NO_ERROR) {
            throw DecodeError.corrupt(path: path, reason: "libsndfile: \(String(cString: sf_strerror(file)))")
        }
        if let expected = info.frameCount, framesRead < expected {
            throw DecodeError.truncated(path: path, expectedFrames: expected, decodedFrames: framesRead)
        }
        return 0
    }

    private static func containerName(_ major: Int) -> String {
        switch major {
        case Int(SF_FORMAT_WAV), Int(SF_FORMAT_WAVEX), Int(SF_FORMAT_RF64): return "wav"
        case Int(SF_FORMAT_AIFF): return "aiff"
        case Int(SF_FORMAT_FLAC): return "flac"
        case Int(SF_FORMAT_OGG): return "ogg"
        default: return "other"
        }
    }

    private static func codecName(_ sub: Int) -> String {
        switch sub {
        case Int(SF_FORMAT_PCM_S8), Int(SF_FORMAT_PCM_U8): return "pcm_8"
        case Int(SF_FORMAT_PCM_16): return "pcm_s16"
        case Int(SF_FORMAT_PCM_24): return "pcm_s24"
        case Int(SF_FORMAT_PCM_32): return "pcm_s32"
        case Int(SF_FORMAT_FLOAT): return "pcm_f32"
        case Int(SF_FORMAT_DOUBLE): return "pcm_f64"
        case Int(SF_FORMAT_VORBIS): return "vorbis"
        case Int(SF_FORMAT_OPUS): return "opus"
        case Int(SF_FORMAT_ULAW): return "ulaw"
        case Int(SF_FORMAT_ALAW): return "alaw"
        default: return "pcm"
        }
    }

    /// The file's own channel map where it has one (WAVE_FORMAT_EXTENSIBLE, CAF...), else the default order.
    private static func channelLayout(_ handle: OpaquePointer, channels: Int) -> [ChannelPosition] {
        var map = [Int32](repeating: 0, count: channels)
        let ok = map.withUnsafeMutableBytes {
            sf_command(handle, Int32(SFC_GET_CHANNEL_MAP_INFO), $0.baseAddress, Int32($0.count))
        }
        guard ok == SF_TRUE else { return ChannelPosition.defaultLayout(channels: channels) }
        return map.map { code -> ChannelPosition in
            switch Int(code) {
            case Int(SF_CHANNEL_MAP_MONO): return .mono
            case Int(SF_CHANNEL_MAP_LEFT), Int(SF_CHANNEL_MAP_FRONT_LEFT): return .left
            case Int(SF_CHANNEL_MAP_RIGHT), Int(SF_CHANNEL_MAP_FRONT_RIGHT): return .right
            case Int(SF_CHANNEL_MAP_CENTER), Int(SF_CHANNEL_MAP_FRONT_CENTER): return .center
            case Int(SF_CHANNEL_MAP_LFE): return .lfe
            case Int(SF_CHANNEL_MAP_SIDE_LEFT), Int(SF_CHANNEL_MAP_REAR_LEFT): return .leftSurround
            case Int(SF_CHANNEL_MAP_SIDE_RIGHT), Int(SF_CHANNEL_MAP_REAR_RIGHT): return .rightSurround
            default: return .other
            }
        }
    }
}
