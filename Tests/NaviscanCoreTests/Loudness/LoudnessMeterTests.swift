import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Loudness (EBU R128)")
struct LoudnessMeterTests {
    /// A 1 kHz sine on every channel, `segments` of (seconds, dBFS) in turn. Channel levels may differ.
    static func tone(_ segments: [(Double, Double)], rate: Int, channelLevels: [Double] = [0, 0]) -> TestSignal {
        let channels = channelLevels.count
        var samples: [Float] = []
        var n = 0
        for (seconds, dB) in segments {
            let count = Int((seconds * Double(rate)).rounded())
            samples.reserveCapacity(samples.count + count * channels)
            for i in 0..<count {
                let s = sin(2 * Double.pi * 1000 * Double(n + i) / Double(rate))
                for offset in channelLevels { samples.append(Float(s * TestSignal.amplitude(dBFS: dB + offset))) }
            }
            n += count
        }
        return TestSignal(sampleRate: rate, channels: channels, samples: samples)
    }

    static func measure(_ signal: TestSignal, layout: [ChannelPosition]? = nil, blockFrames: Int = 4096) throws -> LoudnessMeter.Result {
        let layout = layout ?? ChannelPosition.defaultLayout(channels: signal.channels)
        let meter = try LoudnessMeter(config: .init(), sampleRate: signal.sampleRate, layout: layout)
        try signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: signal.frameCount, by: blockFrames) {
                let n = min(blockFrames, signal.frameCount - start)
                meter.process(AudioBlock(samples: all.baseAddress! + start * signal.channels, frameCount: n, channels: signal.channels))
            }
            _ = try #require(all.count >= 0)
        }
        return meter.finish()
    }

    @Test("EBU Tech 3341 cases 1–6 within ±0.1 LU", arguments: [48_000, 44_100])
    func tech3341(rate: Int) throws {
        let cases: [(String, TestSignal, Double)] = [
            ("1", Self.tone([(20, -23)], rate: rate), -23),
            ("2", Self.tone([(20, -33)], rate: rate), -33),
            ("3", Self.tone([(10, -36), (60, -23), (10, -36)], rate: rate), -23),
            ("4", Self.tone([(10, -72), (10, -36), (60, -23), (10, -36), (10, -72)], rate: rate), -23),
            ("5", Self.tone([(20, -26), (20.1, -20), (20, -26)], rate: rate), -23),
            // 5.0: L, R at −28, C at −24, Ls, Rs at −30 dBFS (surrounds weighted +1.5 dB).
            ("6", Self.tone([(20, 0)], rate: rate, channelLevels: [-28, -28, -24, -30, -30]), -23),
        ]
        for (name, signal, expected) in cases {
            let result = try Self.measure(signal)
            let lufs = try #require(result.integratedLUFS, "case \(name)")
            #expect(abs(lufs - expected) <= 0.1, "Tech 3341 case \(name) at \(rate) Hz: \(lufs) LUFS")
        }
    }

    @Test("Loudness range of EBU Tech 3342 case 1 (−20 then −30 dBFS) is 10 LU")
    func loudnessRange() throws {
        let result = try Self.measure(Self.tone([(20, -20), (20, -30)], rate: 48_000))
        let lra = try #require(result.loudnessRange)
        #expect(abs(lra - 10) <= 1)
        #expect(abs(result.samplePeakDB! - (-20)) < 0.01)
    }

    /// A groove whose level moves in steps (−30 … −8 dBFS) with a quiet break: both gates and the
    /// range's percentiles matter. Stereo with the right channel 4 dB down.
    static func dynamicGroove(rate: Int) -> TestSignal {
        var mono: [Float] = []
        for (seconds, dB) in [(4.0, -20.0), (7.3, -8), (2.2, -45), (6.1, -14), (3.0, -30), (5.4, -11)] {
            mono += TestSignal.drumGroove(bpm: 124, duration: seconds, firstBeat: 0.1, dBFS: dB, sampleRate: rate).samples
        }
        var stereo: [Float] = []
        stereo.reserveCapacity(2 * mono.count)
        for s in mono { stereo.append(s); stereo.append(s * 0.63) }
        return TestSignal(sampleRate: rate, channels: 2, samples: stereo)
    }

    @Test("Integrated loudness and range equal libebur128's own I and LRA modes, mono to 5.1",
          arguments: [8_000, 11_025, 32_000, 44_100, 48_000, 96_000, 192_000])
    func matchesLibebur128(rate: Int) throws {
        let signals = [Self.dynamicGroove(rate: rate),
                       Self.tone([(4, -36), (8, -23), (0.75, -50), (5, -31)], rate: rate, channelLevels: [-28, -28, -24, 0, -30, -30]),
                       Self.tone([(3, -40), (5, -18), (3, -27)], rate: rate, channelLevels: [0]),
                       Self.tone([(4, -25), (5, -15)], rate: rate, channelLevels: [-3, 0, -9])]
        for (index, signal) in signals.enumerated() {
            let layout = ChannelPosition.defaultLayout(channels: signal.channels)
            // Blocks that never line up with 100 ms, and blocks that do.
            for blockFrames in index == 0 ? [1_000, 4_410, 8_192] : [4_096] {
                let ours = try Self.measure(signal, layout: layout, blockFrames: blockFrames)
                let library = try LoudnessReference.loudness(signal, layout: layout, blockFrames: blockFrames)
                let lufs = try #require(ours.integratedLUFS), reference = try #require(library.integrated)
                #expect(abs(lufs - reference) < 1e-6, "\(signal.channels) ch at \(rate) Hz: \(lufs) vs \(reference)")
                let lra = try #require(ours.loudnessRange), referenceLRA = try #require(library.range)
                #expect(abs(lra - referenceLRA) < 1e-6, "LRA \(signal.channels) ch at \(rate) Hz: \(lra) vs \(referenceLRA)")
                #expect(lra > 1, "the signal is dynamic: \(lra) LU")
            }
        }
    }

    @Test("A loud passage after minutes of digital silence measures as it does alone")
    func afterLongSilence() throws {
        // The filter's state decays toward subnormal numbers in the silence; it must come back exact.
        let tone = Self.tone([(20, -23)], rate: 48_000)
        let silence = [Float](repeating: 0, count: 2 * 48_000 * 180)
        let both = TestSignal(sampleRate: 48_000, channels: 2, samples: tone.samples + silence + tone.samples)
        let ours = try #require(try Self.measure(both).integratedLUFS)
        let library = try #require(try LoudnessReference.loudness(both, layout: [.left, .right]).integrated)
        #expect(abs(ours - library) < 1e-6)
        #expect(abs(ours - (-23)) <= 0.1)
    }

    @Test("Silence and input shorter than one 400 ms block have no loudness (nil, never −∞)")
    func undefinedLoudness() throws {
        let silent = try Self.measure(.silence(duration: 5, channels: 2))
        #expect(silent.integratedLUFS == nil && silent.loudnessRange == nil && silent.samplePeakDB == nil)
        let short = try Self.measure(Self.tone([(0.3, -20)], rate: 44_100))
        #expect(short.integratedLUFS == nil)
        #expect(short.samplePeakDB != nil)
    }

    @Test("The LFE channel of a 5.1 file is excluded, surrounds are weighted")
    func channelMap() throws {
        // Only the LFE carries signal: nothing counts.
        let lfeOnly = Self.tone([(5, -20)], rate: 48_000, channelLevels: [-200, -200, -200, 0, -200, -200])
        #expect(try Self.measure(lfeOnly).integratedLUFS == nil)
        // Only the left surround: +1.5 dB (×1.41) over the same tone on the left front.
        let surround = try Self.measure(Self.tone([(5, -20)], rate: 48_000, channelLevels: [-200, -200, -200, -200, 0, -200]))
        let front = try Self.measure(Self.tone([(5, -20)], rate: 48_000, channelLevels: [0, -200, -200, -200, -200, -200]))
        #expect(abs((surround.integratedLUFS! - front.integratedLUFS!) - 1.49) < 0.05)
    }

    @Test("True peak is measured by default, and not when turned off")
    func truePeak() throws {
        let signal = Self.tone([(2, -6)], rate: 48_000)
        let off = try LoudnessMeter(config: .init(truePeak: false), sampleRate: 48_000, layout: [.left, .right])
        signal.samples.withUnsafeBufferPointer {
            off.process(AudioBlock(samples: $0.baseAddress!, frameCount: signal.frameCount, channels: 2))
        }
        #expect(off.finish().truePeakDB == nil)
        let meter = try LoudnessMeter(config: .init(), sampleRate: 48_000, layout: [.left, .right])
        signal.samples.withUnsafeBufferPointer {
            meter.process(AudioBlock(samples: $0.baseAddress!, frameCount: signal.frameCount, channels: 2))
        }
        let tp = try #require(meter.finish().truePeakDB)
        #expect(tp >= -6.01 && tp < -5.5)
    }
}
