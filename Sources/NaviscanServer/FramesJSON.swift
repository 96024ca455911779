import Foundation
import NaviscanCore

/// The JSON form of a frame file: values rounded to 4 decimals, written straight into a byte buffer.
enum FramesJSON {
    static func encode(relativePath: String, file: String) throws -> Data {
        let buffer = try VisFrameBuffer(path: file)
        var out = [UInt8]()
        out.reserveCapacity(64 + buffer.frameCount * buffer.bandCount * 7)
        let name = try JSONSerialization.data(withJSONObject: relativePath, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        out += Array("{\"relative_path\":".utf8) + Array(name)
        out += Array(",\"fps\":\(buffer.fps),\"band_count\":\(buffer.bandCount),\"frame_count\":\(buffer.frameCount),\"duration\":\(buffer.duration),\"frames\":[".utf8)
        var frame = [Float](repeating: 0, count: buffer.bandCount)
        for i in 0..<buffer.frameCount {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            buffer.copyFrame(at: i, into: &frame)
            for (b, value) in frame.enumerated() {
                if b > 0 { out.append(UInt8(ascii: ",")) }
                appendFixed4(value, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out += Array("]}".utf8)
        return Data(out)
    }

    /// A value in [0, 1] as "0", "1" or "0.dddd" without trailing zeros.
    static func appendFixed4(_ value: Float, to out: inout [UInt8]) {
        let scaled = Int((min(max(value, 0), 1) * 10_000).rounded())
        if scaled == 0 { out.append(UInt8(ascii: "0")); return }
        if scaled == 10_000 { out.append(UInt8(ascii: "1")); return }
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: 4)
        var v = scaled
        for i in stride(from: 3, through: 0, by: -1) { digits[i] = UInt8(ascii: "0") + UInt8(v % 10); v /= 10 }
        var length = 4
        while length > 1 && digits[length - 1] == UInt8(ascii: "0") { length -= 1 }
        out += [UInt8(ascii: "0"), UInt8(ascii: ".")] + digits[0..<length]
    }
}
