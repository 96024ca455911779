/// Natural logarithm for positive, finite floats without a libm call, so loops over bands vectorise.
///
/// x = m · 2^k with m in [√½, √2), found by integer arithmetic on the bit pattern (no branch);
/// ln m = 2·atanh(t), t = (m − 1)/(m + 1), |t| ≤ 0.172, from its odd series to t⁹. Absolute error
/// below 1e-6 (a few float ulps) over the whole positive range.
@inline(__always)
package func fastLog(_ x: Float) -> Float {
    let bits = Int32(bitPattern: x.bitPattern)
    // Subtracting √½'s bit pattern moves the exponent boundary from 1 to √½.
    let k = (bits &- 0x3F35_04F3) &>> 23
    let m = Float(bitPattern: UInt32(bitPattern: bits &- (k &<< 23)))
    let t = (m - 1) / (m + 1)
    let t2 = t * t
    let series = 1 + t2 * (1 / 3 + t2 * (1 / 5 + t2 * (1 / 7 + t2 * (1 / 9))))
    return Float(k) * 0.693_147_18 + 2 * t * series
}

/// values[i] = ln(1 + gain · √values[i]) for `count` values in place: the onset compression.
func compressMagnitudes(_ values: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
    for i in 0..<count {
        // Powers are never negative; saying so lets sqrt vectorise (no errno path through libm).
        let power = values[i] < 0 ? 0 : values[i]
        values[i] = fastLog(1 + gain * power.squareRoot())
    }
}
