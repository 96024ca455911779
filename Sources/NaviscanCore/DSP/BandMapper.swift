import Foundation

/// Power spectrum → log-spaced bands. Edges: f_b = minHz · (maxHz / minHz)^(b / bandCount), b = 0…bandCount.
///
/// Each band's value is the mean of the power spectrum over [f_b, f_b+1], with the spectrum taken as
/// piecewise linear between bin centres. Bands narrower than a bin (the low end at 1024 points) thus
/// interpolate between their neighbouring bins instead of coming out empty. The weights are computed
/// once and stored contiguously; mapping a frame is one short dot product per band.
public struct BandMapper {
    public let bandCount: Int
    public let minHz: Double
    public let maxHz: Double
    /// Per band: the first bin it reads, and where its weights for consecutive bins start in `weights`
    /// (band b's run ends where band b + 1's starts).
    private let firstBin: [Int]
    private let weightStart: [Int]
    private let weights: [Float]

    public init(bandCount: Int, minHz: Double, maxHz: Double, fftSize: Int, sampleRate: Int) {
        precondition(bandCount > 0 && minHz > 0 && maxHz > minHz)
        precondition(maxHz <= Double(sampleRate) / 2, "band range must end at or below Nyquist")
        self.bandCount = bandCount
        self.minHz = minHz
        self.maxHz = maxHz
        let binHz = Double(sampleRate) / Double(fftSize)
        let lastBin = fftSize / 2
        var first: [Int] = []
        var allWeights: [[Float]] = []
        for b in 0..<bandCount {
            let lo = Self.edge(b, bandCount: bandCount, minHz: minHz, maxHz: maxHz) / binHz
            let hi = Self.edge(b + 1, bandCount: bandCount, minHz: minHz, maxHz: maxHz) / binHz
            let k0 = max(0, Int(lo.rounded(.down)))
            let k1 = min(lastBin, Int(hi.rounded(.up)))
            var w = [Double](repeating: 0, count: k1 - k0 + 1)
            // Integrate the linear interpolant over each bin segment [k, k+1] that overlaps [lo, hi].
            for k in k0..<k1 {
                let u = max(lo, Double(k)) - Double(k)
                let v = min(hi, Double(k + 1)) - Double(k)
                guard v > u else { continue }
                let upper = (v * v - u * u) / 2      // ∫ t dt: the weight of bin k+1
                w[k - k0] += (v - u) - upper          // ∫ (1 - t) dt: the weight of bin k
                w[k + 1 - k0] += upper
            }
            let width = hi - lo
            first.append(k0)
            allWeights.append(w.map { Float($0 / width) })
        }
        firstBin = first
        weightStart = allWeights.reduce(into: [0]) { starts, w in starts.append(starts.last! + w.count) }
        weights = allWeights.flatMap { $0 }
    }

    /// Lower edge of band `b` (or upper edge of band b−1) in Hz.
    public static func edge(_ b: Int, bandCount: Int, minHz: Double, maxHz: Double) -> Double {
        minHz * Foundation.pow(maxHz / minHz, Double(b) / Double(bandCount))
    }

    /// Sum of band b's weights (1 for a band fully inside the spectrum).
    public func totalWeight(ofBand b: Int) -> Float { weights[weightStart[b]..<weightStart[b + 1]].reduce(0, +) }

    /// Mean power per band from `power` (fftSize/2+1 bins) into `bands` (bandCount values).
    /// Each dot product runs four lanes at a time: a single running sum would wait on every add.
    public func map(_ power: UnsafePointer<Float>, into bands: UnsafeMutablePointer<Float>) {
        weights.withUnsafeBufferPointer { w in
            firstBin.withUnsafeBufferPointer { first in
                weightStart.withUnsafeBufferPointer { start in
                    for b in 0..<bandCount {
                        let bins = power + first[b]
                        let weights = w.baseAddress! + start[b]
                        let n = start[b + 1] - start[b]
                        var lanes = SIMD4<Float>.zero
                        var j = 0
                        while j + 4 <= n {
                            lanes += loadSIMD4(weights + j) * loadSIMD4(bins + j)
                            j += 4
                        }
                        var sum = lanes.sum()
                        while j < n {
                            sum += weights[j] * bins[j]
                            j += 1
                        }
                        bands[b] = sum
                    }
                }
            }
        }
    }
}
