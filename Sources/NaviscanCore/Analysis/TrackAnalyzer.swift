import Logging

/// What to compute for a track. Stages not asked for cost nothing.
public struct AnalysisOptions: Sendable {
    /// Visualizer frames; nil to skip them.
    public var visualizer: VisualizerConfig?
    /// Frames per decoded block: the unit every stage processes.
    public var blockFrames: Int = 4096

    public init(visualizer: VisualizerConfig? = nil) {
        self.visualizer = visualizer
    }
}

/// The result of one track's single decode pass.
public struct TrackAnalysis: Sendable {
    public let stream: AudioStreamInfo
    /// Sample frames actually decoded: the authoritative length.
    public let decodedFrames: Int64
    /// Frames written to the visualizer output, when it was asked for.
    public let visFrameCount: Int?
    /// Wall-clock seconds for the whole pass (decode and every stage).
    public let elapsed: Double

    public var duration: Double { Double(decodedFrames) / Double(stream.sampleRate) }
    /// Seconds of audio analysed per second of wall time.
    public var realtimeFactor: Double { elapsed > 0 ? duration / elapsed : .infinity }
}

/// Owns one decode loop and feeds every requested stage from it: the file is decoded once.
public final class TrackAnalyzer {
    public let options: AnalysisOptions
    private let logger: Logger

    public init(options: AnalysisOptions, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Decodes `path` once; writes visualizer frames to `visOutput` when the options ask for them.
    public func analyze(path: String, visOutput: String? = nil) throws -> TrackAnalysis {
        let decoder = try AudioDecoderFactory.open(path: path)
        var writer: VisFrameWriter?
        if let config = options.visualizer, let visOutput {
            writer = try VisFrameWriter(path: visOutput, config: config)
        }
        let result = try analyze(decoder: decoder, visSink: writer)
        try writer?.finish(duration: result.duration, sourceSampleRate: result.stream.sampleRate,
                           sourceChannels: result.stream.channels)
        logger.debug("analysed", metadata: [
            "path": "\(path)", "codec": "\(result.stream.codec)",
            "duration": "\(result.duration)", "x_realtime": "\(Int(result.realtimeFactor))",
        ])
        return result
    }

    /// The decode loop over an open decoder; frames go to `visSink` when visualizer options are set.
    public func analyze(decoder: AudioDecoder, visSink: VisFrameSink?) throws -> TrackAnalysis {
        let started = ContinuousClock.now
        let info = decoder.info
        let blockFrames = options.blockFrames
        let block = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames * info.channels)
        defer { block.deallocate() }

        var visualizer: VisualizerPipeline?
        if let config = options.visualizer, let visSink {
            visualizer = try VisualizerPipeline(config: config, source: info, maxBlockFrames: blockFrames, sink: visSink)
        }

        var decoded: Int64 = 0
        while true {
            let n = try decoder.read(into: block, maxFrames: blockFrames)
            if n == 0 { break }
            decoded += Int64(n)
            let audio = AudioBlock(samples: block, frameCount: n, channels: info.channels)
            try visualizer?.process(audio)
        }
        let duration = Double(decoded) / Double(info.sampleRate)
        let frames = try visualizer?.finish(duration: duration)
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return TrackAnalysis(stream: info, decodedFrames: decoded, visFrameCount: frames, elapsed: seconds)
    }
}
