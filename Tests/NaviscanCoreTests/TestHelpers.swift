import Foundation
import Logging
import NaviscanCore
import NaviscanTestSupport

/// Collects frames in memory instead of writing a file.
final class MemoryFrameSink: VisFrameSink {
    let bandCount: Int
    var frames: [[Float]] = []

    init(bandCount: Int) { self.bandCount = bandCount }

    func append(_ frame: UnsafePointer<Float>) throws {
        frames.append(Array(UnsafeBufferPointer(start: frame, count: bandCount)))
    }
}

let testLogger = Logger(label: "naviscan-tests")

/// A scratch directory removed when the value is released.
final class ScratchDirectory {
    let path: String
    init() throws { path = try FixturePaths.makeTemporaryDirectory() }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

/// Writes `signal` in `format`, decodes it through the real decoders and returns the visualizer frames.
func visualizerFrames(of signal: TestSignal, format: AudioFileWriter.Format = .wavFloat,
                      config: VisualizerConfig = VisualizerConfig()) throws -> (frames: [[Float]], analysis: TrackAnalysis) {
    let scratch = try ScratchDirectory()
    let path = scratch.file("signal.\(format.fileExtension)")
    try AudioFileWriter.write(signal, to: path, format: format)
    let decoder = try AudioDecoderFactory.open(path: path)
    let sink = MemoryFrameSink(bandCount: config.bandCount)
    let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: config), logger: testLogger)
    let analysis = try analyzer.analyze(decoder: decoder, visSink: sink)
    return (sink.frames, analysis)
}

/// Decodes a whole file into interleaved samples (test-sized files only).
func decodeAll(_ path: String) throws -> (info: AudioStreamInfo, samples: [Float]) {
    let decoder = try AudioDecoderFactory.open(path: path)
    let channels = decoder.info.channels
    var samples: [Float] = []
    var block = [Float](repeating: 0, count: 4096 * channels)
    while true {
        let n = try block.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, maxFrames: 4096) }
        if n == 0 { break }
        samples.append(contentsOf: block[0..<(n * channels)])
    }
    return (decoder.info, samples)
}

/// Index of the band whose edges contain `frequency`.
func bandIndex(containing frequency: Double, config: VisualizerConfig) -> Int {
    for b in 0..<config.bandCount
    where BandMapper.edge(b + 1, bandCount: config.bandCount, minHz: config.minHz, maxHz: config.maxHz) > frequency {
        return b
    }
    return config.bandCount - 1
}
