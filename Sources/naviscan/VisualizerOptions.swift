import ArgumentParser

/// The visualizer parameters as flags; unset ones come from the environment, the config file, the
/// store or the defaults (see `Settings`).
struct VisualizerOptions: ParsableArguments {
    @Option(help: ArgumentHelp(Settings.fps.summary + " (\(Settings.fps.defaultText))"))
    var fps: Double?

    @Option(help: ArgumentHelp(Settings.bands.summary + " (\(Settings.bands.defaultText))"))
    var bands: Int?

    @Option(name: .customLong("min-hz"), help: ArgumentHelp(Settings.minHz.summary + " (\(Settings.minHz.defaultText))"))
    var minHz: Double?

    @Option(name: .customLong("max-hz"), help: ArgumentHelp(Settings.maxHz.summary + " (\(Settings.maxHz.defaultText))"))
    var maxHz: Double?

    @Option(help: ArgumentHelp(Settings.encoding.summary + " (\(Settings.encoding.defaultText))"))
    var encoding: String?

    var flags: [String: SettingValue] {
        var values: [String: SettingValue] = [:]
        if let fps { values[Settings.fps.key] = .double(fps) }
        if let bands { values[Settings.bands.key] = .int(bands) }
        if let minHz { values[Settings.minHz.key] = .double(minHz) }
        if let maxHz { values[Settings.maxHz.key] = .double(maxHz) }
        if let encoding { values[Settings.encoding.key] = .string(encoding) }
        return values
    }
}
