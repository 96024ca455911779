import CFFTW

/// Autocorrelation of a sequence by FFT (FFTW r2c → power → c2r), mean removed, unbiased
/// (lag ℓ divided by n − ℓ) and normalised so r[0] = 1. Used once per track on the onset envelopes.
public enum Autocorrelation {
    /// Lags 0…maxLag; nil when the sequence is constant or shorter than maxLag + 2.
    public static func normalized(_ x: [Double], maxLag: Int) -> [Double]? {
        let n = x.count
        guard maxLag >= 1, n >= maxLag + 2 else { return nil }
        var size = 1
        while size < 2 * n { size <<= 1 }
        let mean = x.reduce(0, +) / Double(n)
        FFTPlanner.lock.lock()
        let real = fftwf_alloc_real(size)!
        let complex = fftwf_alloc_complex(size / 2 + 1)!
        let forward = fftwf_plan_dft_r2c_1d(Int32(size), real, complex, UInt32(FFTW_ESTIMATE))
        let backward = fftwf_plan_dft_c2r_1d(Int32(size), complex, real, UInt32(FFTW_ESTIMATE))
        FFTPlanner.lock.unlock()
        defer {
            FFTPlanner.lock.lock()
            fftwf_destroy_plan(forward)
            fftwf_destroy_plan(backward)
            fftwf_free(real)
            fftwf_free(complex)
            FFTPlanner.lock.unlock()
        }
        for i in 0..<n { real[i] = Float(x[i] - mean) }
        for i in n..<size { real[i] = 0 }
        fftwf_execute(forward)
        complex.withMemoryRebound(to: Float.self, capacity: size + 2) { c in
            for k in 0...(size / 2) {
                c[2 * k] = c[2 * k] * c[2 * k] + c[2 * k + 1] * c[2 * k + 1]
                c[2 * k + 1] = 0
            }
        }
        fftwf_execute(backward)
        let zero = Double(real[0]) / Double(n)
        guard zero > 0 else { return nil }
        return (0...maxLag).map { lag in Double(real[lag]) / Double(n - lag) / zero }
    }
}
