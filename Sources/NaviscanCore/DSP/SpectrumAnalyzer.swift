import CFFTW
import Foundation

/// Windowed real FFT (FFTW single precision, r2c) → power spectrum scaled so that a full-scale sine
/// reads 1.0 (0 dBFS) in its peak bin. The buffers are made once and reused for every frame; the plan
/// is the process's shared one for this size (`FFTPlanner`).
public final class SpectrumAnalyzer {
    public let size: Int
    /// Number of power bins: size / 2 + 1 (DC … Nyquist).
    public var binCount: Int { size / 2 + 1 }
    private let window: UnsafeMutablePointer<Float>
    private let input: UnsafeMutablePointer<Float>
    private let spectrum: UnsafeMutablePointer<fftwf_complex>
    private let plan: fftwf_plan
    private let scale: Float

    public init(size: Int) {
        precondition(size >= 16 && size % 2 == 0, "FFT size must be even and at least 16")
        self.size = size
        window = .allocate(capacity: size)
        // Periodic Hann: w[n] = 0.5 - 0.5 cos(2πn/N); sums to N/2.
        var sum: Float = 0
        for n in 0..<size {
            let w = Float(0.5 - 0.5 * cos(2 * Double.pi * Double(n) / Double(size)))
            window[n] = w
            sum += w
        }
        // |X| of a sine with amplitude A is A·Σw/2 in its peak bin: scale power so that reads A².
        let amplitudeScale = 2 / sum
        scale = amplitudeScale * amplitudeScale
        input = fftwf_alloc_real(size)
        spectrum = fftwf_alloc_complex(size / 2 + 1)
        plan = FFTPlanner.plan(size: size, direction: .forward)
    }

    deinit {
        fftwf_free(input)
        fftwf_free(spectrum)
        window.deallocate()
    }

    /// Power of each bin of `size` samples starting at `samples`, into `power` (`binCount` values).
    public func powerSpectrum(of samples: UnsafePointer<Float>, into power: UnsafeMutablePointer<Float>) {
        for i in 0..<size { input[i] = samples[i] * window[i] }
        fftwf_execute_dft_r2c(plan, input, spectrum)
        let s = scale
        // Four bins at a time: (re, im) pairs de-interleaved from eight floats.
        spectrum.withMemoryRebound(to: Float.self, capacity: 2 * binCount) { c in
            var k = 0
            while k + 4 <= binCount {
                let pairs = loadSIMD8(c + 2 * k)
                let re = pairs.evenHalf, im = pairs.oddHalf
                storeSIMD4((re * re + im * im) * s, power + k)
                k += 4
            }
            while k < binCount {
                let re = c[2 * k], im = c[2 * k + 1]
                power[k] = (re * re + im * im) * s
                k += 1
            }
        }
    }
}
