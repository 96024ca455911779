/// Natural logarithm for positive, finite floats without a libm call, so loops over bands vectorise.
///
/// x = m · 2^e with m in [√½, √2); ln m = 2·atanh(t), t = (m − 1)/(m + 1), |t| ≤ 0.172, from its odd
/// series to t⁹. Absolute error below 1e-6 (a few float ulps) over the whole positive range.
@inline(__always)
func fastLog(_ x: Float) -> Float {
    let bits = x.bitPattern
    var exponent = Float(Int32(bitPattern: bits >> 23) - 127)
    var m = Float(bitPattern: (bits & 0x007F_FFFF) | 0x3F80_0000)
    if m > 1.414_213_5 {
        m *= 0.5
        exponent += 1
    }
    let t = (m - 1) / (m + 1)
    let t2 = t * t
    let series = 1 + t2 * (1 / 3 + t2 * (1 / 5 + t2 * (1 / 7 + t2 * (1 / 9))))
    return exponent * 0.693_147_18 + 2 * t * series
}
