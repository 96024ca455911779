import CFFTW

/// Autocorrelation of a sequence that arrives one value at a time, in memory that does not grow
/// with its length: mean removed, unbiased (lag ℓ divided by n − ℓ), normalised so r[0] = 1, for
/// lags 0…maxLag. Used on onset envelopes, which are as long as the track.
///
/// The lag products Σ x[i]·x[i+ℓ] are gathered block by block: each block of `blockLength` values is
/// cross-correlated by FFT with itself plus the next maxLag values, and the sums are kept in Double.
/// The mean is removed at the end from the running total and the first and last maxLag values:
/// Σ (x[i] − μ)(x[i+ℓ] − μ) = S(ℓ) − μ·(Σ_{i<n−ℓ} x[i] + Σ_{i≥ℓ} x[i]) + (n − ℓ)·μ².
public final class StreamingAutocorrelation {
    public let maxLag: Int
    private let fftSize: Int
    private let blockLength: Int
    /// The current block and the maxLag values after it (raw memory: `append` runs once per value).
    private let pending: UnsafeMutablePointer<Float>
    private var pendingCount = 0
    private var lagSums: [Double]
    private var head: [Double] = []
    /// The last maxLag values, as a ring; the next value goes to `tailIndex` (count % maxLag).
    private let tail: UnsafeMutablePointer<Double>
    private var tailIndex = 0
    private var count = 0
    private var total = 0.0
    private let forward: fftwf_plan
    private let inverse: fftwf_plan
    private let real: UnsafeMutablePointer<Float>
    private let spectrumA: UnsafeMutablePointer<fftwf_complex>
    private let spectrumB: UnsafeMutablePointer<fftwf_complex>

    public init(maxLag: Int) {
        precondition(maxLag >= 1)
        self.maxLag = maxLag
        var size = 1024
        while size < 4 * maxLag { size <<= 1 }
        fftSize = size
        blockLength = size - maxLag
        pending = .allocate(capacity: size)
        lagSums = [Double](repeating: 0, count: maxLag + 1)
        tail = .allocate(capacity: maxLag)
        tail.initialize(repeating: 0, count: maxLag)
        head.reserveCapacity(maxLag)
        real = fftwf_alloc_real(size)
        spectrumA = fftwf_alloc_complex(size / 2 + 1)
        spectrumB = fftwf_alloc_complex(size / 2 + 1)
        // Once per 35 s of envelope: estimated plans are plenty.
        forward = FFTPlanner.plan(size: size, direction: .forward, measured: false)
        inverse = FFTPlanner.plan(size: size, direction: .inverse, measured: false)
    }

    deinit {
        pending.deallocate()
        tail.deallocate()
        fftwf_free(real)
        fftwf_free(spectrumA)
        fftwf_free(spectrumB)
    }

    public func append(_ value: Double) {
        if count < maxLag { head.append(value) }
        tail[tailIndex] = value
        tailIndex = tailIndex + 1 == maxLag ? 0 : tailIndex + 1
        count += 1
        total += value
        pending[pendingCount] = Float(value)
        pendingCount += 1
        if pendingCount == blockLength + maxLag {
            accumulate(blockCount: blockLength)
            dropPending(blockLength)
        }
    }

    private func dropPending(_ n: Int) {
        pendingCount -= n
        pending.update(from: pending + n, count: pendingCount)
    }

    /// Adds Σ_{i<blockCount} p[i]·p[i+ℓ] over the pending values p (zero past their end) to lagSums.
    private func accumulate(blockCount: Int) {
        let n = fftSize
        for i in 0..<n { real[i] = i < blockCount ? pending[i] : 0 }
        fftwf_execute_dft_r2c(forward, real, spectrumA)
        for i in 0..<n { real[i] = i < pendingCount ? pending[i] : 0 }
        fftwf_execute_dft_r2c(forward, real, spectrumB)
        // conj(A)·B: the cross-correlation of the block with the block plus what follows.
        spectrumA.withMemoryRebound(to: Float.self, capacity: n + 2) { a in
            spectrumB.withMemoryRebound(to: Float.self, capacity: n + 2) { b in
                for k in 0...(n / 2) {
                    let ar = a[2 * k], ai = a[2 * k + 1], br = b[2 * k], bi = b[2 * k + 1]
                    a[2 * k] = ar * br + ai * bi
                    a[2 * k + 1] = ar * bi - ai * br
                }
            }
        }
        fftwf_execute_dft_c2r(inverse, spectrumA, real)
        let scale = 1 / Double(n)
        for lag in 0...maxLag { lagSums[lag] += Double(real[lag]) * scale }
    }

    /// The normalised autocorrelation, lags 0…maxLag; nil when the sequence is constant or shorter
    /// than maxLag + 2.
    public func finish() -> [Double]? {
        let n = count
        guard n >= maxLag + 2 else { return nil }
        // Whole blocks only (a longer one would wrap around the FFT), then what is left.
        while pendingCount > 0 {
            let k = min(blockLength, pendingCount)
            accumulate(blockCount: k)
            dropPending(k)
        }
        let mean = total / Double(n)
        // headSum[ℓ] = Σ_{i<ℓ} x[i]; tailSum[ℓ] = Σ of the last ℓ values.
        var headSum = [Double](repeating: 0, count: maxLag + 1)
        var tailSum = [Double](repeating: 0, count: maxLag + 1)
        for l in 1...maxLag {
            headSum[l] = headSum[l - 1] + head[l - 1]
            tailSum[l] = tailSum[l - 1] + tail[(n - l) % maxLag]
        }
        var centred = [Double](repeating: 0, count: maxLag + 1)
        for l in 0...maxLag {
            let early = total - tailSum[l], late = total - headSum[l]
            centred[l] = lagSums[l] - mean * (early + late) + Double(n - l) * mean * mean
        }
        let zero = centred[0] / Double(n)
        guard zero > 1e-12 * max(1, mean * mean) else { return nil }
        return (0...maxLag).map { lag in centred[lag] / Double(n - lag) / zero }
    }
}
