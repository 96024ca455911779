/// The ID3v2 tag at the start of an MP3, edited frame by frame: the frames naviscan writes (`TXXX`
/// by description, `TBPM`) are replaced and every other frame is kept byte for byte, in its order,
/// under the tag's own version. TagLib re-renders a whole tag as ID3v2.4 and drops the v2.3 frames
/// it no longer knows (RVAD, TRDA, TSIZ, ...), which a user's other taggers may rely on.
///
/// Tags this editor cannot rewrite without touching other frames (ID3v2.2, tag-wide
/// unsynchronisation, an extended header or footer, unreadable frames) are refused, never guessed.
public enum ID3v2Editor {
    /// Padding given to a tag that has to grow, so later edits fit in place.
    public static let growthPadding = 4096
    /// ID3v2's size field: 28 bits.
    public static let maximumTagSize = (1 << 28) - 1

    public struct Unsupported: Error, Equatable, Sendable {
        public let reason: String
    }

    /// One frame as stored: its 4-character ID and its whole bytes (header included).
    public struct Frame: Equatable, Sendable {
        public let id: String
        public let bytes: ArraySlice<UInt8>
    }

    /// A parsed tag: version, frames, and the tag's total length in the file (header and padding).
    public struct Tag: Sendable {
        public let majorVersion: UInt8
        public let revision: UInt8
        public let frames: [Frame]
        public let length: Int
    }

    /// The size of the ID3v2 tag that starts `header` (its first 10 bytes), header included; 0 when
    /// the file does not start with one.
    public static func tagLength(header: [UInt8]) -> Int {
        guard header.count >= 10, header[0] == 0x49, header[1] == 0x44, header[2] == 0x33,
              header[6...9].allSatisfy({ $0 & 0x80 == 0 }) else { return 0 }
        return 10 + syncsafe(header[6...9]) + (header[5] & 0x10 != 0 ? 10 : 0)
    }

    /// Parses the tag in `bytes` (exactly the tag: `tagLength` bytes from the file's start).
    public static func parse(_ bytes: [UInt8]) throws -> Tag {
        let length = tagLength(header: Array(bytes.prefix(10)))
        guard length > 0, length <= bytes.count else { throw Unsupported(reason: "its ID3v2 tag is cut short") }
        let version = bytes[3]
        guard version == 3 || version == 4 else {
            throw Unsupported(reason: "its tag is ID3v2.\(version), which naviscan does not rewrite; convert it to ID3v2.3 or 2.4 with a tagger first")
        }
        let flags = bytes[5]
        guard flags & 0x80 == 0 else { throw Unsupported(reason: "its ID3v2 tag is unsynchronised as a whole, which naviscan does not rewrite") }
        guard flags & 0x40 == 0 else { throw Unsupported(reason: "its ID3v2 tag has an extended header, which naviscan does not rewrite") }
        guard flags & 0x1F == 0 else { throw Unsupported(reason: "its ID3v2 tag has flags naviscan does not know (0x\(String(flags, radix: 16)))") }
        var frames: [Frame] = []
        var at = 10
        while at + 10 <= length, bytes[at] != 0 {
            let idBytes = bytes[at..<(at + 4)]
            guard idBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }) else {
                throw Unsupported(reason: "its ID3v2 tag holds an unreadable frame at byte \(at)")
            }
            let sizeBytes = bytes[(at + 4)..<(at + 8)]
            if version == 4, !sizeBytes.allSatisfy({ $0 & 0x80 == 0 }) {
                throw Unsupported(reason: "its ID3v2.4 tag has a frame size that is not synchsafe at byte \(at)")
            }
            let size = version == 4 ? syncsafe(sizeBytes) : sizeBytes.reduce(0) { $0 << 8 | Int($1) }
            let end = at + 10 + size
            guard size > 0, end <= length else { throw Unsupported(reason: "its ID3v2 tag holds a frame that runs past the tag at byte \(at)") }
            frames.append(Frame(id: String(decoding: idBytes, as: UTF8.self), bytes: bytes[at..<end]))
            at = end
        }
        // What follows the frames must be padding: anything else would be lost in a rewrite.
        guard bytes[at..<length].allSatisfy({ $0 == 0 }) else { throw Unsupported(reason: "its ID3v2 tag holds bytes after its frames that are not padding") }
        return Tag(majorVersion: version, revision: bytes[4], frames: frames, length: length)
    }

    /// Whether `frame` is one naviscan writes for one of `keys` (a `TXXX` whose description is the
    /// key in any case, `TBPM` for `BPM` or `TKEY` for `INITIALKEY`).
    public static func isOurs(_ frame: Frame, keys: Set<String>, version: UInt8) -> Bool {
        if frame.id == "TBPM" { return keys.contains("BPM") }
        if frame.id == "TKEY" { return keys.contains("INITIALKEY") }
        guard frame.id == "TXXX", let description = userTextDescription(frame, version: version) else { return false }
        return keys.contains(description.uppercased())
    }

    /// The tag with `fields` set (a nil value removes the field), every other frame kept as it was.
    /// The new tag keeps the old one's length when its frames fit there (so the audio does not
    /// move and the edit can be made in place); else it grows with `growthPadding`. `existing` is
    /// nil for a file without a tag: a new ID3v2.4 tag is made.
    public static func render(existing: Tag?, fields: [(key: String, value: String?)]) throws -> [UInt8] {
        let version = existing?.majorVersion ?? 4
        let keys = Set(fields.map { $0.key.uppercased() })
        var body: [UInt8] = []
        for frame in existing?.frames ?? [] where !isOurs(frame, keys: keys, version: version) { body += frame.bytes }
        for field in fields {
            guard let value = field.value else { continue }
            switch field.key {
            case "BPM": body += frame(id: "TBPM", text: value, version: version)
            case "INITIALKEY": body += frame(id: "TKEY", text: value, version: version)
            default: body += frame(id: "TXXX", description: field.key, text: value, version: version)
            }
        }
        let oldBody = (existing?.length ?? 0) - 10
        let size = body.count <= oldBody ? oldBody : body.count + growthPadding
        guard size + 10 <= maximumTagSize else {
            throw Unsupported(reason: "its ID3v2 tag would grow past ID3v2's 256 MB limit")
        }
        var tag: [UInt8] = [0x49, 0x44, 0x33, version, existing?.revision ?? 0, 0]
        tag += syncsafeBytes(size)
        tag += body
        tag += [UInt8](repeating: 0, count: size - body.count)
        return tag
    }

    // MARK: frames

    private static func frame(id: String, description: String? = nil, text: String, version: UInt8) -> [UInt8] {
        let ascii = text.utf8.allSatisfy { $0 < 0x80 } && (description?.utf8.allSatisfy { $0 < 0x80 } ?? true)
        var payload: [UInt8]
        if ascii {
            payload = [0] + (description.map { Array($0.utf8) + [0] } ?? []) + Array(text.utf8)
        } else if version == 4 {
            payload = [3] + (description.map { Array($0.utf8) + [0] } ?? []) + Array(text.utf8)
        } else {
            // ID3v2.3 has no UTF-8: UTF-16 with a byte-order mark, each string with its own.
            func utf16(_ s: String) -> [UInt8] { [0xFF, 0xFE] + s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }
            payload = [1] + (description.map { utf16($0) + [0, 0] } ?? []) + utf16(text)
        }
        let size = payload.count
        let sizeBytes = version == 4 ? syncsafeBytes(size) : [UInt8(size >> 24 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        return Array(id.utf8) + sizeBytes + [0, 0] + payload
    }

    /// A `TXXX` frame's description, when its flags leave it readable (no compression, encryption
    /// or per-frame unsynchronisation).
    static func userTextDescription(_ frame: Frame, version: UInt8) -> String? {
        let bytes = Array(frame.bytes)
        guard bytes.count > 11 else { return nil }
        let formatFlags = bytes[9]
        let unreadable: UInt8 = version == 4 ? 0x4F : 0xE0
        guard formatFlags & unreadable == 0 else { return nil }
        let payload = bytes[10...]
        let encoding = payload.first!
        let text = payload.dropFirst()
        switch encoding {
        case 0, 3:
            let end = text.firstIndex(of: 0) ?? text.endIndex
            let raw = text[text.startIndex..<end]
            return encoding == 3 ? String(decoding: raw, as: UTF8.self) : String(raw.map { Character(Unicode.Scalar($0)) })
        case 1, 2:
            var units: [UInt16] = []
            var i = text.startIndex
            var bigEndian = encoding == 2
            while i + 1 < text.endIndex {
                let a = text[i], b = text[i + 1]
                i += 2
                if a == 0, b == 0 { break }
                if units.isEmpty, encoding == 1, (a, b) == (0xFF, 0xFE) || (a, b) == (0xFE, 0xFF) {
                    bigEndian = a == 0xFE
                    continue
                }
                units.append(bigEndian ? UInt16(a) << 8 | UInt16(b) : UInt16(b) << 8 | UInt16(a))
            }
            return String(decoding: units, as: UTF16.self)
        default:
            return nil
        }
    }

    private static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 7 | Int($1 & 0x7F) }
    }

    private static func syncsafeBytes(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }
}
