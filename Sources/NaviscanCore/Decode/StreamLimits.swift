/// What a stream's header may claim before anything is allocated for it. A header is read from the
/// file and can say anything: a rate of 1 Hz turns a 700 kB file into 97 hours of audio to
/// resample, a length of 2^40 frames into a progress bar that never moves. Every backend's header
/// passes through `check` when the file is opened, so a lie is refused in milliseconds with a
/// message that names the file.
public enum StreamLimits {
    /// Native sample rates analysed. Below 8 kHz loudness is measured on a resampled copy (tested
    /// down to 2 kHz); 1 kHz leaves room for legacy files while refusing rates that only a damaged
    /// header states. 768 kHz is the highest rate any PCM or DSD-to-PCM format uses.
    public static let sampleRates = 1_000...768_000
    /// Channels per frame: up to fourth-order Ambisonics (25) and 22.2 (24) with room to spare.
    public static let channels = 1...32
    /// The most sample frames one byte of a file can carry in any codec naviscan decodes. The
    /// densest real case is digital silence in FLAC or WavPack (a block of 65,536 constant frames in
    /// about ten bytes, some 6,000 frames a byte); a stated length 16 times beyond that is a lie.
    public static let maxFramesPerByte: Int64 = 100_000

    /// Refuses a stream whose rate or channel count is outside what is analysed, or whose exact
    /// length could not fit in `fileSize` bytes. Returns the stream info to use: an implausible
    /// estimated length (only ever used for progress) is dropped rather than refused.
    public static func check(_ info: AudioStreamInfo, fileSize: Int, path: String) throws -> AudioStreamInfo {
        guard sampleRates.contains(info.sampleRate) else {
            throw DecodeError.unsupportedStream(path: path, reason: "the header states a sample rate of \(info.sampleRate) Hz; naviscan analyses \(sampleRates.lowerBound)–\(sampleRates.upperBound) Hz, so the header is damaged or the format is not audio; re-copy or re-encode the file")
        }
        guard channels.contains(info.channels) else {
            throw DecodeError.unsupportedStream(path: path, reason: "the header states \(info.channels) channels; naviscan analyses \(channels.lowerBound)–\(channels.upperBound), so the header is damaged; re-copy or re-encode the file")
        }
        let most = Int64(max(fileSize, 1)).multipliedReportingOverflow(by: maxFramesPerByte)
        let limit = most.overflow ? Int64.max : most.partialValue
        var checked = info
        if let frames = info.frameCount, frames < 0 || frames > limit {
            throw DecodeError.unsupportedStream(path: path, reason: "the header states \(frames) sample frames, which \(fileSize) bytes cannot hold; the header is damaged; re-copy or re-encode the file")
        }
        if let estimate = info.estimatedFrameCount, estimate < 0 || estimate > limit {
            checked.estimatedFrameCount = nil
        }
        return checked
    }
}
