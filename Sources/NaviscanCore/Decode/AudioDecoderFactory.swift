/// Opens the right backend for a file's content (magic bytes), whatever its extension says. Every
/// decoder it returns has had its header checked against `StreamLimits` and hands out samples
/// through `SampleGate`.
public enum AudioDecoderFactory {
    /// The decode stage's version (`AnalysisStage.decode`): bump it when what the decoders deliver
    /// changes (samples, gapless trimming, channel handling); every stage of every track runs again.
    public static let version = 1

    public static func open(path: String) throws -> AudioDecoder {
        let (format, size) = try FormatSniffer.sniffWithSize(path: path)
        let decoder: AudioDecoder
        switch format {
        case .mpegAudio(let layer):
            decoder = try Mpg123Decoder(path: path, layer: layer)
        case .flac, .wav, .aiff, .ogg:
            decoder = try SndFileDecoder(path: path)
        case .ffmpeg:
            decoder = try FFmpegDecoder(path: path)
        case .unsupported(let name):
            throw DecodeError.unsupportedCodec(path: path, codec: name)
        case .unknown:
            throw DecodeError.unrecognizedFormat(path: path)
        }
        return SampleGate(decoder, info: try StreamLimits.check(decoder.info, fileSize: size, path: path), path: path)
    }
}
