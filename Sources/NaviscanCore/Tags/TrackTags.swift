import Foundation

/// What a file's tags say about the track. Read for the store and the profile only: the analysis
/// never looks at them. Every field is nil when the file does not carry it.
public struct TrackTags: Codable, Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var discNumber: Int?
    public var discTotal: Int?
    public var trackNumber: Int?
    public var trackTotal: Int?
    public var year: Int?
    public var genre: String?
    public var musicBrainzTrackID: String?
    public var musicBrainzAlbumID: String?
    /// ReplayGain as tagged by another tool (dB, and linear sample peak).
    public var replayGainTrackGain: Double?
    public var replayGainTrackPeak: Double?
    public var replayGainAlbumGain: Double?
    public var replayGainAlbumPeak: Double?
    /// A tempo tag written by another tool (not naviscan's own `bpm`).
    public var bpm: Double?

    public init() {}

    public var isEmpty: Bool { self == TrackTags() }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case title, artist, album, albumArtist = "album_artist", discNumber = "disc_number", discTotal = "disc_total"
        case trackNumber = "track_number", trackTotal = "track_total", year, genre
        case musicBrainzTrackID = "musicbrainz_track_id", musicBrainzAlbumID = "musicbrainz_album_id"
        case replayGainTrackGain = "replaygain_track_gain", replayGainTrackPeak = "replaygain_track_peak"
        case replayGainAlbumGain = "replaygain_album_gain", replayGainAlbumPeak = "replaygain_album_peak"
        case bpm
    }

    /// Every key is written, null where absent (the profile's convention).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(title, forKey: .title)
        try c.encodeOrNull(artist, forKey: .artist)
        try c.encodeOrNull(album, forKey: .album)
        try c.encodeOrNull(albumArtist, forKey: .albumArtist)
        try c.encodeOrNull(discNumber, forKey: .discNumber)
        try c.encodeOrNull(discTotal, forKey: .discTotal)
        try c.encodeOrNull(trackNumber, forKey: .trackNumber)
        try c.encodeOrNull(trackTotal, forKey: .trackTotal)
        try c.encodeOrNull(year, forKey: .year)
        try c.encodeOrNull(genre, forKey: .genre)
        try c.encodeOrNull(musicBrainzTrackID, forKey: .musicBrainzTrackID)
        try c.encodeOrNull(musicBrainzAlbumID, forKey: .musicBrainzAlbumID)
        try c.encodeOrNull(replayGainTrackGain, forKey: .replayGainTrackGain)
        try c.encodeOrNull(replayGainTrackPeak, forKey: .replayGainTrackPeak)
        try c.encodeOrNull(replayGainAlbumGain, forKey: .replayGainAlbumGain)
        try c.encodeOrNull(replayGainAlbumPeak, forKey: .replayGainAlbumPeak)
        try c.encodeOrNull(bpm, forKey: .bpm)
    }
}

extension TrackTags {
    /// Sets the field a tag names, whatever the tag format calls it: ID3v2 (as libavformat names
    /// its frames, TXXX by description), Vorbis comments, APEv2, MP4 atoms and freeform atoms, ASF
    /// attributes. The first value found for a field wins.
    mutating func take(key: String, value: String) {
        let value = value.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty else { return }
        let name = String(key.lowercased().unicodeScalars.filter { !" _/:-".unicodeScalars.contains($0) })
        func text(_ field: WritableKeyPath<TrackTags, String?>) {
            if self[keyPath: field] == nil { self[keyPath: field] = value }
        }
        func number(_ field: WritableKeyPath<TrackTags, Double?>) {
            // "-6.50 dB", "128", "0.988"
            let token = value.split(separator: " ").first.map(String.init) ?? value
            if self[keyPath: field] == nil, let v = Double(token), v.isFinite { self[keyPath: field] = v }
        }
        func position(_ index: WritableKeyPath<TrackTags, Int?>, _ total: WritableKeyPath<TrackTags, Int?>) {
            // "3", "3/12"
            let parts = value.split(separator: "/", omittingEmptySubsequences: false)
            if self[keyPath: index] == nil, let n = Int(parts[0].trimmingCharacters(in: .whitespaces)) { self[keyPath: index] = n }
            if parts.count > 1, self[keyPath: total] == nil, let n = Int(parts[1].trimmingCharacters(in: .whitespaces)) {
                self[keyPath: total] = n
            }
        }
        switch name {
        case "title", "tit2": text(\.title)
        case "artist", "author", "tpe1": text(\.artist)
        case "album", "wmalbumtitle", "talb": text(\.album)
        case "albumartist", "wmalbumartist", "tpe2": text(\.albumArtist)
        case "disc", "disk", "discnumber", "wmpartofset", "tpos": position(\.discNumber, \.discTotal)
        case "disctotal", "totaldiscs":
            if discTotal == nil { discTotal = Int(value) }
        case "track", "tracknumber", "wmtracknumber", "trck": position(\.trackNumber, \.trackTotal)
        case "tracktotal", "totaltracks":
            if trackTotal == nil { trackTotal = Int(value) }
        case "date", "year", "wmyear", "tdrc", "tyer":
            // "2024", "2024-05-03", "2024-05-03T10:00:00"
            if year == nil, value.count >= 4, let y = Int(value.prefix(4)) { year = y }
        case "genre", "wmgenre", "tcon": text(\.genre)
        case "musicbrainztrackid": text(\.musicBrainzTrackID)
        case "musicbrainzalbumid": text(\.musicBrainzAlbumID)
        case "replaygaintrackgain": number(\.replayGainTrackGain)
        case "replaygaintrackpeak": number(\.replayGainTrackPeak)
        case "replaygainalbumgain": number(\.replayGainAlbumGain)
        case "replaygainalbumpeak": number(\.replayGainAlbumPeak)
        case "bpm", "tbpm", "tmpo", "wmbeatsperminute": number(\.bpm)
        default: break
        }
    }
}
