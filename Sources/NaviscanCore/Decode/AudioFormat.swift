/// Every audio format naviscan knows, in one table: the file extensions that name it, the content
/// type a browser's `<audio>` needs, and the decoder backend that reads it. The walker and the
/// server's watcher pick candidates by these extensions, `/stream` answers with these content types,
/// and the decoders confirm each file by its content (`FormatSniffer`), never by its name.
public struct AudioFormat: Sendable, Equatable {
    /// The library that decodes a format.
    public enum Backend: Sendable, Equatable {
        case mpg123, sndfile, ffmpeg
        /// Recognised as audio, not decoded (listed as unsupported).
        case none
    }

    public let name: String
    public let extensions: [String]
    public let contentType: String
    public let backend: Backend

    public var isDecoded: Bool { backend != .none }

    public static let all: [AudioFormat] = [
        AudioFormat(name: "MP3", extensions: ["mp3"], contentType: "audio/mpeg", backend: .mpg123),
        AudioFormat(name: "FLAC", extensions: ["flac"], contentType: "audio/flac", backend: .sndfile),
        AudioFormat(name: "WAV", extensions: ["wav"], contentType: "audio/wav", backend: .sndfile),
        AudioFormat(name: "AIFF", extensions: ["aif", "aiff"], contentType: "audio/aiff", backend: .sndfile),
        AudioFormat(name: "Ogg Vorbis", extensions: ["ogg", "oga"], contentType: "audio/ogg", backend: .sndfile),
        AudioFormat(name: "Opus", extensions: ["opus"], contentType: "audio/ogg; codecs=opus", backend: .sndfile),
        AudioFormat(name: "MP4 audio (AAC, ALAC)", extensions: ["m4a", "m4b", "mp4", "alac"], contentType: "audio/mp4", backend: .ffmpeg),
        AudioFormat(name: "Windows Media Audio", extensions: ["wma"], contentType: "audio/x-ms-wma", backend: .ffmpeg),
        AudioFormat(name: "ASF", extensions: ["asf"], contentType: "audio/x-ms-asf", backend: .ffmpeg),
        AudioFormat(name: "Monkey's Audio", extensions: ["ape"], contentType: "audio/x-ape", backend: .ffmpeg),
        AudioFormat(name: "WavPack", extensions: ["wv"], contentType: "audio/x-wavpack", backend: .ffmpeg),
        AudioFormat(name: "Musepack", extensions: ["mpc", "mp+"], contentType: "audio/x-musepack", backend: .ffmpeg),
        AudioFormat(name: "True Audio", extensions: ["tta"], contentType: "audio/x-tta", backend: .ffmpeg),
        AudioFormat(name: "Matroska audio", extensions: ["mka"], contentType: "audio/x-matroska", backend: .ffmpeg),
        // Audio naviscan does not decode: raw ADTS AAC, DSD, bare AC-3/DTS, AMR.
        AudioFormat(name: "AAC (ADTS)", extensions: ["aac"], contentType: "audio/aac", backend: .none),
        AudioFormat(name: "DSD", extensions: ["dsf", "dff"], contentType: "audio/x-dsd", backend: .none),
        AudioFormat(name: "AC-3", extensions: ["ac3"], contentType: "audio/ac3", backend: .none),
        AudioFormat(name: "DTS", extensions: ["dts"], contentType: "audio/vnd.dts", backend: .none),
        AudioFormat(name: "AMR", extensions: ["amr"], contentType: "audio/amr", backend: .none),
    ]

    private static let byExtension: [String: AudioFormat] = Dictionary(
        uniqueKeysWithValues: all.flatMap { format in format.extensions.map { ($0, format) } })

    /// The format a file name's extension names (any case), nil when it names none.
    public static func named(by fileName: some StringProtocol) -> AudioFormat? {
        guard let dot = fileName.lastIndex(of: ".") else { return nil }
        return byExtension[fileName[fileName.index(after: dot)...].lowercased()]
    }

    /// The extensions of the formats naviscan decodes.
    public static let decodedExtensions: Set<String> = Set(all.filter(\.isDecoded).flatMap(\.extensions))
    /// The extensions of audio it recognises but does not decode.
    public static let otherAudioExtensions: Set<String> = Set(all.filter { !$0.isDecoded }.flatMap(\.extensions))
}
