import Foundation

/// A track's timbre as one Gaussian over its cepstra, as Mandel & Ellis and Musly model it: the mean
/// and full covariance of cepstral coefficients 1…`order` of the measured spectra. Two tracks are
/// compared by the symmetrised Kullback–Leibler divergence of their Gaussians (`TimbreDivergence`).
public enum TimbreGaussian {
    /// Cepstral coefficients 1…order (the first twelve are also the `SonicFeatures` timbre group's).
    public static let order = SimilarityModel.timbreOrder
    /// Covariance entries kept: the upper triangle, row by row.
    public static let triangle = order * (order + 1) / 2
    /// Values stored per track: the mean, then the covariance's upper triangle.
    public static let count = order + triangle
    /// Added to the covariance's diagonal, times its mean variance, so that it is invertible.
    package static let ridge = 1e-3
    /// Added to every variance: a cepstral standard deviation of 0.01 (a fifth of a decibel of
    /// spectral shape) says nothing of timbre, and a held tone's near-zero variances would make every
    /// divergence from it enormous.
    package static let varianceFloor = 1e-4

    /// Mean and covariance (upper triangle, ridge added) from sums over `frames` spectra of the
    /// cepstra (`sums`) and of their products (`products`, upper triangle).
    static func values(frames: Int, sums: [Double], products: [Double]) -> [Double] {
        let n = Double(frames)
        let mean = sums.map { $0 / n }
        var covariance = [Double](repeating: 0, count: triangle)
        var variance = 0.0
        var at = 0
        for i in 0..<order {
            for j in i..<order {
                covariance[at] = products[at] / n - mean[i] * mean[j]
                if i == j { variance += covariance[at] }
                at += 1
            }
        }
        let ridge = Self.ridge * variance / Double(order) + Self.varianceFloor
        at = 0
        for i in 0..<order {
            covariance[at] += ridge
            at += order - i
        }
        return mean + covariance
    }
}

/// Sums over a track's measured spectra of the cepstra of their log band powers and of the
/// cepstra's products: the timbre Gaussian's raw moments, kept in Float64, flat in track length.
package final class TimbreGaussianAccumulator {
    package static let bandCount = 24
    let order = TimbreGaussian.order
    /// DCT-II rows for coefficients 1…order over the log band powers, divided by the band count.
    private let dct: [Float]
    /// The last spectrum's cepstrum (coefficient 1 first).
    let cepstrum: UnsafeMutablePointer<Float>
    private(set) var frames = 0
    private var sums: [Double]
    private var products: [Double]

    package init() {
        let bands = Self.bandCount
        dct = (1...TimbreGaussian.order).flatMap { k in
            (0..<bands).map { b in Float(cos(Double.pi * Double(k) * (Double(b) + 0.5) / Double(bands)) / Double(bands)) }
        }
        cepstrum = .allocate(capacity: TimbreGaussian.order)
        sums = [Double](repeating: 0, count: TimbreGaussian.order)
        products = [Double](repeating: 0, count: TimbreGaussian.triangle)
    }

    deinit { cepstrum.deallocate() }

    /// One spectrum's log10 band powers (`bandCount` of them).
    package func add(logBands: UnsafePointer<Float>) {
        let bands = Self.bandCount, order = self.order
        dct.withUnsafeBufferPointer { dct in
            for k in 0..<order {
                var c: Float = 0
                for b in 0..<bands { c += dct[k * bands + b] * logBands[b] }
                cepstrum[k] = c
            }
        }
        sums.withUnsafeMutableBufferPointer { sums in
            products.withUnsafeMutableBufferPointer { products in
                var at = 0
                for i in 0..<order {
                    let ci = Double(cepstrum[i])
                    sums[i] += ci
                    for j in i..<order {
                        products[at] += ci * Double(cepstrum[j])
                        at += 1
                    }
                }
            }
        }
        frames += 1
    }

    /// The Gaussian's stored values (mean, covariance triangle with the ridge); nil without spectra.
    package func values() -> [Double]? {
        frames > 0 ? TimbreGaussian.values(frames: frames, sums: sums, products: products) : nil
    }
}

/// IEEE 754 half precision, converted by hand: Swift's `Float16` is not available on every platform
/// this builds for (Intel Macs). Round to nearest, ties to even; overflow becomes infinity.
package enum Half {
    package static func bits(_ value: Float) -> UInt16 {
        let x = value.bitPattern
        let sign = UInt16((x >> 16) & 0x8000)
        let exponent = Int((x >> 23) & 0xFF)
        var mantissa = x & 0x7F_FFFF
        if exponent == 0xFF { return sign | 0x7C00 | (mantissa != 0 ? 0x200 : 0) }
        let e = exponent - 127 + 15
        if e >= 0x1F { return sign | 0x7C00 }
        if e <= 0 {
            // Subnormal half (or zero): shift the implicit bit in, round to nearest even.
            if e < -10 { return sign }
            mantissa |= 0x80_0000
            let shift = UInt32(14 - e)
            let half = UInt32(1) << (shift - 1)
            let rest = mantissa & ((UInt32(1) << shift) - 1)
            var result = mantissa >> shift
            if rest > half || (rest == half && (result & 1) == 1) { result += 1 }
            return sign | UInt16(result)
        }
        let rest = mantissa & 0x1FFF
        var result = UInt32(e << 10) | (mantissa >> 13)
        if rest > 0x1000 || (rest == 0x1000 && (result & 1) == 1) { result += 1 }   // may carry into the exponent: correct
        return sign | UInt16(result & 0x7FFF)
    }

    package static func value(_ bits: UInt16) -> Float {
        let sign = UInt32(bits & 0x8000) << 16
        let exponent = Int((bits >> 10) & 0x1F)
        let mantissa = UInt32(bits & 0x3FF)
        if exponent == 0 {
            let magnitude = Float(mantissa) * pow(2, -24)
            return sign == 0 ? magnitude : -magnitude
        }
        if exponent == 0x1F { return Float(bitPattern: sign | 0x7F80_0000 | (mantissa << 13)) }
        return Float(bitPattern: sign | UInt32(exponent - 15 + 127) << 23 | (mantissa << 13))
    }
}

/// The symmetrised Kullback–Leibler divergence between two tracks' timbre Gaussians, as one dot
/// product per pair. With P = Σ + μμᵀ, Q = Σ⁻¹, n = Σ⁻¹μ and a = μᵀΣ⁻¹μ for each track,
///   2 (SKL + K) = ⟨Q₁, P₂⟩ + ⟨P₁, Q₂⟩ − 2 n₁·μ₂ − 2 μ₁·n₂ + a₁ + a₂,
/// so a track's row holds (P, Q, μ, n, a) and a query's holds (2Q, 2P, −2n, −2μ, 1) with the
/// off-diagonal entries doubled (each stands for two). The means are taken about the library's
/// median mean first, so the terms stay small and Float32 keeps the differences (measured against
/// the direct Float64 formula in the tests).
package enum TimbreDivergence {
    static let order = TimbreGaussian.order
    static let triangle = TimbreGaussian.triangle
    /// A row's length: P, Q (triangles), μ, n, a, padded to whole SIMD8 vectors.
    package static let rowLength = (2 * triangle + 2 * order + 1 + 7) / 8 * 8

    /// Writes the row of a stored Gaussian (`values`: mean, covariance triangle) into `row`;
    /// false when the covariance is not positive definite (then the row is all zeros).
    package static func row(_ values: UnsafeBufferPointer<Float>, center: [Float], into row: UnsafeMutableBufferPointer<Float>) -> Bool {
        let k = order
        for i in 0..<rowLength { row[i] = 0 }
        // Scratch on the stack (an index builds 100,000 rows): Σ, its inverse, the centred mean, n.
        return withUnsafeTemporaryAllocation(of: Double.self, capacity: 4 * k * k + 2 * k) { scratch in
            let sigma = scratch.baseAddress!, inverse = sigma + k * k, work = inverse + k * k, mean = work + 2 * k * k, n = mean + k
            var at = k
            for i in 0..<k {
                for j in i..<k {
                    sigma[i * k + j] = Double(values[at])
                    sigma[j * k + i] = Double(values[at])
                    at += 1
                }
            }
            guard invert(sigma, k, into: inverse, work: work) else { return false }
            for i in 0..<k { mean[i] = Double(values[i]) - Double(center[i]) }
            var a = 0.0
            for i in 0..<k {
                n[i] = 0
                for j in 0..<k { n[i] += inverse[i * k + j] * mean[j] }
                a += mean[i] * n[i]
            }
            at = 0
            for i in 0..<k {
                for j in i..<k {
                    row[at] = Float(sigma[i * k + j] + mean[i] * mean[j])
                    row[triangle + at] = Float(inverse[i * k + j])
                    at += 1
                }
            }
            for i in 0..<k {
                row[2 * triangle + i] = Float(mean[i])
                row[2 * triangle + k + i] = Float(n[i])
            }
            row[2 * triangle + 2 * k] = Float(a)
            return true
        }
    }

    /// The query form of `row` (see the type's comment), into `query`.
    package static func query(_ row: UnsafePointer<Float>, into query: UnsafeMutablePointer<Float>) {
        var at = 0
        for i in 0..<order {
            for j in i..<order {
                let weight: Float = i == j ? 1 : 2
                query[at] = weight * row[triangle + at]
                query[triangle + at] = weight * row[at]
                at += 1
            }
        }
        for i in 0..<order {
            query[2 * triangle + i] = -2 * row[2 * triangle + order + i]
            query[2 * triangle + order + i] = -2 * row[2 * triangle + i]
        }
        query[2 * triangle + 2 * order] = 1
        for i in (2 * triangle + 2 * order + 1)..<rowLength { query[i] = 0 }
    }

    /// The divergence from the query form of one row and that row's `a` to another row.
    @inline(__always)
    package static func divergence(query: UnsafePointer<Float>, queryA: Float, row: UnsafePointer<Float>) -> Float {
        max(0, 0.5 * (SIMDMath.dot(query, row, count: rowLength) + queryA) - Float(order))
    }

    package static func a(_ row: UnsafePointer<Float>) -> Float { row[2 * triangle + 2 * order] }

    /// The inverse of a symmetric positive definite k × k matrix (Cholesky) into `inverse`; false
    /// when it is not one. `work` holds 2k² values.
    static func invert(_ matrix: UnsafePointer<Double>, _ k: Int, into inverse: UnsafeMutablePointer<Double>, work: UnsafeMutablePointer<Double>) -> Bool {
        let l = work, li = work + k * k
        for i in 0..<(2 * k * k) { work[i] = 0 }
        for i in 0..<k {
            for j in 0...i {
                var sum = matrix[i * k + j]
                for m in 0..<j { sum -= l[i * k + m] * l[j * k + m] }
                if i == j {
                    guard sum > 0, sum.isFinite else { return false }
                    l[i * k + i] = sum.squareRoot()
                } else {
                    l[i * k + j] = sum / l[j * k + j]
                }
            }
        }
        // L⁻¹, then (L⁻¹)ᵀ L⁻¹.
        for i in 0..<k {
            li[i * k + i] = 1 / l[i * k + i]
            for j in 0..<i {
                var sum = 0.0
                for m in j..<i { sum -= l[i * k + m] * li[m * k + j] }
                li[i * k + j] = sum / l[i * k + i]
            }
        }
        for i in 0..<k {
            for j in 0...i {
                var sum = 0.0
                for m in i..<k { sum += li[m * k + i] * li[m * k + j] }
                guard sum.isFinite else { return false }
                inverse[i * k + j] = sum
                inverse[j * k + i] = sum
            }
        }
        return true
    }
}

/// Dot products and squared distances over Float32 runs whose length is a multiple of 8, in SIMD
/// registers: a plain loop's sum is not vectorised (Float addition is not associative).
enum SIMDMath {
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        var sum = SIMD8<Float>()
        var i = 0
        while i < count {
            sum += loadSIMD8(a + i) * loadSIMD8(b + i)
            i += 8
        }
        return sum.sum()
    }

    @inline(__always)
    static func squaredDistance(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        var sum = SIMD8<Float>()
        var i = 0
        while i < count {
            let d = loadSIMD8(a + i) - loadSIMD8(b + i)
            sum += d * d
            i += 8
        }
        return sum.sum()
    }
}
