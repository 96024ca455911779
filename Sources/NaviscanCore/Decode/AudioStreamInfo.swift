/// What a decoder knows about a stream once it is open.
public struct AudioStreamInfo: Sendable, Equatable {
    /// Native sample rate in Hz.
    public var sampleRate: Int
    /// Channels per frame, interleaved in the decoder's output.
    public var channels: Int
    /// Exact number of sample frames, when the container states it reliably
    /// (WAV, AIFF, FLAC with STREAMINFO, MP3 with a LAME/Xing header); nil when only an estimate exists.
    public var frameCount: Int64?
    /// The headers' length when they promise nothing exact (MP3 without a Xing/LAME header, from
    /// the bitrate; Ogg, from the last granule): good enough for progress, never for checks.
    public var estimatedFrameCount: Int64?
    /// Codec name: "mp3", "mp2", "flac", "vorbis", "opus", "pcm_s16", "pcm_s24", "pcm_s32", "pcm_f32", ...
    public var codec: String
    /// Container: "mp3", "flac", "wav", "aiff", "ogg".
    public var container: String
    /// Speaker position of each channel, in stream order.
    public var channelLayout: [ChannelPosition]

    public init(sampleRate: Int, channels: Int, frameCount: Int64?, codec: String, container: String,
                channelLayout: [ChannelPosition]? = nil) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.frameCount = frameCount
        self.codec = codec
        self.container = container
        self.channelLayout = channelLayout ?? ChannelPosition.defaultLayout(channels: channels)
    }

    /// Duration in seconds from `frameCount`, when known.
    public var duration: Double? {
        frameCount.map { Double($0) / Double(sampleRate) }
    }

    /// Duration in seconds, exact or estimated from the headers.
    public var estimatedDuration: Double? {
        (frameCount ?? estimatedFrameCount).map { Double($0) / Double(sampleRate) }
    }
}

/// Speaker positions, as far as loudness weighting (BS.1770) and downmixing care.
public enum ChannelPosition: String, Sendable, Equatable {
    case mono, left, right, center, lfe, leftSurround, rightSurround, leftBack, rightBack, other

    /// The WAV/FLAC/Vorbis default order for 1–8 channels (WAVE_FORMAT_EXTENSIBLE default masks).
    public static func defaultLayout(channels: Int) -> [ChannelPosition] {
        switch channels {
        case 1: return [.mono]
        case 2: return [.left, .right]
        case 3: return [.left, .right, .center]
        case 4: return [.left, .right, .leftSurround, .rightSurround]
        case 5: return [.left, .right, .center, .leftSurround, .rightSurround]
        case 6: return [.left, .right, .center, .lfe, .leftSurround, .rightSurround]
        case 8: return [.left, .right, .center, .lfe, .leftBack, .rightBack, .leftSurround, .rightSurround]
        default: return Array(repeating: .other, count: max(channels, 0))
        }
    }
}
