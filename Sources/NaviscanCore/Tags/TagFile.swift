import CTagLib
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's own tag, read through TagLib and written through TagLib or `ID3v2Editor`: ID3v2 in MP3, Vorbis comments in FLAC, Ogg
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

    /// Writes into `copy` (open for writing, empty; `copyPath` names it) the file at `original` with
    /// `fields` set. MP3s go through `ID3v2Editor` (the new tag, then the original's bytes after its
    /// old tag); other kinds are copied byte for byte and tagged by TagLib. The caller syncs the copy.
    public static func writeTaggedCopy(of original: String, kind: Kind, to copy: Int32, copyPath: String,
                                       fields: [(key: String, value: String?)]) throws {
        let input = SystemPath.withCString(original) { open($0, O_RDONLY) }
        guard input >= 0 else { throw Failure(path: original, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(input) }
        var rest: off_t = 0
        if kind == .id3v2 {
            let header = try readBytes(input, at: 0, count: 10, path: original)
            let length = ID3v2Editor.tagLength(header: header)
            let existing: ID3v2Editor.Tag?
            do {
                existing = length > 0 ? try ID3v2Editor.parse(try readBytes(input, at: 0, count: length, path: original)) : nil
                try writeAll(try ID3v2Editor.render(existing: existing, fields: fields), to: copy, path: copyPath)
            } catch let error as ID3v2Editor.Unsupported {
                throw Failure(path: original, reason: error.reason)
            }
            rest = off_t(length)
        }
        try copyBytes(from: input, at: rest, to: copy, path: original, copyPath: copyPath)
        if kind != .id3v2 { try write(path: copyPath, fields: fields) }
    }

    /// The frames of an MP3's ID3v2 tag that are not among `keys` (naviscan's), in order; empty
    /// for a file without a tag.
    public static func id3FramesNotOurs(path: String, keys: [String]) throws -> [ID3v2Editor.Frame] {
        let input = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard input >= 0 else { throw Failure(path: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let length = ID3v2Editor.tagLength(header: try readBytes(input, at: 0, count: 10, path: path))
        guard length > 0 else { return [] }
        do {
            let tag = try ID3v2Editor.parse(try readBytes(input, at: 0, count: length, path: path))
            let ours = Set(keys.map { $0.uppercased() })
            return tag.frames.filter { !ID3v2Editor.isOurs($0, keys: ours, version: tag.majorVersion) }
        } catch let error as ID3v2Editor.Unsupported {
            throw Failure(path: path, reason: error.reason)
        }
    }

    private static func readBytes(_ fd: Int32, at offset: Int, count: Int, path: String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
            guard n >= 0 else { throw Failure(path: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            got += n
        }
        return Array(bytes.prefix(got))
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws {
        try bytes.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                let w = systemWrite(fd, raw.baseAddress! + written, raw.count - written)
                guard w > 0 else { throw Failure(path: path, reason: "cannot write the tagged copy: \(String(cString: strerror(errno)))") }
                written += w
            }
        }
    }

    /// The bytes of `input` from `offset` to its end, appended to `output`; every read and write checked.
    private static func copyBytes(from input: Int32, at offset: off_t, to output: Int32, path: String, copyPath: String) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while true {
            let n = pread(input, buffer.baseAddress, buffer.count, position)
            if n == 0 { return }
            guard n > 0 else { throw Failure(path: path, reason: "cannot read the file: \(String(cString: strerror(errno)))") }
            position += off_t(n)
            var written = 0
            while written < n {
                let w = systemWrite(output, buffer.baseAddress! + written, n - written)
                guard w > 0 else { throw Failure(path: copyPath, reason: "cannot write the tagged copy: \(String(cString: strerror(errno)))") }
                written += w
            }
        }
    }
}

/// write(2); `TagFile.write` hides the global name inside the type.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, bytes, count)
    #else
    Darwin.write(fd, bytes, count)
    #endif
}
