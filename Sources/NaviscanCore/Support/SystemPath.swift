#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File names are bytes on Linux; naviscan's paths are Strings. A name that is valid UTF-8 is kept as
/// it is. A name that is not (a Latin-1 `Beyonc\xe9.mp3` copied from an old disk) keeps every byte:
/// each byte 0x80–0xFF that is not part of valid UTF-8 becomes the private-use character
/// U+F780–U+F7FF, so the String is unique per name and converts back to the exact bytes to open it.
public enum SystemPath {
    /// The first of the 128 private-use characters that stand for undecodable bytes 0x80–0xFF.
    static let escapeBase: UInt32 = 0xF700

    /// A String for file-name bytes, losslessly: valid UTF-8 as is, other bytes escaped.
    public static func string(fromBytes bytes: UnsafeBufferPointer<UInt8>) -> String {
        if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        if let valid = validUTF8(bytes) { return valid }
        var scalars = String.UnicodeScalarView()
        var i = 0
        while i < bytes.count {
            let length = validSequenceLength(bytes, at: i)
            if length > 0 {
                scalars.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: bytes[i..<(i + length)]), as: UTF8.self).unicodeScalars)
                i += length
            } else {
                scalars.append(Unicode.Scalar(escapeBase + UInt32(bytes[i]))!)
                i += 1
            }
        }
        return String(scalars)
    }

    /// A String for a NUL-terminated file name (as `readdir` returns it).
    public static func string(fromCString name: UnsafePointer<CChar>) -> String {
        name.withMemoryRebound(to: UInt8.self, capacity: strlen(name) + 1) {
            string(fromBytes: UnsafeBufferPointer(start: $0, count: strlen(name)))
        }
    }

    /// The bytes the file system knows `path` by (escapes turned back into their bytes).
    public static func bytes(of path: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count)
        for scalar in path.unicodeScalars {
            let value = scalar.value
            if value >= escapeBase + 0x80 && value <= escapeBase + 0xFF {
                out.append(UInt8(value - escapeBase))
            } else {
                out.append(contentsOf: String(scalar).utf8)
            }
        }
        return out
    }

    /// Whether `path` holds escaped bytes (a name that is not UTF-8).
    public static func hasEscapes(_ path: String) -> Bool {
        // U+F780–U+F7FF are EF 9E xx / EF 9F xx in UTF-8: most paths are ruled out by one byte scan.
        guard path.utf8.contains(0xEF) else { return false }
        return path.unicodeScalars.contains { $0.value >= escapeBase + 0x80 && $0.value <= escapeBase + 0xFF }
    }

    /// Calls `body` with the C path the file system knows `path` by.
    public static func withCString<R>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        guard hasEscapes(path) else { return try path.withCString(body) }
        var raw = bytes(of: path)
        raw.append(0)
        return try raw.withUnsafeBufferPointer { try $0.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) } }
    }

    /// Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there starts none.
    private static func validSequenceLength(_ b: UnsafeBufferPointer<UInt8>, at i: Int) -> Int {
        let lead = b[i]
        let length: Int
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF4: length = 4
        default: return 0
        }
        guard i + length <= b.count else { return 0 }
        return validUTF8(UnsafeBufferPointer(rebasing: b[i..<(i + length)])) == nil ? 0 : length
    }

    /// The String for `bytes` when they are valid UTF-8 (decoding repairs nothing), else nil.
    private static func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let decoded = String(decoding: bytes, as: UTF8.self)
        return decoded.utf8.elementsEqual(bytes) ? decoded : nil
    }
}
