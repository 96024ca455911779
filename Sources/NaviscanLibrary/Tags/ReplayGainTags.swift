import Foundation
import NaviscanCore

/// The fields `naviscan tag` writes for one track, from its stored profile, in the spelling rsgain
/// writes and Navidrome, MPD, foobar2000 and the Subsonic clients read (docs/tags.md):
///
///     REPLAYGAIN_TRACK_GAIN  "-6.86 dB"   the profile's gain at the store's reference level
///     REPLAYGAIN_TRACK_PEAK  "0.300018"   linear sample (or true) peak
///     REPLAYGAIN_ALBUM_GAIN / _PEAK       only once the store has measured the whole album
///     BPM                    "120"        rounded (Navidrome reads whole numbers); not for beatless tracks
///     R128_TRACK_GAIN / R128_ALBUM_GAIN   Opus only: Q7.8 to -23 LUFS (RFC 7845), as integers
///     MIXRAMP_START / MIXRAMP_END         with `mixRamp`: the profile's ramps ("dB seconds;…"), as MPD reads them
public struct ReplayGainTags: Equatable, Sendable {
    public var fields: [(key: String, value: String)]

    public static func == (a: ReplayGainTags, b: ReplayGainTags) -> Bool {
        a.fields.map(\.key) == b.fields.map(\.key) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// `keyNotation`: also the key (`INITIALKEY`: ID3 TKEY, the iTunes `initialkey` atom), spelled so.
    public init(profile: TrackProfile, opus: Bool, mixRamp: Bool = false, keyNotation: KeyNotation? = nil) {
        var fields: [(String, String)] = []
        if let gain = profile.replayGain {
            if let g = gain.trackGain { fields.append(("REPLAYGAIN_TRACK_GAIN", Self.gain(g))) }
            if let p = gain.trackPeak { fields.append(("REPLAYGAIN_TRACK_PEAK", Self.peak(p))) }
            if let g = gain.albumGain { fields.append(("REPLAYGAIN_ALBUM_GAIN", Self.gain(g))) }
            if let p = gain.albumPeak { fields.append(("REPLAYGAIN_ALBUM_PEAK", Self.peak(p))) }
        }
        if let bpm = profile.bpm, bpm.isFinite, bpm > 0 { fields.append(("BPM", String(Int(saturating: bpm.rounded())))) }
        if opus {
            if let lufs = profile.lufs { fields.append(("R128_TRACK_GAIN", Self.q78(-23 - lufs))) }
            if profile.replayGain?.albumGain != nil, let lufs = profile.album?.lufs { fields.append(("R128_ALBUM_GAIN", Self.q78(-23 - lufs))) }
        }
        if mixRamp, let start = profile.startRamp, let end = profile.endRamp {
            fields.append(("MIXRAMP_START", start))
            fields.append(("MIXRAMP_END", end))
        }
        if let keyNotation, let key = profile.key?.musicalKey { fields.append(("INITIALKEY", key.spelled(keyNotation))) }
        self.fields = fields
    }

    static func gain(_ dB: Double) -> String { String(format: "%.2f dB", dB) }
    static func peak(_ linear: Double) -> String { String(format: "%.6f", linear) }
    /// RFC 7845: a signed 16-bit number of 1/256 dB.
    static func q78(_ dB: Double) -> String { String(min(max(Int(saturating: (dB * 256).rounded()), -32_768), 32_767)) }

    /// True when `existing` already says `wanted` to the precision of the tag: gains to 0.01 dB
    /// (the first "dB" removed, any case), peaks to 1e-6, BPM and R128 values as whole numbers.
    public static func same(key: String, existing: String, wanted: String) -> Bool {
        func number(_ text: String) -> Double? {
            var t = text.trimmingCharacters(in: .whitespaces)
            if let range = t.range(of: "db", options: .caseInsensitive) { t.removeSubrange(range) }
            return Double(t.trimmingCharacters(in: .whitespaces))
        }
        // A key is the same in any spelling naviscan reads ("Am", "8A", "1m"): another notation's
        // equal key is not rewritten.
        if key == "INITIALKEY" { return MusicalKey(existing).map { $0 == MusicalKey(wanted) } ?? false }
        guard let old = number(existing), let new = number(wanted) else { return existing == wanted }
        switch key {
        case "REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_ALBUM_GAIN": return abs(old - new) < 0.005
        case "REPLAYGAIN_TRACK_PEAK", "REPLAYGAIN_ALBUM_PEAK": return abs(old - new) < 0.000_000_5
        default: return old.rounded() == new.rounded()
        }
    }
}
