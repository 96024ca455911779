import CTagLib
import Foundation

/// A file's own tag, read and written through TagLib: ID3v2.4 in MP3, Vorbis comments in FLAC, Ogg
/// and Opus, freeform iTunes atoms (and `tmpo`) in MP4, APEv2 in WavPack, Monkey's Audio and Musepack.
/// Fields go by their logical names (`REPLAYGAIN_TRACK_GAIN`, `BPM`, `R128_TRACK_GAIN`); each
/// container's tag holds them under the keys its players read (see docs/tags.md). Everything else in
/// the tag, pictures included, is kept.
public enum TagFile {
    public enum Kind: Int32, Sendable {
        case none = 0, id3v2, xiph, mp4, ape
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    public static func kind(path: String) -> Kind {
        SystemPath.withCString(path) { Kind(rawValue: naviscan_tag_kind_of($0)) ?? .none }
    }

    /// The values of `keys` the file holds (a key it lacks is absent).
    public static func read(path: String, keys: [String]) throws -> [String: String] {
        var error = [CChar](repeating: 0, count: 512)
        var buffer = [CChar](repeating: 0, count: 64 * 1024)
        var values = [UnsafePointer<CChar>?](repeating: nil, count: keys.count)
        let cKeys = keys.map { strdup($0) }
        defer { cKeys.forEach { free($0) } }
        var result: [String: String] = [:]
        let status = SystemPath.withCString(path) { cPath in
            cKeys.map { UnsafePointer($0) }.withUnsafeBufferPointer { keyPointers in
                naviscan_tag_read(cPath, keyPointers.baseAddress, Int32(keys.count), &values, &buffer, buffer.count, &error, error.count)
            }
        }
        guard status == 0 else { throw Failure(path: path, reason: String(cString: error)) }
        for (i, key) in keys.enumerated() {
            if let value = values[i] { result[key] = String(cString: value) }
        }
        return result
    }

    /// Sets each field (nil removes it) and saves the file in place. Callers that must not leave a
    /// torn file write a copy and rename it (see `TagWriteBack`).
    public static func write(path: String, fields: [(key: String, value: String?)]) throws {
        var error = [CChar](repeating: 0, count: 512)
        let keys = fields.map { strdup($0.key) }
        let values = fields.map { $0.value.map { strdup($0) } ?? nil }
        defer { (keys + values).forEach { free($0) } }
        let cFields = zip(keys, values).map { naviscan_tag_field(key: $0.0, value: $0.1.map { UnsafePointer($0) }) }
        let status = SystemPath.withCString(path) { cPath in
            cFields.withUnsafeBufferPointer { naviscan_tag_write(cPath, $0.baseAddress, Int32(fields.count), &error, error.count) }
        }
        guard status == 0 else { throw Failure(path: path, reason: String(cString: error)) }
    }
}
