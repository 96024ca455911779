import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("DSP stages")
struct DSPTests {
    @Test("No log band is structurally empty, even those narrower than a bin",
          arguments: [(64, 40.0, 16_000.0), (256, 20.0, 20_000.0), (16, 40.0, 16_000.0)])
    func bandsAreNeverEmpty(bands: Int, minHz: Double, maxHz: Double) {
        let mapper = BandMapper(bandCount: bands, minHz: minHz, maxHz: maxHz, fftSize: 1024, sampleRate: 44_100)
        for b in 0..<bands {
            // Weights are a mean over the band: they sum to 1 for every band, however narrow.
            #expect(abs(mapper.totalWeight(ofBand: b) - 1) < 1e-4, "band \(b)")
        }
        // A flat power spectrum therefore reads the same in every band.
        let power = [Float](repeating: 0.25, count: 513)
        var out = [Float](repeating: 0, count: bands)
        power.withUnsafeBufferPointer { p in out.withUnsafeMutableBufferPointer { mapper.map(p.baseAddress!, into: $0.baseAddress!) } }
        for value in out { #expect(abs(value - 0.25) < 1e-5) }
    }

    @Test("A full-scale sine on a bin centre reads power 1 (0 dBFS) in that bin")
    func spectrumScale() {
        let n = 1024
        let analyzer = SpectrumAnalyzer(size: n)
        let bin = 40
        let samples = (0..<n).map { Float(sin(2 * Double.pi * Double(bin) * Double($0) / Double(n))) }
        var power = [Float](repeating: 0, count: n / 2 + 1)
        samples.withUnsafeBufferPointer { s in power.withUnsafeMutableBufferPointer { analyzer.powerSpectrum(of: s.baseAddress!, into: $0.baseAddress!) } }
        #expect(abs(power[bin] - 1) < 1e-3)
        // Hann: the neighbours hold half the amplitude (a quarter of the power); far bins nothing.
        #expect(abs(power[bin - 1] - 0.25) < 1e-3)
        #expect(abs(power[bin + 1] - 0.25) < 1e-3)
        #expect(power[bin + 5] < 1e-8)
    }

    @Test("Half-float conversion matches IEEE 754 binary16")
    func halfFloat() {
        #expect(HalfFloat.bits(from: 1) == 0x3C00)
        #expect(HalfFloat.bits(from: 0.5) == 0x3800)
        #expect(HalfFloat.bits(from: 0) == 0)
        #expect(HalfFloat.bits(from: 65_504) == 0x7BFF)
        #expect(HalfFloat.bits(from: 1e6) == 0x7C00)
        #expect(HalfFloat.value(from: 0x0001) == Float(sign: .plus, exponent: -24, significand: 1))
        for i in 0...1000 {
            let v = Float(i) / 1000
            let back = HalfFloat.value(from: HalfFloat.bits(from: v))
            #expect(abs(back - v) <= 0.5 / 1024 * max(v, 1.0 / 16_384) + 1e-7, "\(v) → \(back)")
        }
    }

    @Test("Resampling 48 kHz → 44.1 kHz keeps a 1 kHz sine's level and rate")
    func resamplerKeepsTone() throws {
        let resampler = try Resampler(inputRate: 48_000, outputRate: 44_100, maxInputFrames: 4096)
        let input = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
        var output: [Float] = []
        for start in stride(from: 0, to: input.count, by: 4096) {
            let chunk = Array(input[start..<min(start + 4096, input.count)])
            chunk.withUnsafeBufferPointer { resampler.process($0) { output.append(contentsOf: $0) } }
        }
        // All but the last few outputs, which wait for input past the end (the filter's look-ahead).
        #expect(output.count <= 44_100 && output.count >= 44_100 - 20)
        let steady = output[1000..<43_000]
        let rms = sqrt(steady.map { $0 * $0 }.reduce(0, +) / Float(steady.count))
        #expect(abs(rms - 0.5 / Float(2).squareRoot()) < 0.005)
        // Zero crossings per second ≈ 2 × 1000.
        var crossings = 0
        for i in 1000..<43_000 where (output[i - 1] < 0) != (output[i] < 0) { crossings += 1 }
        #expect(abs(Double(crossings) / (42_000.0 / 44_100) - 2000) < 10)
    }
}

@Suite("Vectorised helpers")
struct VectorisedHelperTests {
    @Test("PeakScan finds the largest magnitude wherever it sits, tails included; non-finite reads as finite")
    func peakScan() {
        var generator = SeededGenerator(seed: 41)
        for count in [0, 1, 7, 15, 16, 17, 33, 1000, 4097] {
            var samples = (0..<count).map { _ in Float.random(in: -0.5...0.5, using: &generator) }
            #expect(PeakScan.maxAbs(samples, count: count) == samples.map(abs).max() ?? 0)
            guard count > 0 else { continue }
            for position in Set([0, count / 2, count - 1]) {
                let saved = samples[position]
                samples[position] = -0.9
                #expect(PeakScan.maxAbs(samples, count: count) == 0.9, "count \(count), peak at \(position)")
                samples[position] = saved
            }
        }
        #expect(PeakScan.maxAbs([0.5, .infinity, -0.25], count: 3) == .greatestFiniteMagnitude)
        #expect(PeakScan.maxAbs([0.5, .nan], count: 2) == .greatestFiniteMagnitude)
    }

    @Test("fastLog stays within 1e-6 of ln over the positive floats")
    func fastLogAccuracy() {
        var x: Float = 1e-30
        while x < 1e30 {
            for scale: Float in [1, 1.1, 1.3, 1.41, 1.42, 1.7, 1.99] {
                let v = x * scale
                #expect(abs(fastLog(v) - Float(Foundation.log(Double(v)))) <= 1e-6 + 2e-7 * abs(Float(Foundation.log(Double(v)))), "x = \(v)")
            }
            x *= 10
        }
        #expect(fastLog(1) == 0)
    }
}

@Suite("Half-band decimator")
struct HalfbandDecimatorTests {
    /// Decimates `signal` in chunks of `chunk` samples.
    static func decimate(_ signal: [Float], chunk: Int) -> [Float] {
        let decimator = HalfbandDecimator(maxInputFrames: 4096)
        var out: [Float] = []
        signal.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: chunk) {
                decimator.process(UnsafeBufferPointer(rebasing: all[start..<min(start + chunk, all.count)])) { out += $0 }
            }
        }
        return out
    }

    static func rms(_ x: ArraySlice<Float>) -> Double {
        (x.reduce(0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot()
    }

    @Test("Keeps the passband, removes what would alias, and is the same in any chunking")
    func response() {
        let rate = 44_100.0
        func sine(_ hz: Double) -> [Float] { (0..<44_100).map { Float(0.5 * sin(2 * .pi * hz * Double($0) / rate)) } }
        // Passband (up to 0.41 of the output rate, 9 kHz): level kept within 0.05 dB.
        for hz in [100.0, 1_000, 5_000, 9_000] {
            let out = Self.decimate(sine(hz), chunk: 4096)
            // The last 11 outputs wait for input past the end.
            #expect(out.count == 22_050 - 11)
            let gain = 20 * log10(Self.rms(out[200..<22_000]) / (0.5 / 2.0.squareRoot()))
            #expect(abs(gain) < 0.05, "\(hz) Hz: \(gain) dB")
        }
        // Above 0.59 of the output rate (13 kHz) nothing folds back: at least 60 dB down.
        for hz in [13_000.0, 16_000, 20_000] {
            let out = Self.decimate(sine(hz), chunk: 4096)
            let gain = 20 * log10(Self.rms(out[200..<22_000]) / (0.5 / 2.0.squareRoot()))
            #expect(gain < -60, "\(hz) Hz: \(gain) dB")
        }
        // Output m is centred on input sample 2m, whatever the chunks.
        var impulse = [Float](repeating: 0, count: 1_000)
        impulse[400] = 1
        let whole = Self.decimate(impulse, chunk: 4096)
        #expect(whole.indices.max { abs(whole[$0]) < abs(whole[$1]) } == 200)
        for chunk in [1, 7, 64, 999] { #expect(Self.decimate(impulse, chunk: chunk) == whole, "chunk \(chunk)") }
        // On noise every output sums all its taps: the sixteen-, four- and one-wide paths agree bit for bit.
        var generator = SeededGenerator(seed: 42)
        let noise = (0..<10_000).map { _ in Float.random(in: -1...1, using: &generator) }
        let reference = Self.decimate(noise, chunk: 4096)
        for chunk in [1, 3, 9, 33] { #expect(Self.decimate(noise, chunk: chunk) == reference, "noise, chunk \(chunk)") }
    }
}
