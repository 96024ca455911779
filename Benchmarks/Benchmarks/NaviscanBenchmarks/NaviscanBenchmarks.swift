import Benchmark
import Foundation
import Logging
import NaviscanCore
import NaviscanTestSupport

/// Seconds of audio processed per second of wall time, reported per benchmark.
let xRealtime = BenchmarkMetric.custom("x-realtime", polarity: .prefersLarger, useScalingFactor: false)

/// Generated once per run: 4 minutes of stereo 44.1 kHz (a sweep over a click track) as FLAC, plus the
/// committed demo MP3.
final class Material: @unchecked Sendable {
    static let shared = Material()
    nonisolated(unsafe) static var cleanupDirectory: String?
    let directory: String
    let flac: String
    let mp3 = FixturePaths.fixture("demo/groove_120bpm.mp3")
    /// The committed 3 s fixtures of the libavformat backend (Fixtures/make-formats.sh).
    let aac = FixturePaths.fixture("formats/aac_itunsmpb.m4a")
    let alac = FixturePaths.fixture("formats/alac.m4a")
    let signal: TestSignal
    let mono48k: [Float]

    private init() {
        directory = try! FixturePaths.makeTemporaryDirectory(prefix: "naviscan-bench")
        // The harness runs benchmarks in their own processes: each removes its material on exit.
        Material.cleanupDirectory = directory
        atexit { if let dir = Material.cleanupDirectory { try? FileManager.default.removeItem(atPath: dir) } }
        let sweep = TestSignal.sweep(from: 40, to: 16_000, dBFS: -12, duration: 240, channels: 2)
        let clicks = TestSignal.clicks(bpm: 124, duration: 240, dBFS: -8, channels: 2)
        signal = TestSignal(sampleRate: 44_100, channels: 2, samples: zip(sweep.samples, clicks.samples).map { $0 + $1 })
        flac = directory + "/four-minutes.flac"
        try! AudioFileWriter.write(signal, to: flac, format: .flac16)
        mono48k = TestSignal.sweep(from: 40, to: 16_000, dBFS: -12, duration: 240, sampleRate: 48_000).samples
    }
}


func decodeAll(_ path: String) throws -> Double {
    let decoder = try AudioDecoderFactory.open(path: path)
    let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * decoder.info.channels)
    defer { block.deallocate() }
    var frames = 0
    while case let n = try decoder.read(into: block, maxFrames: 4096), n > 0 { frames += n }
    return Double(frames) / Double(decoder.info.sampleRate)
}

/// Runs `body` (which returns seconds of audio processed) under measurement and reports x-realtime.
func measureRealtime(_ benchmark: Benchmark, _ body: () throws -> Double) throws {
    let start = ContinuousClock.now
    var audio = 0.0
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations { audio += try body() }
    benchmark.stopMeasurement()
    let wall = start.duration(to: .now)
    let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) * 1e-18
    benchmark.measurement(xRealtime, Int(audio / seconds))
}

let benchmarks: @Sendable () -> Void = {
    // Mallocs are held to the counts in Thresholds/ (`make bench-check`): a stage that allocated per
    // block or per frame would add thousands per 4-minute track. Time is reported, never checked.
    // Names avoid spaces and slashes: the tool looks thresholds up by the raw name.
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident, xRealtime],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        maxDuration: .seconds(10),
        // `make bench-check` asks for 3 (NAVISCAN_BENCH_ITERATIONS): malloc counts do not vary between
        // runs, so more iterations only cost time; `make bench` takes 10 for its timings.
        maxIterations: ProcessInfo.processInfo.environment["NAVISCAN_BENCH_ITERATIONS"].flatMap(Int.init) ?? 10,
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 100])]
    )
    let material = Material.shared
    let logger = Logger(label: "bench")

    Benchmark("decode.flac-4min", configuration: .init(setup: { _ = Material.shared }, teardown: nil)) { b in
        try measureRealtime(b) { try decodeAll(material.flac) }
    }
    Benchmark("decode.mp3-demo") { b in
        try measureRealtime(b) { try decodeAll(material.mp3) }
    }
    Benchmark("decode.aac-3s") { b in
        try measureRealtime(b) { try decodeAll(material.aac) }
    }
    Benchmark("decode.alac-3s") { b in
        try measureRealtime(b) { try decodeAll(material.alac) }
    }
    Benchmark("stage.downmix+resample-48k-to-44.1k") { b in
        try measureRealtime(b) {
            let resampler = try Resampler(inputRate: 48_000, outputRate: 44_100, maxInputFrames: 4096)
            var produced = 0
            try material.mono48k.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 4096) {
                    let chunk = UnsafeBufferPointer(rebasing: all[start..<min(start + 4096, all.count)])
                    resampler.process(chunk) { produced += $0.count }
                }
            }
            blackHole(produced)
            return 240
        }
    }
    Benchmark("stage.spectrum+bands+normalize") { b in
        let mono = Array(material.signal.samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        try measureRealtime(b) {
            let analyzer = try VisFrameAnalyzer(config: VisualizerConfig())
            let sink = DiscardingFrameSink()
            try mono.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 4096) {
                    try analyzer.process(UnsafeBufferPointer(rebasing: all[start..<min(start + 4096, all.count)]), into: sink)
                }
            }
            try analyzer.finish(duration: 240, into: sink)
            return 240
        }
    }
    Benchmark("stage.frame-file-write-7200-frames") { b in
        let frame = [Float](repeating: 0.5, count: 64)
        try measureRealtime(b) {
            let writer = try VisFrameWriter(path: material.directory + "/write.vis", config: VisualizerConfig())
            try frame.withUnsafeBufferPointer { f in for _ in 0..<7_200 { try writer.append(f.baseAddress!) } }
            try writer.finish(duration: 240, sourceSampleRate: 44_100, sourceChannels: 2)
            return 240
        }
    }
    /// Feeds the 4-minute stereo signal to `process` in 4096-frame blocks.
    func feedBlocks(_ process: (AudioBlock) -> Void) {
        material.signal.samples.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: material.signal.frameCount, by: 4096) {
                let n = min(4096, material.signal.frameCount - start)
                process(AudioBlock(samples: all.baseAddress! + start * 2, frameCount: n, channels: 2))
            }
        }
    }
    // The loudness stage as scans run it (true peak on) and without the true peak: its cost.
    for truePeak in [true, false] {
        Benchmark(truePeak ? "stage.loudness" : "stage.loudness-without-true-peak") { b in
            try measureRealtime(b) {
                let meter = try LoudnessMeter(config: .init(truePeak: truePeak), sampleRate: 44_100, layout: [.left, .right])
                feedBlocks { meter.process($0) }
                blackHole(meter.finish())
                return 240
            }
        }
    }
    Benchmark("stage.silence-edges") { b in
        try measureRealtime(b) {
            let detector = SilenceDetector(config: .init(), sampleRate: 44_100, channels: 2)
            feedBlocks { detector.process($0) }
            blackHole(detector.finish())
            return 240
        }
    }
    for features in [true, false] {
        Benchmark(features ? "stage.onsets+tempo+features" : "stage.onsets+tempo") { b in
            let mono = Array(material.signal.samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
            try measureRealtime(b) {
                let envelope = try OnsetEnvelope(inputRate: 44_100, measuresFeatures: features)
                mono.withUnsafeBufferPointer { all in
                    for start in stride(from: 0, to: all.count, by: 4096) {
                        envelope.process(UnsafeBufferPointer(rebasing: all[start..<min(start + 4096, all.count)]))
                    }
                }
                blackHole(TempoEstimator(config: .init()).estimate(envelope.finish()))
                blackHole(envelope.features?.finish(hopSeconds: 0.01, bpm: 124, tempoConfidence: 1, loudnessRange: nil))
                return 240
            }
        }
    }
    // The key stage beside the onset stage it rides on: with stage.onsets+tempo, its cost alone.
    Benchmark("stage.onsets+tempo+key") { b in
        let mono = Array(material.signal.samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        try measureRealtime(b) {
            let envelope = try OnsetEnvelope(inputRate: 44_100, measuresKey: true)
            mono.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 4096) {
                    envelope.process(UnsafeBufferPointer(rebasing: all[start..<min(start + 4096, all.count)]))
                }
            }
            let tempo = TempoEstimator(config: .init()).estimate(envelope.finish())
            blackHole(envelope.key.flatMap { KeyDetector.decide($0, grid: tempo.grid, soundStart: 0, soundEnd: nil) }?.result)
            return 240
        }
    }
    // The tempo decision alone on the 4-minute track's onset summary (made once, outside the
    // measurement): the beats tracked at every candidate's period to choose the level, then the
    // whole track's beat grid. Beside track.vis+dj.flac-4min it is the beat tracker's share of a scan.
    Benchmark("stage.tempo-decision+beat-grid") { b in
        let mono = Array(material.signal.samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        let envelope = try OnsetEnvelope(inputRate: 44_100)
        mono.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: 4096) {
                envelope.process(UnsafeBufferPointer(rebasing: all[start..<min(start + 4096, all.count)]))
            }
        }
        let summary = envelope.finish()
        try measureRealtime(b) {
            blackHole(TempoEstimator(config: .init()).estimate(summary))
            return 240
        }
    }
    // One "more like this" query over 100,000 tracks (brute force, one core: the timbre Gaussians'
    // divergence and mutual proximity); the index is built once, outside the measurement, as the
    // server builds it once per change of the store.
    Benchmark("similarity.query-100k", configuration: .init(timeUnits: .milliseconds)) { b in
        var generator = SeededGenerator(seed: 29)
        let rows = (0..<100_000).map { i in
            (i, SonicFeatures(descriptors: (0..<SonicFeatures.descriptorCount).map { _ in Float.random(in: -3...3, using: &generator) },
                              timbreMean: (0..<TimbreGaussian.order).map { _ in Float.random(in: -0.5...0.5, using: &generator) },
                              timbreVariance: Float.random(in: 0.005...0.05, using: &generator)))
        }
        let normalisation = SimilarityNormalisation.identity(changeSequence: 0)
        let index = SimilarityIndex(rows: rows, normalisation: normalisation)
        b.startMeasurement()
        for query in b.scaledIterations { blackHole(index.nearest(to: query * 7919 % 100_000, count: 25)) }
        b.stopMeasurement()
    }
    // The similarity features' and the key's cost, side by side: the DJ pass with and without each.
    for left in [nil, AnalysisStage.features, .key] {
        Benchmark(left.map { "track.dj-without-\($0.rawValue).flac-4min" } ?? "track.dj.flac-4min") { b in
            var options = AnalysisOptions(profile: ProfileConfig())
            if let left { options.profileStages.remove(left) }
            let analyzer = TrackAnalyzer(options: options, logger: logger)
            try measureRealtime(b) { try analyzer.analyze(path: material.flac).duration }
        }
    }
    for (name, path) in [("flac-4min", material.flac), ("mp3-demo", material.mp3), ("aac-3s", material.aac), ("alac-3s", material.alac)] {
        Benchmark("track.vis+dj.\(name)") { b in
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig(), profile: ProfileConfig()), logger: logger)
            try measureRealtime(b) {
                try analyzer.analyze(path: path, visOutput: material.directory + "/full.vis").duration
            }
        }
        Benchmark("track.vis.\(name)") { b in
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig()), logger: logger)
            try measureRealtime(b) {
                try analyzer.analyze(path: path, visOutput: material.directory + "/track.vis").duration
            }
        }
    }
    serverBenchmarks()
}
