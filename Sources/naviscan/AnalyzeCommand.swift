import ArgumentParser
import Foundation
import NaviscanCore

/// `naviscan analyze FILE --vis OUT.vis`: one track, one decode, a one-line summary.
struct AnalyzeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analyse one audio file in a single decode pass.",
        discussion: """
            Without an output option the file is only decoded: the summary then gives the decode-only speed. \
            The analysis parameters come from the flags, NAVISCAN_* variables, the config file or the defaults.

            Examples:
              naviscan analyze song.flac --dj > song.json
              naviscan analyze song.mp3 --vis song.vis --encoding u8 --fps 60
            """
    )

    @Argument(help: "The audio file (MP3, FLAC, WAV, AIFF, Ogg, M4A/AAC/ALAC, WMA, APE, WavPack, Musepack, TTA, MKA), identified by content.")
    var file: String

    @Option(name: .customLong("vis"), help: "Write visualizer frames (a VisFrameBuffer file) here.")
    var visOutput: String?

    @Flag(name: .customLong("dj"), help: "Print the DJ profile (loudness, silence edges, tempo) as JSON on standard output.")
    var dj = false

    @Option(name: .customLong("dump-onset-bands"),
            help: ArgumentHelp("With --dj: write the tempo stage's band levels here (Float32) for scripts/tempo-model.", visibility: .hidden))
    var onsetBandDump: String?

    @Option(name: .customLong("dump-timbre-bands"),
            help: ArgumentHelp("With --dj: write the similarity features' log band powers here (Float32, 24 per measured spectrum) for scripts/similarity-model.", visibility: .hidden))
    var timbreBandDump: String?

    @Option(name: .customLong("dump-key-features"),
            help: ArgumentHelp("With --dj: write what the key decision reads here (JSON) for scripts/key-model.", visibility: .hidden))
    var keyFeatureDump: String?

    @OptionGroup var config: ConfigFileOption
    @OptionGroup(title: "Visualizer") var visualizer: VisualizerOptions
    @OptionGroup(title: "DJ profile") var profile: ProfileOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if onsetBandDump != nil, !dj { throw ValidationError("--dump-onset-bands needs --dj: the band levels come from the tempo stage") }
        if timbreBandDump != nil, !dj { throw ValidationError("--dump-timbre-bands needs --dj: the similarity features are measured with the profile") }
        if timbreBandDump != nil, onsetBandDump != nil { throw ValidationError("--dump-timbre-bands and --dump-onset-bands: one dump at a time") }
        if keyFeatureDump != nil, !dj { throw ValidationError("--dump-key-features needs --dj: the key is part of the profile") }
    }

    func run() async throws {
        let logger = logging.makeLogger()
        let settings = try await EffectiveConfiguration.load(settings: Settings.analysis,
                                                             flags: visualizer.flags.merging(profile.flags) { a, _ in a },
                                                             configFile: config.path)
        let analysis = try AnalysisSettings(settings, outputs: (visOutput != nil, dj))
        let options = AnalysisOptions(visualizer: analysis.visualizer, profile: analysis.profile)
        do {
            let dump = try onsetBandDump.map { try OnsetBandDump(path: $0) }
                ?? timbreBandDump.map { try OnsetBandDump(path: $0, stream: .timbreBands) }
            let analyzer = TrackAnalyzer(options: options, logger: logger, onsetBandObserver: dump)
            let result = try analyzer.analyze(path: file, visOutput: visOutput)
            try dump?.close()
            if let timbreBandDump {
                // The stored vector beside the bands, so the fitting scripts see what a scan stores.
                let object: [String: Any] = ["features": result.features?.values ?? NSNull(), "features_version": SonicFeatures.version]
                try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: timbreBandDump + ".json"))
            }
            if let keyFeatureDump {
                let features = result.keyFeatures
                let object: [String: Any] = [
                    "names": KeyFeatures.names, "values": features?.values ?? [], "clarity": features?.clarity ?? 0, "pitch_classes": features?.pitchClasses ?? 0,
                    "tuning": result.key?.tuning ?? 0, "key_version": KeyDetector.version, "chroma36": features?.chroma36 ?? [],
                ]
                try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: keyFeatureDump))
            }
            let summary = Self.summary(file: file, result: result, visOutput: visOutput)
            if let config = options.profile {
                // stdout carries only the JSON, so it can be piped; the summary goes to stderr.
                let name = URL(fileURLWithPath: file).lastPathComponent
                let json = try TrackProfile(relativePath: name, analysis: result, config: config,
                                            tags: TagReader.read(path: file)).jsonData()
                FileHandle.standardOutput.write(json + Data("\n".utf8))
                FileHandle.standardError.write(Data((summary + "\n").utf8))
            } else {
                print(summary)
            }
        } catch {
            throw CLIError(UserMessage.describe(error), code: 1)
        }
    }

    static func summary(file: String, result: TrackAnalysis, visOutput: String?) -> String {
        let s = result.stream
        let channels = s.channels == 1 ? "mono" : s.channels == 2 ? "stereo" : "\(s.channels) ch"
        var line = "\(file): \(s.codec) \(s.sampleRate) Hz \(channels) \(formatDuration(result.duration))"
        if let frames = result.visFrameCount, let visOutput { line += ", \(frames) frames → \(visOutput)" }
        line += String(format: ", %.1fx realtime", result.realtimeFactor)
        return line
    }
}

func formatDuration(_ seconds: Double) -> String {
    guard seconds.isFinite, seconds < 1e9 else { return "\(seconds) s" }
    let total = max(seconds, 0)
    let minutes = Int(total / 60)
    return String(format: "%d:%06.3f", minutes, total - Double(minutes) * 60)
}
