/// IEEE 754 binary16 conversion in software: Swift's Float16 is missing on Intel macOS, and the
/// frame format must read and write the same bytes everywhere.
package enum HalfFloat {
    package static func bits(from value: Float) -> UInt16 {
        let x = value.bitPattern
        let sign = UInt16((x >> 16) & 0x8000)
        let exponent = Int((x >> 23) & 0xFF) - 127 + 15
        var mantissa = x & 0x7F_FFFF
        if (x & 0x7FFF_FFFF) > 0x7F80_0000 { return sign | 0x7E00 }      // NaN
        if exponent >= 31 { return sign | 0x7C00 }                      // overflow → ∞
        if exponent <= 0 {                                              // subnormal or zero
            if exponent < -10 { return sign }
            mantissa |= 0x80_0000
            let shift = UInt32(14 - exponent)
            var half = mantissa >> shift
            let remainder = mantissa & ((1 << shift) - 1)
            let halfway = UInt32(1) << (shift - 1)
            if remainder > halfway || (remainder == halfway && (half & 1) == 1) { half += 1 }
            return sign | UInt16(half)
        }
        var half = UInt32(exponent) << 10 | (mantissa >> 13)
        let remainder = mantissa & 0x1FFF
        if remainder > 0x1000 || (remainder == 0x1000 && (half & 1) == 1) { half += 1 }  // may carry into exponent: correct
        return sign | UInt16(half)
    }

    package static func value(from bits: UInt16) -> Float {
        let sign = UInt32(bits & 0x8000) << 16
        let exponent = UInt32((bits >> 10) & 0x1F)
        let mantissa = UInt32(bits & 0x3FF)
        if exponent == 0 {
            // Zero or subnormal: mantissa × 2^-24.
            let magnitude = Float(mantissa) * Float(sign: .plus, exponent: -24, significand: 1)
            return sign != 0 ? -magnitude : magnitude
        }
        if exponent == 31 { return Float(bitPattern: sign | 0x7F80_0000 | (mantissa << 13)) }
        return Float(bitPattern: sign | ((exponent + 112) << 23) | (mantissa << 13))
    }
}
