import ArgumentParser
import Foundation

/// `naviscan config`: the effective settings and where each one came from.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Print the effective configuration and where each value comes from.",
        discussion: """
            Every option of scan and serve can be set in three places besides the command line. \
            Precedence, highest first: command-line flags, NAVISCAN_* environment variables, the config \
            file, the analysis parameters a store recorded at its last scan (for scan), the defaults.

            The config file is JSON: --config FILE, else $NAVISCAN_CONFIG, else \
            $XDG_CONFIG_HOME/naviscan/config.json (~/.config/naviscan/config.json). A missing default file \
            is fine; a named one must exist. Keys are the long flag names; serve's own settings nest under \
            "serve". The variable of a key is NAVISCAN_ and the key in capitals with _ for . and -:

            {
              "library": "/srv/music",
              "out": "/var/lib/naviscan",
              "jobs": 4,
              "encoding": "f16",
              "reference-lufs": -18,
              "fail-on": "new",
              "serve": { "host": "0.0.0.0", "port": 8000 }
            }

            Keys:
            \(Settings.all.map { "  \(Settings.column($0.key, \.key)) \(Settings.column($0.environmentName, \.environmentName)) \($0.summary) (\($0.defaultText))" }.joined(separator: "\n"))

            Examples:
              naviscan config
              NAVISCAN_JOBS=2 naviscan config ~/Music --json
            """
    )

    @Argument(help: "A library, to include the parameters its store recorded.")
    var library: String?

    @Flag(help: "Print as JSON: {key: {value, source}}.")
    var json = false

    @OptionGroup var store: StoreOptions

    func run() async throws {
        let flags = store.flags(library: library)
        // Without a library or --out there is no store to read recorded parameters from.
        let loaded = try? await StoreSettings.load(flags: flags, configFile: store.config.path, libraryArgument: library, command: "config")
        let location = loaded?.location
        let settings: EffectiveConfiguration
        if let loaded { settings = loaded.settings } else { settings = try await EffectiveConfiguration.load(flags: flags, configFile: store.config.path) }

        if json {
            try JSONOutput.write(ConfigReport(settings))
            return
        }
        if let file = settings.configFile {
            print("config file: \(file)\(settings.configFileFound ? "" : " (not found; defaults apply)")")
        } else {
            print("config file: none (no HOME or XDG_CONFIG_HOME)")
        }
        for setting in Settings.all {
            let entry = settings[setting]
            var value = entry.value?.description ?? "(\(setting.defaultNote ?? "unset"))"
            if setting.secret, entry.value != nil { value = "(set)" }
            if setting == Settings.out, entry.value == nil, let location { value = location.out + "  (LIBRARY/.naviscan)" }
            print(Settings.column(setting.key, \.key) + " "
                + value.padding(toLength: max(24, value.count), withPad: " ", startingAt: 0) + "  " + entry.source.description)
        }
    }
}

/// `naviscan config --json`: `{key: {value, source}, …, "config_file": {path, found} or null}`.
struct ConfigReport: Encodable {
    struct Entry: Encodable {
        /// null when unset; "(set)" for a secret that is set.
        let value: SettingValue?
        let source: String
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(value, forKey: Key("value"))
            try c.encode(source, forKey: Key("source"))
        }
    }
    struct ConfigFile: Encodable { let path: String; let found: Bool }
    struct Key: CodingKey {
        let stringValue: String
        init(_ key: String) { stringValue = key }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    let entries: [(key: String, entry: Entry)]
    let configFile: ConfigFile?

    init(_ settings: EffectiveConfiguration) {
        entries = Settings.all.map { setting in
            let entry = settings[setting]
            let value = setting.secret && entry.value != nil ? .string("(set)") : entry.value
            return (setting.key, Entry(value: value, source: entry.source.description))
        }
        configFile = settings.configFile.map { ConfigFile(path: $0, found: settings.configFileFound) }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        for (key, entry) in entries { try c.encode(entry, forKey: Key(key)) }
        try c.encode(configFile, forKey: Key("config_file"))
    }
}
