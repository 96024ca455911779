/// The one place decoded audio enters the analysis: wraps any backend and checks each block against
/// `SampleRange` before a stage sees it, so no backend (libsndfile, libmpg123, libavcodec, one added
/// later) can hand a NaN or a 1e30 to a stage or a writer. `AudioDecoderFactory` gates every
/// decoder it opens, after `StreamLimits` has checked the header.
public final class SampleGate: AudioDecoder {
    public let info: AudioStreamInfo
    private let decoder: AudioDecoder
    private let path: String
    private var samplesRead: Int64 = 0

    public init(_ decoder: AudioDecoder, info: AudioStreamInfo, path: String) {
        self.decoder = decoder
        self.info = info
        self.path = path
    }

    public func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int {
        let n = try decoder.read(into: buffer, maxFrames: maxFrames)
        guard n > 0 else { return 0 }
        let count = n * info.channels
        try SampleRange.check(buffer, count: count, firstSample: samplesRead, channels: info.channels,
                              sampleRate: info.sampleRate, path: path)
        samplesRead += Int64(count)
        return n
    }
}
