/// The payload check every reader runs before it serves a frame file's values: each stored value
/// must lie in [0, 1] (NaN, infinities, negatives and huge values are damage). The header checksum
/// does not cover the payload, so this is what stands between a flipped bit and a NaN on the wire.
/// It works on bit patterns: for IEEE floats, a value in [+0, 1] is a bit pattern ≤ that of 1.0,
/// and −0 is the only other one allowed; uint8 values are always valid.
public enum VisFramePayload {
    /// The index of the first invalid value in `bytes` (whole values of `encoding`), or nil.
    public static func firstInvalidValue(in bytes: UnsafeRawBufferPointer, encoding: VisSampleEncoding) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        switch encoding {
        case .uint8:
            return nil
        case .float32:
            let count = bytes.count / 4
            // Fast pass: any lane over the limit marks the chunk; only then search it.
            var i = 0
            while i < count {
                let end = min(i + 1024, count)
                var bad = false
                for j in i..<end {
                    let bits = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 * j, as: UInt32.self))
                    bad = bad || (bits > 0x3F80_0000 && bits != 0x8000_0000)
                }
                if bad {
                    for j in i..<end {
                        let bits = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 * j, as: UInt32.self))
                        if bits > 0x3F80_0000 && bits != 0x8000_0000 { return j }
                    }
                }
                i = end
            }
            return nil
        case .float16:
            let count = bytes.count / 2
            for j in 0..<count {
                let bits = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * j, as: UInt16.self))
                if bits > 0x3C00 && bits != 0x8000 { return j }
            }
            return nil
        }
    }

    /// Throws `VisFrameError.corruptPayload` naming the first bad value; `firstFrame` is the frame
    /// index of the first byte in `bytes`.
    public static func validate(_ bytes: UnsafeRawBufferPointer, header: VisFrameHeader, firstFrame: Int) throws {
        guard let index = firstInvalidValue(in: bytes, encoding: header.encoding) else { return }
        let value: Float
        switch header.encoding {
        case .float32: value = Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self)))
        case .float16: value = HalfFloat.value(from: UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self)))
        case .uint8: value = 0
        }
        throw VisFrameError.corruptPayload(frame: firstFrame + index / header.bandCount, band: index % header.bandCount, value: value)
    }
}
