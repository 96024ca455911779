import Logging

/// The result of one track's single decode pass.
public struct TrackAnalysis: Sendable {
    public let stream: AudioStreamInfo
    /// Sample frames actually decoded: the authoritative length.
    public let decodedFrames: Int64
    /// Frames written to the visualizer output, when it was asked for.
    public let visFrameCount: Int?
    public let loudness: LoudnessMeter.Result?
    public let silence: SilenceDetector.Result?
    public let tempo: TempoEstimator.Result?
    /// The seek-bar waveform, with the profile.
    public let waveform: WaveformData?
    /// The similarity features (with the profile, when asked for); nil for too little sound.
    public let features: SonicFeatures?
    /// The key (with the profile, when asked for); nil without tonal sound to read.
    public let key: KeyDetector.Result?
    /// What the key decision read (for fitting the key model: scripts/key-model).
    public let keyFeatures: KeyFeatures?
    /// Wall-clock seconds for the whole pass (decode and every stage).
    public let elapsed: Double

    public var duration: Double { Double(decodedFrames) / Double(stream.sampleRate) }
    /// Seconds of audio analysed per second of wall time.
    public var realtimeFactor: Double { elapsed > 0 ? duration / elapsed : .infinity }
}

/// Owns one decode loop and feeds every requested stage from it: the file is decoded once.
///
///     decoder ─┬─ LoudnessMeter      (native rate, every channel)
///              ├─ SilenceDetector    (native rate, peak across channels)
///              ├─ WaveformAnalyzer   (native rate, min/max/RMS per point)
///              └─ AnalysisRateStream (mono, resampled) ─┬─ VisFrameAnalyzer → frame sink
///                                                       └─ OnsetEnvelope (at its own rate) → summary → TempoEstimator
///                                                                             ├─ SonicFeatureAccumulator → SonicFeatures
///                                                                             └─ KeyChroma → (with the beat grid) KeyDetector
///
/// Without visualizer options the mono stream runs at the onset stage's own rate (or twice it, which
/// the stage halves itself, more cheaply than a general resampler), so it is converted once.
public final class TrackAnalyzer {
    public let options: AnalysisOptions
    private let logger: Logger
    /// Sees the onset stage's band levels (scripts/tempo-model); nil in normal use.
    private let onsetBandObserver: OnsetBandObserver?

    public init(options: AnalysisOptions, logger: Logger, onsetBandObserver: OnsetBandObserver? = nil) {
        self.options = options
        self.logger = logger
        self.onsetBandObserver = onsetBandObserver
    }

    /// Decodes `path` once; writes visualizer frames to `visOutput` when the options ask for them.
    /// `isCancelled` is polled once per block; when it returns true the analysis stops with
    /// `AnalysisCancelled` and nothing is written. `onDecoded` hears of each decoded block (seconds).
    public func analyze(path: String, visOutput: String? = nil, durability: AtomicFile.Durability = .immediate,
                        isCancelled: () -> Bool = { false }, onDecoded: (Double) -> Void = { _ in }) throws -> TrackAnalysis {
        let decoder = try AudioDecoderFactory.open(path: path)
        var writer: VisFrameWriter?
        if let config = options.visualizer, let visOutput {
            writer = try VisFrameWriter(path: visOutput, config: config, durability: durability)
        }
        let result: TrackAnalysis
        do { result = try analyze(decoder: decoder, visSink: writer, isCancelled: isCancelled, onDecoded: onDecoded) } catch let error as LoudnessError {
            // The loop does not know the path; every message a user sees names the file.
            throw DecodeError.unsupportedStream(path: path, reason: "\(error)")
        } catch let error as ResamplerError {
            throw DecodeError.unsupportedStream(path: path, reason: "\(error)")
        }
        try writer?.finish(duration: result.duration, sourceSampleRate: result.stream.sampleRate,
                           sourceChannels: result.stream.channels)
        logger.debug("analysed", metadata: [
            "path": "\(path)", "codec": "\(result.stream.codec)",
            "duration": "\(result.duration)", "x_realtime": "\(Int(result.realtimeFactor))",
        ])
        return result
    }

    /// The decode loop over an open decoder; frames go to `visSink` when visualizer options are set.
    public func analyze(decoder: AudioDecoder, visSink: VisFrameSink?, isCancelled: () -> Bool = { false },
                        onDecoded: (Double) -> Void = { _ in }) throws -> TrackAnalysis {
        let started = ContinuousClock.now
        let info = decoder.info
        let blockFrames = options.blockFrames
        let block = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames * info.channels)
        defer { block.deallocate() }

        let visFrames = try options.visualizer.flatMap { config in try visSink.map { _ in try VisFrameAnalyzer(config: config) } }
        let profile = options.profile
        let stages = options.profileStages
        let measuresLevel = profile != nil && !stages.isDisjoint(with: [.silence, .loudness])
        let measuresTempo = profile != nil && !stages.isDisjoint(with: [.tempo, .beatGrid])
        let measuresFeatures = profile != nil && stages.contains(.features)
        let measuresKey = profile != nil && stages.contains(.key)
        let prior = options.prior
        // The silence detector reads every sample's magnitude: the sample peak comes from it.
        // Below the rate BS.1770's filter is defined for, loudness is measured on a resampled copy.
        let levelProfile = measuresLevel ? profile : nil
        let loudnessResampler = try levelProfile.flatMap { _ in
            info.sampleRate < LoudnessMeter.minimumSampleRate
                ? try Resampler(inputRate: info.sampleRate, outputRate: LoudnessMeter.resampledRate,
                                maxInputFrames: blockFrames, channels: info.channels)
                : nil
        }
        let loudness = try levelProfile.map {
            try LoudnessMeter(config: $0.loudness, sampleRate: loudnessResampler?.outputRate ?? info.sampleRate,
                              layout: info.channelLayout, measuresSamplePeak: false)
        }
        let silence = levelProfile.map { SilenceDetector(config: $0.silence, sampleRate: info.sampleRate, channels: info.channels) }
        let waveform = (stages.contains(.waveform) ? profile : nil).map {
            WaveformAnalyzer(config: $0.waveform, sampleRate: info.sampleRate, channels: info.channels)
        }
        let onsetProfile = measuresTempo || measuresFeatures || measuresKey ? profile : nil
        // With visualizer options the mono stream runs at their rate even when no frames are written
        // (a partial re-analysis), so the onsets, and all that comes from them, equal a full pass's.
        let monoRate = options.visualizer != nil ? options.analysisRate
            : onsetProfile.map { Self.onsetInputRate(source: info.sampleRate, $0.onsets) } ?? options.analysisRate
        let onsets = try onsetProfile.map { try OnsetEnvelope(config: $0.onsets, inputRate: monoRate, observer: onsetBandObserver,
                                                              measuresFeatures: measuresFeatures, measuresKey: measuresKey) }
        let mono = (visFrames != nil || onsets != nil)
            ? try AnalysisRateStream(source: info, rate: monoRate, maxBlockFrames: blockFrames) : nil

        var decoded: Int64 = 0
        while true {
            if isCancelled() { throw AnalysisCancelled() }
            let n = try decoder.read(into: block, maxFrames: blockFrames)
            if n == 0 { break }
            decoded += Int64(n)
            onDecoded(Double(n) / Double(info.sampleRate))
            let audio = AudioBlock(samples: block, frameCount: n, channels: info.channels)
            if let loudness, let loudnessResampler {
                loudnessResampler.process(UnsafeBufferPointer(start: block, count: n * info.channels)) { resampled in
                    loudness.process(AudioBlock(samples: resampled.baseAddress!, frameCount: resampled.count / info.channels, channels: info.channels))
                }
            } else {
                loudness?.process(audio)
            }
            silence?.process(audio)
            waveform?.process(audio)
            try mono?.process(audio) { samples in
                if let visFrames, let visSink { try visFrames.process(samples, into: visSink) }
                onsets?.process(samples)
            }
        }
        let duration = Double(decoded) / Double(info.sampleRate)
        var frames: Int?
        if let visFrames, let visSink { frames = try visFrames.finish(duration: duration, into: visSink) }
        let silenceResult = silence?.finish()
        let loudnessResult = loudness?.finish(samplePeak: silenceResult?.samplePeak)
        // What a stage that does not run would have said comes from the stored results.
        let soundStart = measuresLevel ? silenceResult?.silenceEnd ?? 0 : prior?.silenceEnd ?? 0
        let soundEnd = measuresLevel ? silenceResult?.silenceStart : prior?.silenceStart
        let lufs = measuresLevel ? loudnessResult?.integratedLUFS : prior?.lufs
        let loudnessRange = measuresLevel ? loudnessResult?.loudnessRange : prior?.loudnessRange
        let tempo = both(measuresTempo ? profile : nil, onsets).map { config, envelope in
            TempoEstimator(config: config.tempo).estimate(envelope.finish(), soundStart: soundStart, soundEnd: soundEnd, lufs: lufs)
        }
        let features = both(profile, onsets?.features).flatMap { config, accumulator in
            accumulator.finish(hopSeconds: 1 / config.onsets.frameRate,
                               bpm: measuresTempo ? tempo?.bpm : prior?.bpm,
                               tempoConfidence: measuresTempo ? tempo?.confidence ?? 0 : prior?.bpmConfidence ?? 0,
                               loudnessRange: loudnessRange)
        }
        let grid = measuresTempo ? tempo?.grid : prior?.beatGrid
        let key = onsets?.key.flatMap { KeyDetector.decide($0, grid: grid, soundStart: soundStart, soundEnd: soundEnd) }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return TrackAnalysis(stream: info, decodedFrames: decoded, visFrameCount: frames,
                             loudness: loudnessResult, silence: silenceResult,
                             tempo: tempo, waveform: waveform?.finish(), features: features,
                             key: key?.result, keyFeatures: key?.features, elapsed: seconds)
    }
}

extension TrackAnalyzer {
    /// The rate the mono stream runs at for the onset stage alone.
    static func onsetInputRate(source: Int, _ onsets: OnsetEnvelope.Config) -> Int {
        source == 2 * onsets.rate ? source : onsets.rate
    }
}

private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

/// The analysis was stopped on request (Ctrl-C during a scan); nothing was written.
public struct AnalysisCancelled: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "analysis cancelled" }
}
