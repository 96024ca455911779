import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Silence edges")
struct SilenceDetectorTests {
    static func detect(_ signal: TestSignal, threshold: Double = -60) -> SilenceDetector.Result {
        let detector = SilenceDetector(config: .init(thresholdDB: threshold), sampleRate: signal.sampleRate, channels: signal.channels)
        signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: signal.frameCount, by: 1000) {   // odd block size on purpose
                let n = min(1000, signal.frameCount - start)
                detector.process(AudioBlock(samples: all.baseAddress! + start * signal.channels, frameCount: n, channels: signal.channels))
            }
        }
        return detector.finish()
    }

    @Test("Leading and trailing digital silence are found to the sample")
    func sampleExact() {
        let rate = 44_100
        let lead = TestSignal.silence(duration: 1.234, sampleRate: rate, channels: 2)
        let tone = TestSignal.sine(frequency: 440, dBFS: -20, duration: 3, sampleRate: rate, channels: 2, phase: .pi / 2)
        let tail = TestSignal.silence(duration: 2.5, sampleRate: rate, channels: 2)
        let result = Self.detect(lead.appending(tone).appending(tail))
        // silence_end: where the LEADING silence ends; silence_start: where the TRAILING silence begins.
        #expect(result.silenceEnd == Double(lead.frameCount) / Double(rate))
        #expect(abs(result.silenceStart - Double(lead.frameCount + tone.frameCount) / Double(rate)) <= 1.0 / Double(rate) + 1e-9)
        #expect(!result.allSilent)
    }

    @Test("The sample peak is the largest magnitude on any channel, wherever it sits; 0 for digital silence")
    func samplePeak() {
        var signal = TestSignal.sine(frequency: 440, dBFS: -20, duration: 2, sampleRate: 44_100, channels: 2)
        // One negative spike on the right channel, inside a block and a 10 ms window.
        signal.samples[2 * 51_234 + 1] = -0.75
        #expect(Self.detect(signal).samplePeak == 0.75)
        #expect(Self.detect(.silence(duration: 1, sampleRate: 44_100, channels: 2)).samplePeak == 0)
    }

    @Test("A fade-out's trailing silence starts where it drops below the threshold for good")
    func fadeOut() {
        let rate = 48_000
        // 2 s at −6 dBFS, then a linear fade to 0 over 4 s: the amplitude crosses −60 dBFS (0.001) at
        // 4 × (1 − 0.001 / 0.501) s into the fade.
        var samples: [Float] = []
        let a = TestSignal.amplitude(dBFS: -6)
        for i in 0..<(6 * rate) {
            let t = Double(i) / Double(rate)
            let gain = t < 2 ? 1 : max(0, 1 - (t - 2) / 4)
            samples.append(Float(a * gain * sin(2 * Double.pi * 300 * t)))
        }
        let signal = TestSignal(sampleRate: rate, channels: 1, samples: samples)
        let crossing = 2 + 4 * (1 - 0.001 / a)
        let result = Self.detect(signal)
        #expect(abs(result.silenceStart - crossing) < 0.005, "\(result.silenceStart) vs \(crossing)")
        #expect(result.silenceEnd < 0.001)
    }

    @Test("A track that opens and ends on a steady loud tone has no silence at either end")
    func steadyLoudEdges() {
        // Steady at both ends like a noise floor, but loud: it is sound, not a floor.
        func tone(_ dB: Double, _ seconds: Double) -> TestSignal {
            .sine(frequency: 220, dBFS: dB, duration: seconds, sampleRate: 44_100, channels: 2, phase: .pi / 2)
        }
        let result = Self.detect(tone(-20, 2).appending(tone(-6, 3)).appending(tone(-20, 2)))
        #expect(result.silenceEnd == 0)
        #expect(abs(result.silenceStart - 7) < 0.001)
    }

    @Test("An all-silent track reports 0 and 0")
    func allSilent() {
        let result = Self.detect(.silence(duration: 3, channels: 2))
        #expect(result.allSilent && result.silenceEnd == 0 && result.silenceStart == 0)
        // Sound below the threshold is silence too.
        let quiet = Self.detect(.sine(frequency: 440, dBFS: -70, duration: 2))
        #expect(quiet.allSilent)
        #expect(!Self.detect(.sine(frequency: 440, dBFS: -70, duration: 2), threshold: -80).allSilent)
    }

    @Test("A noise floor that crosses the threshold does not end the silence early")
    func noiseFloor() {
        let rate = 44_100
        var state: UInt64 = 12_345
        func gaussian() -> Double {   // Box–Muller on a fixed LCG: deterministic
            state = state &* 6_364_136_223_846_793_005 &+ 1
            let u1 = max(Double(state >> 11) / Double(1 << 53), 1e-12)
            state = state &* 6_364_136_223_846_793_005 &+ 1
            let u2 = Double(state >> 11) / Double(1 << 53)
            return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        }
        let noise = TestSignal.amplitude(dBFS: -71)   // RMS: peaks reach about −59 dBFS
        let music = TestSignal.sine(frequency: 300, dBFS: -12, duration: 4, sampleRate: rate, phase: .pi / 2)
        let lead = 2 * rate, tail = 3 * rate
        var samples = [Float](repeating: 0, count: lead + music.frameCount + tail)
        for i in music.samples.indices { samples[lead + i] = music.samples[i] }
        for i in samples.indices { samples[i] += Float(noise * gaussian()) }
        let result = Self.detect(TestSignal(sampleRate: rate, channels: 1, samples: samples))
        #expect(abs(result.silenceEnd - 2) < 0.015, "silence_end \(result.silenceEnd)")
        #expect(abs(result.silenceStart - 6) < 0.015, "silence_start \(result.silenceStart)")
    }
}
