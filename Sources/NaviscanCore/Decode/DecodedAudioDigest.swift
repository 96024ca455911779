/// Every decoded sample of a file, reduced to a digest: two files with equal digests play the same
/// audio (same rate, channels, frame count, and bit for bit the same samples). `naviscan tag` uses
/// it to prove a tagged copy's audio identical to the original's before the copy replaces anything.
public struct DecodedAudioDigest: Equatable, Sendable, CustomStringConvertible {
    public let sampleRate: Int
    public let channels: Int
    public let frames: Int64
    /// FNV-1a over the samples' bit patterns, two at a time.
    public let hash: UInt64

    public var description: String { "\(frames) frames at \(sampleRate) Hz, \(channels) channels, digest \(String(hash, radix: 16))" }

    public static func of(path: String) throws -> DecodedAudioDigest {
        let decoder = try AudioDecoderFactory.open(path: path)
        let channels = decoder.info.channels
        let blockFrames = 8192
        // An even sample count per block, so every block is whole 64-bit words.
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames * channels + 1)
        defer { buffer.deallocate() }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var frames: Int64 = 0
        while true {
            let n = try decoder.read(into: buffer, maxFrames: blockFrames)
            if n == 0 { break }
            frames += Int64(n)
            var samples = n * channels
            if samples % 2 == 1 {
                buffer[samples] = 0
                samples += 1
            }
            UnsafeRawPointer(buffer).withMemoryRebound(to: UInt64.self, capacity: samples / 2) { words in
                for i in 0..<(samples / 2) { hash = (hash ^ words[i]) &* 0x0000_0100_0000_01b3 }
            }
        }
        return DecodedAudioDigest(sampleRate: decoder.info.sampleRate, channels: channels, frames: frames, hash: hash)
    }
}
