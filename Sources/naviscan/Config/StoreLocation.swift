import Foundation
import NaviscanLibrary

/// The library and the output directory a command works on: the argument or the `library`
/// setting, and the `out` setting or LIBRARY/.naviscan.
struct StoreLocation {
    let library: String?
    let out: String

    var databasePath: String { OutputLayout(root: out).databasePath }

    /// Throws the one "no store" message unless a scan has written a store here.
    func requireStore() throws {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw CLIError("no store at \(out); run `naviscan scan \(library ?? "LIBRARY")` first (or pass --out DIR where a scan wrote its results)")
        }
    }

    static func resolve(libraryArgument: String?, config: EffectiveConfiguration, command: String) throws -> StoreLocation {
        let library = (libraryArgument ?? config.string(Settings.library)).map(standardized)
        if let out = config.string(Settings.out) { return StoreLocation(library: library, out: standardized(out)) }
        guard let library else {
            throw CLIError("which library? Give it as `naviscan \(command) ~/Music`, or --out DIR for the results of a scan, or set 'library' in the config file (see `naviscan config`)")
        }
        return StoreLocation(library: library, out: OutputLayout.defaultRoot(library: library))
    }

    static func standardized(_ path: String) -> String {
        var expanded = path
        if path == "~" || path.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] {
            expanded = home + path.dropFirst()
        }
        return URL(fileURLWithPath: expanded).standardizedFileURL.path
    }
}

/// What a command working on a store reads: where the store is, the parameters it recorded at its
/// last scan, and every setting resolved with them.
struct StoreSettings {
    let location: StoreLocation
    let recorded: [String: SettingValue]?
    let settings: EffectiveConfiguration

    /// The output directory decides which store's recorded parameters apply, so it is resolved
    /// first, from the other sources.
    static func load(flags: [String: SettingValue], configFile: String?, libraryArgument: String?, command: String) async throws -> StoreSettings {
        let plain = try await EffectiveConfiguration.load(flags: flags, configFile: configFile)
        let location = try StoreLocation.resolve(libraryArgument: libraryArgument, config: plain, command: command)
        let recorded = RecordedParameters.read(databasePath: location.databasePath)
        let settings = try await EffectiveConfiguration.load(flags: flags, configFile: configFile,
                                                             stored: recorded.map { (location.databasePath, $0) })
        return StoreSettings(location: location, recorded: recorded, settings: settings)
    }
}
