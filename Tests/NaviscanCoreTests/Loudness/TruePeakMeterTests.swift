import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("True peak: naviscan's own 4× interpolator against libebur128")
struct TruePeakMeterTests {
    /// The meter's true peak of `signal` fed in blocks of `blockFrames`, in dBTP.
    static func measure(_ signal: TestSignal, blockFrames: Int = 4096) -> Double {
        let meter = TruePeakMeter(sampleRate: signal.sampleRate, channels: signal.channels, maxBlockFrames: 1024)
        signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: signal.frameCount, by: blockFrames) {
                meter.process(AudioBlock(samples: all.baseAddress! + start * signal.channels,
                                         frameCount: min(blockFrames, signal.frameCount - start), channels: signal.channels))
            }
        }
        // As libebur128 reports it: never below the sample peak.
        let samplePeak = Double(signal.samples.map(abs).max() ?? 0)
        return 20 * log10(max(meter.finish(), samplePeak))
    }

    static func reference(_ signal: TestSignal) throws -> Double { 20 * log10(try LoudnessReference.truePeak(signal)) }

    /// Two channels of different content: each channel's own samples make its peak.
    static func stereo(_ left: TestSignal, _ right: TestSignal) -> TestSignal {
        var samples = [Float](repeating: 0, count: 2 * min(left.frameCount, right.frameCount))
        for i in 0..<samples.count / 2 {
            samples[2 * i] = left.samples[i * left.channels]
            samples[2 * i + 1] = right.samples[i * right.channels]
        }
        return TestSignal(sampleRate: left.sampleRate, channels: 2, samples: samples)
    }

    /// Tech 3341's true-peak cases are tones whose samples miss the crest (a quarter of the rate at
    /// 45°, near the band edge), at each rate's oversampling factor (4× to 88.2 kHz, 2× to 176.4 kHz,
    /// none above).
    @Test("Tones between samples, at 44.1 to 192 kHz, mono and stereo, in odd block sizes: within 0.05 dB of libebur128", arguments: [44_100, 48_000, 96_000, 192_000])
    func tones(rate: Int) throws {
        let r = Double(rate)
        let signals: [(String, TestSignal)] = [
            ("rate/4 at 45°", .sine(frequency: r / 4, dBFS: -6, duration: 1, sampleRate: rate, phase: .pi / 4)),
            ("rate/6", .sine(frequency: r / 6, dBFS: -3, duration: 1, sampleRate: rate, phase: 0.3)),
            ("997 Hz", .sine(frequency: 997, dBFS: -1, duration: 1, sampleRate: rate)),
            ("10 kHz", .sine(frequency: 10_000, dBFS: -6, duration: 1, sampleRate: rate, phase: 0.2)),
            ("15 kHz", .sine(frequency: 15_000, dBFS: -6, duration: 1, sampleRate: rate, phase: 1)),
            ("19.5 kHz, 0 dBFS", .sine(frequency: 19_500, dBFS: 0, duration: 1, sampleRate: rate, phase: 0.7)),
            ("stereo", Self.stereo(.sine(frequency: 11_025, dBFS: -9, duration: 1, sampleRate: rate, phase: 0.5),
                                   .sine(frequency: 3_000, dBFS: -2, duration: 1, sampleRate: rate, phase: 1.1))),
        ]
        for (name, signal) in signals {
            let expected = try Self.reference(signal)
            for block in [4096, 333, 1] where block > 1 || signal.frameCount <= 48_000 {
                let measured = Self.measure(signal, blockFrames: block)
                #expect(abs(measured - expected) < 0.05, "\(name) at \(rate) Hz, blocks of \(block): \(measured) dBTP, libebur128 \(expected)")
            }
        }
    }

    @Test("Clipped material (noise clipped at ±0.5, a groove driven 12 dB into full scale): within 0.05 dB of libebur128, above the sample peak")
    func clipped() throws {
        var random = SeededGenerator(seed: 1770)
        let noise = (0..<96_000).map { _ in Float(max(-0.5, min(0.5, Double.random(in: -1...1, using: &random)))) }
        let groove = TestSignal.drumGroove(bpm: 124, duration: 6, dBFS: 6)
        let driven = TestSignal(sampleRate: groove.sampleRate, channels: groove.channels, samples: groove.samples.map { max(-1, min(1, $0)) })
        for (name, signal) in [("noise", TestSignal(sampleRate: 48_000, channels: 2, samples: noise)), ("groove", driven)] {
            let expected = try Self.reference(signal)
            let measured = Self.measure(signal)
            let samplePeak = 20 * log10(Double(signal.samples.map(abs).max() ?? 0))
            #expect(abs(measured - expected) < 0.05, "\(name): \(measured) dBTP, libebur128 \(expected)")
            #expect(measured > samplePeak + 0.1, "\(name): \(measured) dBTP against a sample peak of \(samplePeak)")
        }
    }

    /// Real recordings are not committed (the corpus's licences are its packages'): this runs on
    /// `../shared/corpus`'s FLACs when they are built (`$NAVISCAN_CORPUS`, default
    /// ~/.cache/naviscan-corpus), and says it skipped otherwise.
    @Test("Real music driven 6 dB into clipping (the corpus's FLACs, when built): within 0.05 dB of libebur128")
    func clippedRealMusic() throws {
        let corpus = (ProcessInfo.processInfo.environment["NAVISCAN_CORPUS"] ?? NSHomeDirectory() + "/.cache/naviscan-corpus") + "/music/flac"
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: corpus)) ?? []).filter { $0.hasSuffix(".flac") }.sorted()
        guard !files.isEmpty else {
            print("skipped: no corpus at \(corpus) (../shared/corpus/build.sh makes it)")
            return
        }
        for name in files.prefix(6) {
            let decoder = try AudioDecoderFactory.open(path: corpus + "/" + name)
            let channels = decoder.info.channels
            // 30 s from the start, driven 6 dB and clipped as a loud master is.
            var samples: [Float] = []
            var block = [Float](repeating: 0, count: 4096 * channels)
            while samples.count < 30 * decoder.info.sampleRate * channels {
                let n = try block.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, maxFrames: 4096) }
                if n == 0 { break }
                samples += block[0..<(n * channels)].map { max(-1, min(1, $0 * 2)) }
            }
            let signal = TestSignal(sampleRate: decoder.info.sampleRate, channels: channels, samples: samples)
            let expected = try Self.reference(signal), measured = Self.measure(signal, blockFrames: 333)
            #expect(abs(measured - expected) < 0.05, "\(name): \(measured) dBTP, libebur128 \(expected)")
        }
    }

    @Test("Silence has no true peak")
    func silence() {
        #expect(Self.measure(.silence(duration: 1, sampleRate: 48_000, channels: 2)) == -.infinity)
    }
}
