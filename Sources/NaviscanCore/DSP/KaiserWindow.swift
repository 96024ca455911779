import Foundation

/// The Kaiser window, for the FIR filters designed once at start-up (the half-band decimator and the
/// polyphase resampler).
enum KaiserWindow {
    /// w(r) = I₀(β·√(1 − r²)) / I₀(β) for −1 ≤ r ≤ 1, 0 outside.
    static func value(_ r: Double, beta: Double) -> Double {
        abs(r) <= 1 ? bessel0(beta * (1 - r * r).squareRoot()) / bessel0(beta) : 0
    }

    /// The zeroth-order modified Bessel function of the first kind, by its power series.
    static func bessel0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0, k = 1.0
        while term > 1e-12 * sum {
            term *= (x / (2 * k)) * (x / (2 * k))
            sum += term
            k += 1
        }
        return sum
    }
}
