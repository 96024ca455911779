import CFFmpeg
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file's tags through libavformat, whichever backend decodes its audio: ID3v2, ID3v1 and
/// APEv2 (MP3), Vorbis comments (FLAC, Ogg, Opus), MP4 atoms, ASF attributes (WMA), APEv2 (Monkey's
/// Audio, WavPack). Only the container header is read (no stream probing, no decoding).
public enum TagReader {
    /// The file's tags; empty when it has none or libavformat cannot read its container. Tags are
    /// metadata: a file whose tags cannot be read is still analysed.
    public static func read(path: String) -> TrackTags {
        FFmpegLibrary.silence()
        var tags = TrackTags()
        var context: UnsafeMutablePointer<AVFormatContext>?
        // Naming the container spares libavformat probing every demuxer it has (a fifth of a short
        // file's overhead in a scan); other containers, and a named one that does not open, are probed.
        let sniffed = try? FormatSniffer.sniff(path: path)
        let demuxer = sniffed.flatMap(demuxerName).flatMap { av_find_input_format($0) }
        // The name's own bytes (SystemPath): a Latin-1 name opens like any other.
        let opened = SystemPath.withCString("file:" + path) { url in
            if demuxer != nil, avformat_open_input(&context, url, demuxer, nil) == 0 { return true }
            return avformat_open_input(&context, url, nil, nil) == 0
        }
        guard opened else { return tags }
        guard let format = context else { return tags }
        defer { avformat_close_input(&context) }
        take(format.pointee.metadata, into: &tags)
        // Ogg keeps its comments on the stream, not the container.
        for i in 0..<Int(format.pointee.nb_streams) {
            let stream = format.pointee.streams[i]!.pointee
            if stream.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO { take(stream.metadata, into: &tags) }
        }
        // libavformat skips ID3v2's UFID frame, where MusicBrainz taggers put an MP3's track ID (an
        // ID3v2 tag opens MP3 files, and rarely FLAC ones).
        if tags.musicBrainzTrackID == nil, opensWithID3(sniffed) {
            tags.musicBrainzTrackID = ID3MusicBrainzID.read(path: path)
        }
        return tags
    }

    private static func opensWithID3(_ format: SniffedFormat?) -> Bool {
        switch format {
        case .mpegAudio, .flac: return true
        default: return false
        }
    }

    /// libavformat's demuxer for the formats the sniffer names exactly.
    private static func demuxerName(_ format: SniffedFormat) -> String? {
        switch format {
        case .mpegAudio: return "mp3"
        case .flac: return "flac"
        case .wav: return "wav"
        case .aiff: return "aiff"
        case .ogg: return "ogg"
        case .ffmpeg, .unsupported, .unknown: return nil
        }
    }

    private static func take(_ dictionary: OpaquePointer?, into tags: inout TrackTags) {
        guard let dictionary else { return }
        var entry: UnsafeMutablePointer<AVDictionaryEntry>?
        while true {
            entry = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX)
            guard let e = entry else { return }
            tags.take(key: String(cString: e.pointee.key), value: String(cString: e.pointee.value))
        }
    }
}

/// The MusicBrainz recording ID in an ID3v2.3/2.4 `UFID` frame owned by "http://musicbrainz.org".
enum ID3MusicBrainzID {
    static func read(path: String) -> String? {
        let fd = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 10)
        guard pread(fd, &header, 10, 0) == 10, header[0] == 0x49, header[1] == 0x44, header[2] == 0x33,
              header[3] == 3 || header[3] == 4, header[5] & 0x80 == 0 else { return nil }   // no unsynchronisation
        let size = syncsafe(header[6...9])
        guard size > 0, size <= 16 << 20 else { return nil }
        var tag = [UInt8](repeating: 0, count: size)
        guard pread(fd, &tag, size, 10) == size else { return nil }
        return find(in: tag, version: Int(header[3]), extendedHeader: header[5] & 0x40 != 0)
    }

    static func find(in tag: [UInt8], version: Int, extendedHeader: Bool) -> String? {
        var i = 0
        if extendedHeader, tag.count >= 4 {
            i = version == 4 ? syncsafe(tag[0..<4]) : 4 + bigEndian(tag[0..<4])
        }
        let owner = Array("http://musicbrainz.org".utf8) + [0]
        while i + 10 <= tag.count, tag[i] != 0 {
            let size = version == 4 ? syncsafe(tag[i + 4..<i + 8]) : bigEndian(tag[i + 4..<i + 8])
            let body = i + 10
            guard size > 0, body + size <= tag.count else { return nil }
            if tag[i..<i + 4].elementsEqual("UFID".utf8), size > owner.count,
               tag[body..<body + owner.count].elementsEqual(owner) {
                return String(decoding: tag[(body + owner.count)..<(body + size)], as: UTF8.self)
            }
            i = body + size
        }
        return nil
    }

    private static func syncsafe(_ b: ArraySlice<UInt8>) -> Int {
        b.reduce(0) { ($0 << 7) | Int($1 & 0x7F) }
    }

    private static func bigEndian(_ b: ArraySlice<UInt8>) -> Int {
        b.reduce(0) { ($0 << 8) | Int($1) }
    }
}
