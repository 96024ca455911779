/// Why a file could not be decoded. Every case names the file and says what a user can do about it.
public enum DecodeError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened (missing, no permission, a directory, an I/O error).
    case unreadable(path: String, reason: String)
    /// The file has no bytes at all.
    case emptyFile(path: String)
    /// The content matches no format naviscan knows (random bytes, a text file, a damaged header).
    case unrecognizedFormat(path: String)
    /// A known format whose codec naviscan does not decode (DSD, DRM-protected AAC, ...).
    case unsupportedCodec(path: String, codec: String)
    /// The decoder rejected the stream part-way through.
    case corrupt(path: String, reason: String)
    /// The stream ended well before the length its own header announces.
    case truncated(path: String, expectedFrames: Int64, decodedFrames: Int64)
    /// The stream's parameters are outside what naviscan analyses (no channels, absurd rates).
    case unsupportedStream(path: String, reason: String)

    public var path: String {
        switch self {
        case .unreadable(let p, _), .emptyFile(let p), .unrecognizedFormat(let p),
             .unsupportedCodec(let p, _), .corrupt(let p, _), .truncated(let p, _, _),
             .unsupportedStream(let p, _):
            return p
        }
    }

    public var description: String { "\(path): \(reason)" }

    /// The message without the path, for reports that already name the file.
    public var reason: String {
        switch self {
        case .unreadable(_, let reason):
            return "cannot read the file (\(reason)); check that it exists and is readable"
        case .emptyFile:
            return "the file is empty (0 bytes); re-copy or re-rip it"
        case .unrecognizedFormat:
            return "not a recognised audio file (supported: \(AudioFormat.all.filter(\.isDecoded).map(\.name).joined(separator: ", "))); the content matches none of them"
        case .unsupportedCodec(_, let codec):
            return "\(codec) is not supported; convert it to FLAC or MP3 to analyse it"
        case .corrupt(_, let reason):
            return "the audio data is damaged (\(reason))"
        case .truncated(_, let expected, let decoded):
            return "the file is truncated: its header announces \(expected) sample frames but only \(decoded) decode; re-copy it"
        case .unsupportedStream(_, let reason):
            return reason
        }
    }
}
