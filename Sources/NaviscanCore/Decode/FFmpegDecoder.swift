import CFFmpeg

/// Everything libsndfile and libmpg123 do not decode, through libavformat + libavcodec: AAC and ALAC
/// in MP4/M4A, WMA, Monkey's Audio, WavPack, Musepack, TTA, and whatever Matroska audio carries.
/// The default audio stream only; cover art and other streams are discarded by the demuxer.
///
/// Gapless MP4: libavformat drops the encoder priming itself (from the edit list, or from `iTunSMPB`
/// when there is none) but leaves the padding at the end, so the output is cut at the length the
/// edit list (the stream's duration) or `iTunSMPB` states.
public final class FFmpegDecoder: AudioDecoder {
    public let info: AudioStreamInfo
    private let path: String
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let streamIndex: Int32
    /// Frames after which the stream ends (the gapless length), when the container states it exactly.
    private let limit: Int64?
    /// The length the container states, exactly or as an estimate (ASF, Musepack, Matroska), and how
    /// far short of it the stream may end before it counts as cut off.
    private let announced: (frames: Int64, slack: Int64)?
    private var pendingOffset = 0
    private var pendingCount = 0
    private var delivered: Int64 = 0
    private var flushed = false
    private var finished = false
    private var readError: Int32 = 0

    public init(path: String) throws {
        FFmpegLibrary.silence()
        self.path = path
        var context: UnsafeMutablePointer<AVFormatContext>?
        // "file:" keeps a name with a colon from being read as a protocol; SystemPath gives the
        // name's own bytes (a name that is not UTF-8).
        let opened = SystemPath.withCString("file:" + path) { avformat_open_input(&context, $0, nil, nil) }
        guard opened == 0, let context else {
            throw FFmpegLibrary.openError(opened, path: path)
        }
        // Built in locals: a throwing init cannot reach its stored properties for clean-up.
        var format: UnsafeMutablePointer<AVFormatContext>? = context
        var codec: UnsafeMutablePointer<AVCodecContext>?
        var packet: UnsafeMutablePointer<AVPacket>?
        var frame: UnsafeMutablePointer<AVFrame>?
        var streamIndex: Int32 = -1
        var length: StreamLength
        do {
            let found = avformat_find_stream_info(context, nil)
            guard found >= 0 else {
                throw DecodeError.corrupt(path: path, reason: "libavformat: \(FFmpegLibrary.message(found))")
            }
            streamIndex = try Self.defaultAudioStream(context, path: path)
            let stream = context.pointee.streams[Int(streamIndex)]!
            let parameters = stream.pointee.codecpar!
            for i in 0..<Int(context.pointee.nb_streams) where i != Int(streamIndex) {
                context.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
            }
            let codecName = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            if parameters.pointee.codec_tag == Self.fourCC("drms") || parameters.pointee.codec_tag == Self.fourCC("enca") {
                throw DecodeError.unsupportedCodec(path: path, codec: "DRM-protected (encrypted) audio")
            }
            guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else {
                throw DecodeError.unsupportedCodec(path: path, codec: codecName == "none" ? "an unknown codec" : codecName)
            }
            guard let codecContext = avcodec_alloc_context3(decoder) else {
                throw DecodeError.corrupt(path: path, reason: "libavcodec could not allocate a decoder")
            }
            codec = codecContext
            var status = avcodec_parameters_to_context(codecContext, parameters)
            // One thread per decoder: the scan already runs one track per core.
            codecContext.pointee.thread_count = 1
            if status >= 0 { status = avcodec_open2(codecContext, decoder, nil) }
            guard status >= 0 else {
                throw DecodeError.corrupt(path: path, reason: "libavcodec cannot open the \(codecName) decoder: \(FFmpegLibrary.message(status))")
            }
            let rate = Int(codecContext.pointee.sample_rate)
            let channels = Int(codecContext.pointee.ch_layout.nb_channels)
            guard rate > 0, rate <= 768_000, channels > 0, channels <= 64 else {
                throw DecodeError.unsupportedStream(path: path, reason: "the stream declares \(channels) channels at \(rate) Hz")
            }
            let containerName = Self.containerName(context)
            length = Self.length(context, stream: stream, container: containerName, sampleRate: rate)
            packet = av_packet_alloc()
            frame = av_frame_alloc()
            guard packet != nil, frame != nil else {
                throw DecodeError.corrupt(path: path, reason: "libavcodec could not allocate a frame")
            }
            info = AudioStreamInfo(sampleRate: rate, channels: channels, frameCount: length.exact,
                                   codec: codecName, container: containerName,
                                   channelLayout: Self.channelLayout(&codecContext.pointee.ch_layout))
        } catch {
            Self.release(format: &format, codec: &codec, packet: &packet, frame: &frame)
            throw error
        }
        self.format = format
        self.codec = codec
        self.packet = packet
        self.frame = frame
        self.streamIndex = streamIndex
        self.limit = length.exact
        let halfSecond = Int64(info.sampleRate / 2)
        announced = length.exact.map { ($0, 0) } ?? length.estimate.map { ($0, halfSecond) }
    }

    deinit { Self.release(format: &format, codec: &codec, packet: &packet, frame: &frame) }

    private static func release(format: inout UnsafeMutablePointer<AVFormatContext>?,
                                codec: inout UnsafeMutablePointer<AVCodecContext>?,
                                packet: inout UnsafeMutablePointer<AVPacket>?,
                                frame: inout UnsafeMutablePointer<AVFrame>?) {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
    }

    public func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int {
        var written = 0
        while written < maxFrames {
            if pendingOffset < pendingCount {
                var n = min(pendingCount - pendingOffset, maxFrames - written)
                if let limit { n = Int(min(Int64(n), limit - delivered)) }
                SampleInterleaver.convert(frame!, from: pendingOffset, count: n, channels: info.channels,
                                          into: buffer + written * info.channels)
                pendingOffset += n
                written += n
                delivered += Int64(n)
                if let limit, delivered >= limit {
                    finished = true
                    pendingCount = 0
                    break
                }
                continue
            }
            if finished { break }
            try receiveFrame()
        }
        if written == 0 { try checkEnd() }
        return written
    }

    /// Fills `frame` with the next decoded frame, feeding packets as the decoder asks; sets
    /// `finished` at the end of the stream.
    private func receiveFrame() throws {
        let codec = codec!, frame = frame!, packet = packet!
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                let channels = Int(frame.pointee.ch_layout.nb_channels)
                guard channels == info.channels, Int(frame.pointee.sample_rate) == info.sampleRate else {
                    throw DecodeError.unsupportedStream(path: path, reason: "the stream changes from \(info.channels) channels at \(info.sampleRate) Hz to \(channels) at \(frame.pointee.sample_rate) Hz part-way; convert it to FLAC to analyse it")
                }
                guard SampleInterleaver.supports(frame.pointee.format) else {
                    throw DecodeError.unsupportedStream(path: path, reason: "the decoder produces an unexpected sample format (\(frame.pointee.format))")
                }
                pendingOffset = 0
                pendingCount = Int(frame.pointee.nb_samples)
                return
            }
            if received == naviscan_averror_eof {
                finished = true
                return
            }
            if received != naviscan_averror_eagain {
                throw corrupt(received)
            }
            if flushed {
                finished = true
                return
            }
            let read = av_read_frame(format, packet)
            if read < 0 {
                // End of file, or a read that failed (a cut-off file): drain what the decoder holds.
                if read != naviscan_averror_eof { readError = read }
                flushed = true
                let sent = avcodec_send_packet(codec, nil)
                if sent < 0 && sent != naviscan_averror_eof { throw corrupt(sent) }
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let sent = avcodec_send_packet(codec, packet)
            if sent < 0 && sent != naviscan_averror_eagain {
                // A packet cut off by the end of the file: the file is short, not damaged inside.
                if let announced, packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 {
                    throw DecodeError.truncated(path: path, expectedFrames: announced.frames, decodedFrames: delivered)
                }
                throw corrupt(sent)
            }
        }
    }

    /// At the end of the stream: a file that promised more frames is truncated; a read error that did
    /// not cut the length short is still damage.
    private func checkEnd() throws {
        if let announced, delivered + announced.slack < announced.frames {
            throw DecodeError.truncated(path: path, expectedFrames: announced.frames, decodedFrames: delivered)
        }
        if readError != 0 {
            let error = readError
            readError = 0
            throw corrupt(error)
        }
        if delivered == 0 {
            throw DecodeError.corrupt(path: path, reason: "no \(info.codec) audio could be decoded")
        }
    }

    private func corrupt(_ code: Int32) -> DecodeError {
        .corrupt(path: path, reason: "\(info.codec) (libavcodec): \(FFmpegLibrary.message(code)) after \(delivered) frames")
    }

    /// The stream flagged as default among the audio streams, else libavformat's pick of the best.
    private static func defaultAudioStream(_ context: UnsafeMutablePointer<AVFormatContext>, path: String) throws -> Int32 {
        for i in 0..<Int(context.pointee.nb_streams) {
            let stream = context.pointee.streams[i]!.pointee
            if stream.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO,
               stream.disposition & AV_DISPOSITION_DEFAULT != 0,
               stream.disposition & AV_DISPOSITION_ATTACHED_PIC == 0 {
                return Int32(i)
            }
        }
        let best = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        if best >= 0 { return best }
        if best == naviscan_averror_stream_not_found {
            throw DecodeError.unsupportedStream(path: path, reason: "the file holds no audio stream")
        }
        throw DecodeError.corrupt(path: path, reason: "libavformat: \(FFmpegLibrary.message(best))")
    }

    struct StreamLength {
        /// The length the container promises exactly; the stream is cut there (the gapless end).
        var exact: Int64?
        /// A length the container only estimates.
        var estimate: Int64?
    }

    /// MP4: `iTunSMPB`'s sample count, else the stream's duration (the edit list's, when there is
    /// one), both exact. WavPack, Monkey's Audio and TTA: the header's sample count, exact. ASF,
    /// Musepack and Matroska state a duration that is close but not sample-exact.
    private static func length(_ context: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>,
                               container: String, sampleRate: Int) -> StreamLength {
        let duration = stream.pointee.duration
        let frames: Int64? = duration > 0
            ? av_rescale_q(duration, stream.pointee.time_base, AVRational(num: 1, den: Int32(sampleRate))) : nil
        switch container {
        case "mp4":
            if let smpb = FFmpegLibrary.metadata(context.pointee.metadata, key: "iTunSMPB"),
               let gapless = ITunesGaplessInfo(smpb) {
                return StreamLength(exact: gapless.frames)
            }
            return StreamLength(exact: frames)
        case "wavpack", "ape", "tta":
            return StreamLength(exact: frames)
        case "asf", "mpc", "mka":
            // Matroska states its duration for the whole segment, not per stream.
            let segment = context.pointee.duration
            let fromHeader = context.pointee.duration_estimation_method != AVFMT_DURATION_FROM_BITRATE
            return StreamLength(estimate: frames ?? (segment > 0 && fromHeader
                ? av_rescale(segment, Int64(sampleRate), Int64(AV_TIME_BASE)) : nil))
        default:
            return StreamLength()
        }
    }

    private static func containerName(_ context: UnsafeMutablePointer<AVFormatContext>) -> String {
        let name = String(cString: context.pointee.iformat.pointee.name)
        switch name.split(separator: ",").first.map(String.init) ?? name {
        case "mov": return "mp4"
        case "asf": return "asf"
        case "ape": return "ape"
        case "wv": return "wavpack"
        case "mpc", "mpc8": return "mpc"
        case "tta": return "tta"
        case "matroska": return "mka"
        case let other: return other
        }
    }

    /// The file's channel order as speaker positions; an unordered layout gets the default order.
    private static func channelLayout(_ layout: UnsafeMutablePointer<AVChannelLayout>) -> [ChannelPosition] {
        let count = Int(layout.pointee.nb_channels)
        guard layout.pointee.order == AV_CHANNEL_ORDER_NATIVE || layout.pointee.order == AV_CHANNEL_ORDER_CUSTOM else {
            return ChannelPosition.defaultLayout(channels: count)
        }
        if count == 1 { return [.mono] }
        return (0..<count).map { i in
            switch av_channel_layout_channel_from_index(layout, UInt32(i)) {
            case AV_CHAN_FRONT_LEFT: return .left
            case AV_CHAN_FRONT_RIGHT: return .right
            case AV_CHAN_FRONT_CENTER: return .center
            case AV_CHAN_LOW_FREQUENCY, AV_CHAN_LOW_FREQUENCY_2: return .lfe
            case AV_CHAN_SIDE_LEFT: return .leftSurround
            case AV_CHAN_SIDE_RIGHT: return .rightSurround
            case AV_CHAN_BACK_LEFT: return .leftBack
            case AV_CHAN_BACK_RIGHT: return .rightBack
            default: return .other
            }
        }
    }

    private static func fourCC(_ s: StaticString) -> UInt32 {
        let p = s.utf8Start
        return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }
}

/// Apple's gapless record: " 00000000 PRIMING PADDING SAMPLES ..." in hex. libavformat applies the
/// priming itself; the sample count is where playback ends.
struct ITunesGaplessInfo: Equatable {
    let frames: Int64

    init?(_ text: String) {
        let fields = text.split(separator: " ").compactMap { Int64($0, radix: 16) }
        guard fields.count >= 4, fields[3] > 0 else { return nil }
        frames = fields[3]
    }
}

/// Process-wide libav* settings and helpers shared by the decoder and the tag reader.
enum FFmpegLibrary {
    /// libav* log to stderr by default; naviscan reports errors itself, per file.
    private static let quiet: Void = { av_log_set_level(AV_LOG_QUIET) }()

    static func silence() { _ = quiet }

    static func message(_ code: Int32) -> String {
        var text = [CChar](repeating: 0, count: 128)
        av_strerror(code, &text, text.count)
        return String(cString: text)
    }

    static func openError(_ code: Int32, path: String) -> DecodeError {
        if code == naviscan_averror_enoent || code == naviscan_averror_eacces {
            return .unreadable(path: path, reason: message(code))
        }
        return .corrupt(path: path, reason: "libavformat cannot read the container: \(message(code))")
    }

    static func metadata(_ dictionary: OpaquePointer?, key: String) -> String? {
        guard let dictionary, let entry = av_dict_get(dictionary, key, nil, 0) else { return nil }
        return String(cString: entry.pointee.value)
    }
}

/// Interleaved Float32 from whatever sample format the decoder produces, planar or packed.
enum SampleInterleaver {
    static func supports(_ format: Int32) -> Bool {
        switch AVSampleFormat(format) {
        case AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S16P,
             AV_SAMPLE_FMT_S32, AV_SAMPLE_FMT_S32P, AV_SAMPLE_FMT_DBL, AV_SAMPLE_FMT_DBLP,
             AV_SAMPLE_FMT_U8, AV_SAMPLE_FMT_U8P:
            return true
        default:
            return false
        }
    }

    /// Copies frames `start ..< start + count` of `frame` into `out`, interleaved.
    static func convert(_ frame: UnsafeMutablePointer<AVFrame>, from start: Int, count: Int, channels: Int,
                        into out: UnsafeMutablePointer<Float>) {
        let planes = frame.pointee.extended_data!
        switch AVSampleFormat(frame.pointee.format) {
        case AV_SAMPLE_FMT_FLTP: planar(planes, Float.self, start, count, channels, out) { $0 }
        case AV_SAMPLE_FMT_FLT: packed(planes[0]!, Float.self, start, count, channels, out) { $0 }
        case AV_SAMPLE_FMT_S16P: planar(planes, Int16.self, start, count, channels, out) { Float($0) * (1 / 32768) }
        case AV_SAMPLE_FMT_S16: packed(planes[0]!, Int16.self, start, count, channels, out) { Float($0) * (1 / 32768) }
        case AV_SAMPLE_FMT_S32P: planar(planes, Int32.self, start, count, channels, out) { Float($0) * (1 / 2_147_483_648) }
        case AV_SAMPLE_FMT_S32: packed(planes[0]!, Int32.self, start, count, channels, out) { Float($0) * (1 / 2_147_483_648) }
        case AV_SAMPLE_FMT_DBLP: planar(planes, Double.self, start, count, channels, out) { Float($0) }
        case AV_SAMPLE_FMT_DBL: packed(planes[0]!, Double.self, start, count, channels, out) { Float($0) }
        case AV_SAMPLE_FMT_U8P: planar(planes, UInt8.self, start, count, channels, out) { (Float($0) - 128) * (1 / 128) }
        default: packed(planes[0]!, UInt8.self, start, count, channels, out) { (Float($0) - 128) * (1 / 128) }
        }
    }

    @inline(__always)
    private static func planar<T>(_ planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, _: T.Type,
                                  _ start: Int, _ count: Int, _ channels: Int, _ out: UnsafeMutablePointer<Float>,
                                  _ scale: (T) -> Float) {
        for c in 0..<channels {
            let plane = UnsafeRawPointer(planes[c]!).assumingMemoryBound(to: T.self) + start
            var o = out + c
            for i in 0..<count {
                o.pointee = scale(plane[i])
                o += channels
            }
        }
    }

    @inline(__always)
    private static func packed<T>(_ data: UnsafeMutablePointer<UInt8>, _: T.Type,
                                  _ start: Int, _ count: Int, _ channels: Int, _ out: UnsafeMutablePointer<Float>,
                                  _ scale: (T) -> Float) {
        let samples = UnsafeRawPointer(data).assumingMemoryBound(to: T.self) + start * channels
        for i in 0..<count * channels { out[i] = scale(samples[i]) }
    }
}
