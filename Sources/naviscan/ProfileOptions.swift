import ArgumentParser

/// The DJ-profile parameters as flags. Negative values are taken as values (`--reference-lufs -14`).
struct ProfileOptions: ParsableArguments {
    @Option(name: .customLong("reference-lufs"), parsing: .unconditional,
            help: ArgumentHelp(Settings.referenceLUFS.summary + " (\(Settings.referenceLUFS.defaultText))", valueName: "lufs"))
    var referenceLUFS: Double?

    @Option(name: .customLong("silence-threshold"), parsing: .unconditional,
            help: ArgumentHelp(Settings.silenceThreshold.summary + " (\(Settings.silenceThreshold.defaultText))", valueName: "dbfs"))
    var silenceThreshold: Double?

    @Option(name: .customLong("bpm-range"), help: ArgumentHelp(Settings.bpmRange.summary + " (\(Settings.bpmRange.defaultText))", valueName: "min-max"))
    var bpmRange: String?

    @Flag(name: .customLong("true-peak"), inversion: .prefixedNo, help: ArgumentHelp(Settings.truePeak.summary + " (\(Settings.truePeak.defaultText))"))
    var truePeak: Bool?

    @Option(name: .customLong("waveform-pps"), help: ArgumentHelp(Settings.waveformPPS.summary + " (\(Settings.waveformPPS.defaultText))", valueName: "n"))
    var waveformPPS: Int?

    @Option(name: .customLong("waveform-bits"), help: ArgumentHelp(Settings.waveformBits.summary + " (\(Settings.waveformBits.defaultText))", valueName: "8|16"))
    var waveformBits: Int?

    @Flag(name: .customLong("waveform-per-channel"), inversion: .prefixedNo, help: ArgumentHelp(Settings.waveformPerChannel.summary + " (\(Settings.waveformPerChannel.defaultText))"))
    var waveformPerChannel: Bool?

    @Flag(name: .customLong("album-per-disc"), inversion: .prefixedNo, help: ArgumentHelp(Settings.albumPerDisc.summary + " (\(Settings.albumPerDisc.defaultText))"))
    var albumPerDisc: Bool?

    var flags: [String: SettingValue] {
        var values: [String: SettingValue] = [:]
        if let referenceLUFS { values[Settings.referenceLUFS.key] = .double(referenceLUFS) }
        if let silenceThreshold { values[Settings.silenceThreshold.key] = .double(silenceThreshold) }
        if let bpmRange { values[Settings.bpmRange.key] = .string(bpmRange) }
        if let truePeak { values[Settings.truePeak.key] = .bool(truePeak) }
        if let waveformPPS { values[Settings.waveformPPS.key] = .int(waveformPPS) }
        if let waveformBits { values[Settings.waveformBits.key] = .int(waveformBits) }
        if let waveformPerChannel { values[Settings.waveformPerChannel.key] = .bool(waveformPerChannel) }
        if let albumPerDisc { values[Settings.albumPerDisc.key] = .bool(albumPerDisc) }
        return values
    }
}

/// Where a command finds a scan's results, and the settings file; shared by scan, serve, status, show, config.
struct StoreOptions: ParsableArguments {
    @Option(name: [.customShort("o"), .customLong("out"), .customLong("data")],
            help: ArgumentHelp("The scan's output directory (default: LIBRARY/.naviscan; --data is the same).", valueName: "dir"))
    var out: String?

    @OptionGroup var config: ConfigFileOption

    /// The flags for `library` and `out`, when given.
    func flags(library: String?) -> [String: SettingValue] {
        var values: [String: SettingValue] = [:]
        if let library { values[Settings.library.key] = .string(library) }
        if let out { values[Settings.out.key] = .string(out) }
        return values
    }
}

/// `--config FILE`, shared by every command that reads settings.
struct ConfigFileOption: ParsableArguments {
    @Option(name: .customLong("config"), help: ArgumentHelp(
        "Settings file (JSON; default $XDG_CONFIG_HOME/naviscan/config.json or ~/.config/naviscan/config.json, or $NAVISCAN_CONFIG).",
        valueName: "file"))
    var path: String?
}
