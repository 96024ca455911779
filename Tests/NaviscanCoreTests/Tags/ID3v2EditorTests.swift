import NaviscanCore
import Testing

/// The ID3v2 editor on tags laid out byte by byte from the ID3v2.3 and 2.4 specifications.
@Suite("ID3v2Editor: naviscan's frames replaced, every other frame kept byte for byte")
struct ID3v2EditorTests {
    /// A v2.3 frame: ID, 32-bit big-endian size, two flag bytes, payload.
    static func frame23(_ id: String, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return Array(id.utf8) + [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), 0, 0] + payload
    }

    static func tag(version: UInt8, flags: UInt8 = 0, frames: [UInt8], padding: Int) -> [UInt8] {
        let size = frames.count + padding
        return [0x49, 0x44, 0x33, version, 0, flags, UInt8(size >> 21 & 0x7F), UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)]
            + frames + [UInt8](repeating: 0, count: padding)
    }

    /// foobar2000's spelling: a lower-case description in UTF-16 with a byte-order mark.
    static let oldGain = frame23("TXXX", [1, 0xFF, 0xFE] + "replaygain_track_gain".utf16.flatMap { [UInt8($0), 0] } + [0, 0, 0xFF, 0xFE]
                                 + "-1.00 dB".utf16.flatMap { [UInt8($0), 0] })
    static let legacy = frame23("RVAD", [3, 0x10, 1, 2, 3, 4]) + frame23("TYER", Array("\u{0}1999".utf8))
        + frame23("TCON", Array("\u{0}(17)Rock".utf8))

    @Test("A v2.3 tag stays v2.3: the old gain (UTF-16, lower case) replaced, RVAD/TYER/TCON kept in order, in the same length when it fits")
    func replacesInPlace() throws {
        let original = Self.tag(version: 3, frames: Self.legacy + Self.oldGain, padding: 200)
        let parsed = try ID3v2Editor.parse(original)
        #expect(parsed.majorVersion == 3 && parsed.frames.map(\.id) == ["RVAD", "TYER", "TCON", "TXXX"])
        let rendered = try ID3v2Editor.render(existing: parsed, fields: [("REPLAYGAIN_TRACK_GAIN", "-6.86 dB"), ("BPM", "120")])
        #expect(rendered.count == original.count, "the new frames fit in the padding")
        #expect(rendered[3] == 3)
        let again = try ID3v2Editor.parse(rendered)
        #expect(again.frames.map(\.id) == ["RVAD", "TYER", "TCON", "TXXX", "TBPM"])
        #expect(Array(rendered[10..<(10 + Self.legacy.count)]) == Self.legacy)
        let gain = Array(again.frames[3].bytes)
        #expect(gain == Self.frame23("TXXX", [0] + Array("REPLAYGAIN_TRACK_GAIN".utf8) + [0] + Array("-6.86 dB".utf8)))
    }

    @Test("A tag without room grows with 4 KB of padding; a file without a tag gets a v2.4 one with syncsafe sizes")
    func grows() throws {
        let tight = Self.tag(version: 3, frames: Self.legacy, padding: 0)
        let rendered = try ID3v2Editor.render(existing: try ID3v2Editor.parse(tight), fields: [("REPLAYGAIN_TRACK_PEAK", "0.500000")])
        let frame = Self.frame23("TXXX", [0] + Array("REPLAYGAIN_TRACK_PEAK".utf8) + [0] + Array("0.500000".utf8))
        #expect(rendered.count == tight.count + frame.count + ID3v2Editor.growthPadding)
        #expect(ID3v2Editor.tagLength(header: Array(rendered.prefix(10))) == rendered.count)

        let fresh = try ID3v2Editor.render(existing: nil, fields: [("BPM", "128")])
        #expect(Array(fresh.prefix(4)) == [0x49, 0x44, 0x33, 4])
        #expect(Array(fresh[10..<24]) == Array("TBPM".utf8) + [0, 0, 0, 4, 0, 0, 0] + Array("128".utf8))
    }

    @Test("Tags that cannot be rewritten without touching other frames are refused: v2.2, whole-tag unsynchronisation, an extended header, junk after the frames")
    func refuses() {
        #expect(throws: ID3v2Editor.Unsupported.self) { try ID3v2Editor.parse(Self.tag(version: 2, frames: [], padding: 10)) }
        #expect(throws: ID3v2Editor.Unsupported.self) { try ID3v2Editor.parse(Self.tag(version: 3, flags: 0x80, frames: Self.legacy, padding: 0)) }
        #expect(throws: ID3v2Editor.Unsupported.self) { try ID3v2Editor.parse(Self.tag(version: 4, flags: 0x40, frames: [], padding: 10)) }
        #expect(throws: ID3v2Editor.Unsupported.self) { try ID3v2Editor.parse(Self.tag(version: 3, frames: Self.legacy + [0, 0, 7], padding: 4)) }
    }
}
