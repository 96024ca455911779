import Foundation
import NaviscanCore
import NaviscanLibrary

/// The JSON form of a frame file, written chunk by chunk: values rounded to 4 decimals.
enum FramesJSON {
    /// Everything before the first frame.
    static func prefix(relativePath: String, header: VisFrameHeader) throws -> [UInt8] {
        Array("{\"relative_path\":".utf8) + Array(AnswerJSON.string(relativePath))
            + Array(",\"fps\":\(Double(header.fps)),\"band_count\":\(header.bandCount),\"frame_count\":\(header.frameCount),\"duration\":\(header.duration),\"frames\":[".utf8)
    }

    static let suffix = Array("]}".utf8)

    /// One frame as `[v,v,…]`, preceded by a comma unless it is the first.
    static func appendFrame(_ values: UnsafeBufferPointer<Float>, isFirst: Bool, to out: inout [UInt8]) {
        if !isFirst { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "["))
        for (b, value) in values.enumerated() {
            if b > 0 { out.append(UInt8(ascii: ",")) }
            appendFixed4(value, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// A value in [0, 1] as "0", "1" or "0.dddd" without trailing zeros. Anything else (the readers
    /// reject it before this point) is clamped, NaN to 0: the output is JSON whatever it is given.
    static func appendFixed4(_ value: Float, to out: inout [UInt8]) {
        let clamped = value.isNaN ? 0 : min(max(value, 0), 1)
        let scaled = Int((clamped * 10_000).rounded())
        if scaled == 0 { out.append(UInt8(ascii: "0")); return }
        if scaled == 10_000 { out.append(UInt8(ascii: "1")); return }
        out.append(UInt8(ascii: "0"))
        out.append(UInt8(ascii: "."))
        var divisor = 1000
        var rest = scaled
        while rest > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
