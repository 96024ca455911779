/// A streaming decoder: fixed-size blocks of interleaved Float32 frames, memory independent of track length.
///
/// Backends live in their own files (`Mpg123Decoder`, `SndFileDecoder`); `AudioDecoderFactory`
/// picks one from the file's content.
public protocol AudioDecoder: AnyObject {
    var info: AudioStreamInfo { get }

    /// Decodes up to `maxFrames` frames into `buffer` (room for `maxFrames * info.channels` samples).
    /// Returns the number of frames written; 0 means the stream has ended.
    func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws -> Int
}

/// A block of interleaved frames as the analysers see it. Borrowed: valid only during `process`.
public struct AudioBlock {
    public let samples: UnsafePointer<Float>
    public let frameCount: Int
    public let channels: Int

    public init(samples: UnsafePointer<Float>, frameCount: Int, channels: Int) {
        self.samples = samples
        self.frameCount = frameCount
        self.channels = channels
    }
}
