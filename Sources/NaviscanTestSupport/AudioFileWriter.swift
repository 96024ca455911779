import CSndFile

/// Writes test signals through libsndfile, so tests decode exactly what a user's files would hold.
public enum AudioFileWriter {
    public enum Format: CaseIterable, Sendable {
        case wav16, wav24, wavFloat, flac16, flac24, aiff16, oggVorbis, opus

        var sndfileFormat: Int32 {
            switch self {
            case .wav16: return Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
            case .wav24: return Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24)
            case .wavFloat: return Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
            case .flac16: return Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)
            case .flac24: return Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_24)
            case .aiff16: return Int32(SF_FORMAT_AIFF | SF_FORMAT_PCM_16)
            case .oggVorbis: return Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
            case .opus: return Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS)
            }
        }

        public var fileExtension: String {
            switch self {
            case .wav16, .wav24, .wavFloat: return "wav"
            case .flac16, .flac24: return "flac"
            case .aiff16: return "aiff"
            case .oggVorbis: return "ogg"
            case .opus: return "opus"
            }
        }
    }

    public struct WriteError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Tags libsndfile can write (RIFF INFO, Vorbis comments in FLAC and Ogg).
    public enum Tag: Sendable, Hashable {
        case title, artist, album, trackNumber

        var sndfileString: Int32 {
            switch self {
            case .title: return Int32(SF_STR_TITLE)
            case .artist: return Int32(SF_STR_ARTIST)
            case .album: return Int32(SF_STR_ALBUM)
            case .trackNumber: return Int32(SF_STR_TRACKNUMBER)
            }
        }
    }

    public static func write(_ signal: TestSignal, to path: String, format: Format, tags: [Tag: String] = [:]) throws {
        try write(signal, to: path, sndfileFormat: format.sndfileFormat, name: "\(format)", tags: tags)
    }

    /// An MP3 (libsndfile's LAME encoder, its default VBR quality), for decoding and analysis tests.
    /// Not a `Format` case: MP3 supports only rates up to 48 kHz, and the encoder pads the start.
    public static func writeMP3(_ signal: TestSignal, to path: String) throws {
        try write(signal, to: path, sndfileFormat: Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III), name: "mp3")
    }

    private static func write(_ signal: TestSignal, to path: String, sndfileFormat: Int32, name: String, tags: [Tag: String] = [:]) throws {
        var info = SF_INFO()
        info.samplerate = Int32(signal.sampleRate)
        info.channels = Int32(signal.channels)
        info.format = sndfileFormat
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw WriteError(description: "\(path): libsndfile cannot write \(name): \(String(cString: sf_strerror(nil)))")
        }
        defer { sf_close(file) }
        // Before any audio: FLAC writes its comments with the header.
        for (tag, value) in tags where sf_set_string(file, tag.sndfileString, value) != 0 {
            throw WriteError(description: "\(path): libsndfile cannot write the \(tag) tag in \(name)")
        }
        // Integer formats: clip rather than wrap if a test signal touches full scale.
        sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        // In pieces: libvorbis's encoder takes stack in proportion to a write's length, and one write
        // of a long 96 kHz signal overflows a test thread's stack.
        let written = signal.samples.withUnsafeBufferPointer { all -> Int in
            var done = 0
            while done < signal.frameCount {
                let n = min(65_536, signal.frameCount - done)
                let wrote = Int(sf_writef_float(file, all.baseAddress! + done * signal.channels, sf_count_t(n)))
                done += wrote
                if wrote < n { break }
            }
            return done
        }
        guard written == signal.frameCount else {
            throw WriteError(description: "\(path): wrote \(written) of \(signal.frameCount) frames")
        }
    }
}
