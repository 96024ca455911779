import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Visualizer frames")
struct VisualizerFramesTests {
    let config = VisualizerConfig()

    @Test("frameCount = ceil(duration × fps): 240 s at 30 fps is 7,200 frames")
    func frameCountRule() throws {
        #expect(VisFrameAnalyzer.frameCount(duration: 240, fps: 30) == 7_200)
        #expect(VisFrameAnalyzer.frameCount(duration: 0, fps: 30) == 0)
        #expect(VisFrameAnalyzer.frameCount(duration: 1.01, fps: 30) == 31)
        // And the pipeline honours it on real decodes.
        for duration in [1.0, 1.01, 2.3456] {
            let (frames, analysis) = try visualizerFrames(of: .sine(frequency: 440, duration: duration))
            #expect(frames.count == Int((analysis.duration * 30 - 1e-7).rounded(.up)))
        }
    }

    @Test("A 1 kHz sine peaks in the band containing 1 kHz and is near 0 three bands away")
    func sinePeaksInItsBand() throws {
        let (frames, _) = try visualizerFrames(of: .sine(frequency: 1000, dBFS: -6, duration: 2))
        let target = bandIndex(containing: 1000, config: config)
        for frame in frames[10..<50] {
            #expect(frame.firstIndex(of: frame.max()!) == target)
            #expect(frame[target] > 0.95)
            for b in frame.indices where abs(b - target) >= 3 {
                #expect(frame[b] < 0.1, "band \(b) reads \(frame[b])")
            }
        }
    }

    @Test("48 kHz and 44.1 kHz renderings of the same signal give the same frames")
    func rateIndependence() throws {
        func render(_ rate: Int) -> TestSignal {
            TestSignal.sine(frequency: 220, dBFS: -10, duration: 3, sampleRate: rate)
                .mixed(with: .sweep(from: 100, to: 12_000, dBFS: -14, duration: 3, sampleRate: rate))
        }
        let (a, _) = try visualizerFrames(of: render(44_100))
        let (b, _) = try visualizerFrames(of: render(48_000), format: .flac24)
        #expect(a.count == b.count)
        var worst: Float = 0
        for i in 2..<(a.count - 2) {
            for band in 0..<config.bandCount { worst = max(worst, abs(a[i][band] - b[i][band])) }
        }
        // Stated tolerance: 0.03 of full scale (≈ 1.8 dB of the 60 dB display range).
        #expect(worst < 0.03, "largest difference \(worst)")
    }

    @Test("Digital silence gives exactly zero in every band of every frame")
    func silenceIsZero() throws {
        for rate in [8_000, 44_100, 96_000] {
            let (frames, _) = try visualizerFrames(of: .silence(duration: 1.5, sampleRate: rate, channels: 2))
            #expect(frames.count == 45)
            #expect(frames.allSatisfy { $0.allSatisfy { $0 == 0 } })
        }
    }

    @Test("A −40 → −6 dBFS step rises without clipping")
    func stepRisesWithoutClipping() throws {
        let quiet = TestSignal.sine(frequency: 500, dBFS: -40, duration: 4)
        let loud = TestSignal.sine(frequency: 500, dBFS: -6, duration: 4)
        let (frames, _) = try visualizerFrames(of: quiet.appending(loud))
        let band = bandIndex(containing: 500, config: config)
        let before = frames[60..<115].map { $0[band] }
        let after = frames[125..<235].map { $0[band] }
        // Quiet passages still show (the normalizer lifts them) …
        #expect(before.min()! > 0.6)
        // … the loud one reads higher …
        #expect(after.min()! > before.max()! + 0.1)
        // … and nothing clips: no value leaves [0, 1], and the frames at the step have no more bands
        // at full scale than the settled loud part (a lagging gain would pin several bands at 1 there).
        for frame in frames { #expect(frame.allSatisfy { $0 >= 0 && $0 <= 1 }) }
        func saturated(_ frame: [Float]) -> Int { frame.filter { $0 >= 0.999 }.count }
        let settled = frames[200..<235].map(saturated).max()!
        #expect(settled <= 2)
        for i in 118..<126 { #expect(saturated(frames[i]) <= settled, "frame \(i)") }
    }

    @Test("Frame i is centred at i / fps seconds")
    func framesAreCentred() throws {
        // One click at exactly 1.000 s; frame 30 is the one centred on it.
        var signal = TestSignal.silence(duration: 2)
        let click = TestSignal.clicks(bpm: 60, duration: 0.05)
        for (i, s) in click.samples.enumerated() { signal.samples[44_100 + i] = s }
        let (frames, _) = try visualizerFrames(of: signal)
        let energy = frames.map { $0.reduce(0, +) }
        let loudest = energy.indices.max { energy[$0] < energy[$1] }!
        #expect(loudest == 30 || loudest == 31, "loudest frame \(loudest)")
        #expect(energy[20] == 0 && energy[40] == 0)
    }
}

extension TestSignal {
    /// Sample-wise sum with another signal of the same shape.
    func mixed(with other: TestSignal) -> TestSignal {
        TestSignal(sampleRate: sampleRate, channels: channels, samples: zip(samples, other.samples).map { $0 + $1 })
    }
}
