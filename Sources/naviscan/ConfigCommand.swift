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
            var object: [String: Any] = [:]
            for setting in Settings.all {
                let entry = settings[setting]
                let value: Any = setting.secret && entry.value != nil ? "(set)" : entry.value?.jsonObject ?? NSNull()
                object[setting.key] = ["value": value, "source": entry.source.description]
            }
            object["config_file"] = settings.configFile.map { ["path": $0, "found": settings.configFileFound] as [String: Any] } ?? NSNull()
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
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
