import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Polyphase resampler")
struct PolyphaseResamplerTests {
    private func sine(_ hz: Double, rate: Int, seconds: Double = 1, amplitude: Double = 0.5) -> [Float] {
        (0..<Int(Double(rate) * seconds)).map { Float(amplitude * sin(2 * Double.pi * hz * Double($0) / Double(rate))) }
    }

    /// Resamples `input` fed in chunks of the given sizes (cycled).
    private func resample(_ input: [Float], _ resampler: PolyphaseResampler, chunks: [Int] = [4096]) -> [Float] {
        var output: [Float] = []
        var start = 0, k = 0
        while start < input.count {
            let end = min(start + chunks[k % chunks.count], input.count)
            input[start..<end].withUnsafeBufferPointer { resampler.process($0) { output.append(contentsOf: $0) } }
            start = end
            k += 1
        }
        return output
    }

    private func noise(_ count: Int) -> [Float] {
        var generator = SeededGenerator(seed: 41)
        return (0..<count).map { _ in Float.random(in: -1...1, using: &generator) }
    }

    @Test("A tone comes out at the output rate, in phase (no delay) and at its level",
          arguments: [(32_000, 44_100), (48_000, 44_100), (96_000, 44_100), (88_200, 44_100), (8_000, 44_100), (48_000, 22_050)])
    func toneIsExact(inputRate: Int, outputRate: Int) throws {
        let resampler = try #require(PolyphaseResampler(inputRate: inputRate, outputRate: outputRate, maxInputFrames: 4096))
        let output = resample(sine(1000, rate: inputRate), resampler)
        // Every output but the last taps/2 inputs' worth (the filter's look-ahead) comes out.
        let expected = outputRate
        #expect(output.count <= expected && output.count >= expected - resampler.taps * outputRate / inputRate - 2)
        let ideal = sine(1000, rate: outputRate)
        // From where the filter no longer reaches back into the silence before the start.
        let settled = resampler.taps * outputRate / inputRate
        let worst = (settled..<output.count).map { abs(output[$0] - ideal[$0]) }.max() ?? 1
        #expect(worst < 1e-3, "largest error \(worst)")
    }

    @Test("Every output equals the filter evaluated directly in double precision: output m is row (m·M mod L) over the taps around input m·M / L",
          arguments: [(32_000, 44_100), (48_000, 44_100), (96_000, 44_100), (8_000, 44_100), (48_000, 22_050)])
    func outputsMatchDirectEvaluation(inputRate: Int, outputRate: Int) throws {
        let resampler = try #require(PolyphaseResampler(inputRate: inputRate, outputRate: outputRate, maxInputFrames: 4096))
        let input = noise(inputRate / 2)
        let output = resample(input, resampler, chunks: [4096, 1, 3, 777])
        let taps = resampler.taps, phases = resampler.phases, step = resampler.step
        #expect(output.count > outputRate / 2 - taps * outputRate / inputRate - 2)
        var worst = 0.0
        for m in output.indices {
            let q = m * step / phases, p = m * step % phases
            var sum = 0.0
            for j in 0..<taps {
                let n = q - taps / 2 + 1 + j
                if n >= 0 { sum += Double(resampler.coefficients[p * taps + j]) * Double(input[n]) }
            }
            worst = max(worst, abs(sum - Double(output[m])))
        }
        // Float sums of at most 56 products of magnitude below 1.
        #expect(worst < 1e-5, "largest difference \(worst)")
    }

    @Test("16 kHz passes within 0.1 dB (12 kHz from 32 kHz); what would fold back into the analysed bands is 60 dB down")
    func aliasesAreRejected() throws {
        func level(_ hz: Double, from inputRate: Int) throws -> Double {
            let resampler = try #require(PolyphaseResampler(inputRate: inputRate, outputRate: 44_100, maxInputFrames: 4096))
            let out = resample(sine(hz, rate: inputRate), resampler)
            let steady = out[200..<(out.count - 200)]
            let rms = (steady.map { Double($0) * Double($0) }.reduce(0, +) / Double(steady.count)).squareRoot()
            return 20 * log10(rms / (0.5 / 2.0.squareRoot()))
        }
        #expect(abs(try level(12_000, from: 32_000)) < 0.1)
        for inputRate in [48_000, 96_000] { #expect(abs(try level(16_000, from: inputRate)) < 0.1, "\(inputRate) Hz: 16 kHz") }
        // At a 44.1 kHz output, 28.1 kHz folds back to 16 kHz (the visualizer's top) and 25 kHz to 19.1 kHz.
        for hz in [28_100.0, 25_000, 30_000, 40_000] { #expect(try level(hz, from: 96_000) < -60, "\(hz) Hz from 96 kHz") }
    }

    @Test("The output does not depend on how the input is cut into blocks")
    func blockSizeDoesNotMatter() throws {
        let noise = noise(20_000)
        for (inputRate, outputRate) in [(48_000, 44_100), (96_000, 44_100), (32_000, 44_100)] {
            let whole = resample(noise, try #require(PolyphaseResampler(inputRate: inputRate, outputRate: outputRate, maxInputFrames: 4096)))
            let pieces = resample(noise, try #require(PolyphaseResampler(inputRate: inputRate, outputRate: outputRate, maxInputFrames: 4096)),
                                  chunks: [1, 7, 4096, 2, 333, 1000])
            #expect(whole == pieces, "\(inputRate) → \(outputRate)")
        }
    }

    @Test("A ratio with more phases than are tabulated is declined; Resampler then uses libsyn123")
    func oddRatiosFallBack() throws {
        #expect(PolyphaseResampler(inputRate: 44_101, outputRate: 44_100, maxInputFrames: 4096) == nil)
        let resampler = try Resampler(inputRate: 44_101, outputRate: 44_100, maxInputFrames: 4096)
        var count = 0
        sine(1000, rate: 44_101).withUnsafeBufferPointer { input in
            var offset = 0
            while offset < input.count {
                let n = min(4096, input.count - offset)
                resampler.process(UnsafeBufferPointer(rebasing: input[offset..<(offset + n)])) { count += $0.count }
                offset += n
            }
        }
        #expect(abs(count - 44_100) <= 8)
    }
}
