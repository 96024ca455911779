import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// The analysis a scan or `analyze` runs, built from resolved settings; every bad value is named
/// where it came from (a flag, a variable, the file or the store).
struct AnalysisSettings: Equatable {
    var visualizer: VisualizerConfig?
    var profile: ProfileConfig?

    init(_ config: EffectiveConfiguration, outputs: (vis: Bool, dj: Bool)) throws {
        visualizer = outputs.vis ? try Self.visualizer(config) : nil
        profile = outputs.dj ? try Self.profile(config) : nil
    }

    /// Which outputs to write, decided per analyser so that naming one never turns the other off:
    /// a value set this run (flag, NAVISCAN_* variable, config file) wins, else the store's
    /// remembered one. An analyser never decided anywhere is on, unless this run named only the
    /// other one (`naviscan ~/Music --vis` on a new library writes frames only, and remembers that).
    /// Turning one off is explicit (`--no-dj`); both off is an error.
    static func outputs(_ config: EffectiveConfiguration) throws -> (vis: Bool, dj: Bool) {
        func given(_ setting: Setting) -> Bool? {
            switch config[setting].source {
            case .flag, .environment, .file: return config.bool(setting)
            case .store, .defaultValue: return nil
            }
        }
        func remembered(_ setting: Setting) -> Bool? {
            if case .store = config[setting].source { return config.bool(setting) }
            return nil
        }
        let (givenVis, givenDJ) = (given(Settings.writeVis), given(Settings.writeDJ))
        let namedOne = givenVis == true || givenDJ == true
        let vis = givenVis ?? remembered(Settings.writeVis) ?? !namedOne
        let dj = givenDJ ?? remembered(Settings.writeDJ) ?? !namedOne
        guard vis || dj else {
            throw CLIError("nothing to write: visualizer frames are off (\(config.origin(Settings.writeVis))) and so are DJ profiles "
                + "(\(config.origin(Settings.writeDJ))); pass --vis or --dj to turn one on")
        }
        return (vis, dj)
    }

    static func visualizer(_ config: EffectiveConfiguration) throws -> VisualizerConfig {
        var v = VisualizerConfig()
        v.fps = config.double(Settings.fps) ?? v.fps
        v.bandCount = config.int(Settings.bands) ?? v.bandCount
        v.minHz = config.double(Settings.minHz) ?? v.minHz
        v.maxHz = config.double(Settings.maxHz) ?? v.maxHz
        let name = config.string(Settings.encoding) ?? v.encoding.name
        guard let encoding = VisSampleEncoding(name: name) else {
            throw CLIError("\(config.origin(Settings.encoding)) must be f32, f16 or u8, not '\(name)'")
        }
        v.encoding = encoding
        do { try v.validate() } catch {
            let origins = [Settings.fps, Settings.bands, Settings.minHz, Settings.maxHz].map { config.origin($0) }
            throw CLIError("\(error) (from \(origins.joined(separator: ", ")))")
        }
        return v
    }

    static func profile(_ config: EffectiveConfiguration) throws -> ProfileConfig {
        var p = ProfileConfig()
        p.referenceLUFS = try config.number(Settings.referenceLUFS)
        p.silence.thresholdDB = try config.number(Settings.silenceThreshold)
        let range = config.string(Settings.bpmRange) ?? ""
        let parts = range.split(separator: "-").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, parts[0] >= 20, parts[1] <= 400, parts[1] >= parts[0] * 2 else {
            throw CLIError("\(config.origin(Settings.bpmRange)) must be MIN-MAX with 20 <= MIN, MAX <= 400 and MAX >= 2 x MIN (one full octave), got '\(range)'")
        }
        p.tempo.minBPM = parts[0]
        p.tempo.maxBPM = parts[1]
        p.loudness.truePeak = config.isOn(Settings.truePeak)
        p.waveform.pointsPerSecond = config.int(Settings.waveformPPS) ?? p.waveform.pointsPerSecond
        p.waveform.bits = config.int(Settings.waveformBits) ?? p.waveform.bits
        p.waveform.perChannel = config.isOn(Settings.waveformPerChannel)
        do { try p.waveform.validate() } catch let error as WaveformError {
            switch error {
            case .pointsPerSecondOutOfRange(let pps): throw CLIError("\(config.origin(Settings.waveformPPS)) must be between 1 and 1000, got \(pps)")
            case .bitsUnsupported(let bits): throw CLIError("\(config.origin(Settings.waveformBits)) must be 8 or 16, got \(bits)")
            default: throw CLIError("\(error)")
            }
        }
        return p
    }

    /// The values a store records for its next plain re-scan: the outputs and their parameters.
    /// The options a plain `naviscan scan` of `library` into `out` runs with under these settings:
    /// the outputs, the analysers' parameters (recorded with the scan), jobs, album grouping and links.
    /// `scan` adds its own flags to them; `status` plans with them, so its "pending" is the scan's.
    static func plainScanOptions(_ config: EffectiveConfiguration, library: String, out: String) throws -> ScanOptions {
        let outputs = try outputs(config)
        let analysis = try AnalysisSettings(config, outputs: outputs)
        var options = ScanOptions(library: library, output: out, visualizer: analysis.visualizer, profile: analysis.profile,
                                  jobs: try config.integer(Settings.jobs))
        options.parameters = AnalysisParameters(recorded(config, outputs: outputs))
        options.albumPerDisc = config.isOn(Settings.albumPerDisc)
        options.followExternalLinks = config.isOn(Settings.followExternalLinks)
        return options
    }

    static func recorded(_ config: EffectiveConfiguration, outputs: (vis: Bool, dj: Bool)) -> [String: SettingValue] {
        var values: [String: SettingValue] = [Settings.writeVis.key: .bool(outputs.vis), Settings.writeDJ.key: .bool(outputs.dj)]
        for setting in Settings.analysis where setting != Settings.writeVis && setting != Settings.writeDJ {
            if let value = config[setting].value { values[setting.key] = value }
        }
        return values
    }
}
