/// Opens the right backend for a file's content (magic bytes), whatever its extension says.
public enum AudioDecoderFactory {
    public static func open(path: String) throws -> AudioDecoder {
        switch try FormatSniffer.sniff(path: path) {
        case .mpegAudio(let layer):
            return try Mpg123Decoder(path: path, layer: layer)
        case .flac, .wav, .aiff, .ogg:
            return try SndFileDecoder(path: path)
        case .ffmpeg:
            return try FFmpegDecoder(path: path)
        case .unsupported(let name):
            throw DecodeError.unsupportedCodec(path: path, codec: name)
        case .unknown:
            throw DecodeError.unrecognizedFormat(path: path)
        }
    }
}
