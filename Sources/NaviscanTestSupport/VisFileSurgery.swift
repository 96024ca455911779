import Foundation
import NaviscanCore

/// Damages frame files on purpose, the way a bad disk, a buggy writer or a hostile user would: a
/// header field rewritten with a valid checksum, a stored value replaced.
public enum VisFileSurgery {
    /// Overwrites header bytes at `offset` and reseals the header checksum.
    public static func setHeaderBytes(_ path: String, offset: Int, _ bytes: [UInt8]) throws {
        var data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        data.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        let header = VisFrameHeader.resealed(Array(data[0..<VisFrameHeader.size]))
        data.replaceSubrange(0..<VisFrameHeader.size, with: header)
        try Data(data).write(to: URL(fileURLWithPath: path))
    }

    public static func setHeaderFloat(_ path: String, offset: Int, _ value: Float) throws {
        try setHeaderBytes(path, offset: offset, withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) })
    }

    public static func setHeaderDouble(_ path: String, offset: Int, _ value: Double) throws {
        try setHeaderBytes(path, offset: offset, withUnsafeBytes(of: value.bitPattern.littleEndian) { Array($0) })
    }

    /// Replaces payload value `index` (frame-major) of a float32 file.
    public static func setPayloadFloat(_ path: String, index: Int, _ value: Float) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(VisFrameHeader.size + 4 * index))
        try handle.write(contentsOf: withUnsafeBytes(of: value.bitPattern.littleEndian) { Data($0) })
    }

    /// The header cases that crashed readers before they checked every field (the minimised
    /// findings of a mutation run): name, byte offset, new bytes. Each has a valid checksum.
    public static var hostileHeaders: [(name: String, offset: Int, bytes: [UInt8])] {
        func f32(_ v: Float) -> [UInt8] { withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) } }
        func f64(_ v: Double) -> [UInt8] { withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) } }
        return [
            ("min_hz NaN", 48, f32(.nan)), ("min_hz inf", 48, f32(.infinity)), ("min_hz -1e20", 48, f32(-1e20)),
            ("max_hz NaN", 52, f32(.nan)), ("max_hz inf", 52, f32(.infinity)), ("max_hz 1e20", 52, f32(1e20)),
            ("duration 1e300", 32, f64(1e300)), ("duration NaN", 32, f64(.nan)), ("duration -1", 32, f64(-1)),
            ("fps 0", 16, f32(0)), ("fps NaN", 16, f32(.nan)), ("fps 1e30", 16, f32(1e30)),
            ("hop NaN", 44, f32(.nan)), ("range_db 0", 60, f32(0)), ("release inf", 68, f32(.infinity)),
            ("band_count 0", 14, [0, 0]), ("analysis_rate 0", 20, [0, 0, 0, 0]), ("fft_size 3", 40, [3, 0, 0, 0]),
            ("source rate 0", 80, [0, 0, 0, 0]), ("frame_count 2^40", 24, [0, 0, 0, 0, 0, 1, 0, 0]),
        ]
    }
}
