import Configuration
import Foundation
import SystemPackage

/// Where a setting's value came from, highest precedence first.
enum SettingSource: Equatable, Sendable, CustomStringConvertible {
    case flag
    case environment(String)
    case file(String)
    /// The parameters the store recorded at its last scan.
    case store(String)
    case defaultValue

    var description: String {
        switch self {
        case .flag: return "command line"
        case .environment(let name): return "environment \(name)"
        case .file(let path): return "config file \(path)"
        case .store(let path): return "store \(path)"
        case .defaultValue: return "default"
        }
    }

    var isDefault: Bool { self == .defaultValue }
}

/// Every setting resolved: command-line flags over NAVISCAN_* variables over the config file over
/// the store's recorded analysis parameters over the defaults. Read through swift-configuration:
/// one provider per source, asked in that order, so each value knows where it came from.
struct EffectiveConfiguration: Sendable {
    struct Entry: Sendable {
        let value: SettingValue?
        let source: SettingSource
    }

    /// The config file in use (nil: none), and whether it exists.
    let configFile: String?
    let configFileFound: Bool
    private(set) var entries: [String: Entry]

    subscript(_ setting: Setting) -> Entry { entries[setting.key] ?? Entry(value: setting.defaultValue, source: .defaultValue) }

    func string(_ s: Setting) -> String? {
        if case .string(let v)? = self[s].value { return v }
        return nil
    }

    func int(_ s: Setting) -> Int? {
        switch self[s].value {
        case .int(let v)?: return v
        default: return nil
        }
    }

    func double(_ s: Setting) -> Double? {
        switch self[s].value {
        case .double(let v)?: return v
        case .int(let v)?: return Double(v)
        default: return nil
        }
    }

    func bool(_ s: Setting) -> Bool? {
        if case .bool(let v)? = self[s].value { return v }
        return nil
    }

    /// A yes/no setting: its value from the first source that has one, else the table's default.
    func isOn(_ s: Setting) -> Bool { requireDefault(s); return bool(s) ?? false }

    /// A text setting the table gives a default.
    func text(_ s: Setting) -> String { requireDefault(s); return string(s) ?? "" }

    /// A number, checked against the table's range; the message names where the value came from.
    func number(_ s: Setting) throws -> Double {
        requireDefault(s)
        let value = double(s) ?? .nan
        if let problem = s.outOfRange(value) { throw CLIError("\(origin(s)) \(problem)") }
        return value
    }

    /// A whole number, checked against the table's range.
    func integer(_ s: Setting) throws -> Int {
        requireDefault(s)
        let value = int(s) ?? 0
        if let problem = s.outOfRange(Double(value)) { throw CLIError("\(origin(s)) \(problem)") }
        return value
    }

    /// The typed accessors above read settings whose value always exists (the table's default at
    /// least); one without a default is read as an optional (`bool`, `string`, `int`, `double`).
    private func requireDefault(_ s: Setting) {
        precondition(s.defaultValue != nil, "\(s.key) has no default: read it with bool/string/int/double")
    }

    /// "--fps (from NAVISCAN_FPS)": how an error message names a setting, so the user finds it.
    func origin(_ s: Setting) -> String {
        switch self[s].source {
        case .flag, .defaultValue: return s.flag
        case .environment(let name): return "\(name) (environment)"
        case .file(let path): return "'\(s.key)' in \(path)"
        case .store(let path): return "'\(s.key)' recorded in \(path)"
        }
    }

    /// The default config file: $XDG_CONFIG_HOME/naviscan/config.json, else ~/.config/naviscan/config.json.
    static func defaultConfigFile(environment: [String: String]) -> String? {
        if let dir = environment["XDG_CONFIG_HOME"], dir.hasPrefix("/") { return dir + "/naviscan/config.json" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.config/naviscan/config.json" }
        return nil
    }

    /// Resolves `settings`. `configFile` is --config; without it NAVISCAN_CONFIG, then the default
    /// file (which may be missing; a named one may not). `stored` holds the store's recorded values.
    static func load(settings: [Setting] = Settings.all, flags: [String: SettingValue], configFile: String?,
                     environment: [String: String] = ProcessInfo.processInfo.environment,
                     stored: (path: String, values: [String: SettingValue])? = nil) async throws -> EffectiveConfiguration {
        let named = configFile ?? environment["NAVISCAN_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        let filePath = named ?? defaultConfigFile(environment: environment)
        var fileFound = false
        var fileProvider: FileProvider<JSONSnapshot>?
        if let filePath {
            var isDirectory: ObjCBool = false
            fileFound = FileManager.default.fileExists(atPath: filePath, isDirectory: &isDirectory)
            if named != nil && !fileFound {
                throw CLIError("the config file \(filePath) does not exist; create it (see `naviscan help config`) or leave out --config")
            }
            if fileFound {
                guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: filePath) else {
                    throw CLIError("cannot read the config file \(filePath): it is a directory or not readable")
                }
                do {
                    fileProvider = try await FileProvider<JSONSnapshot>(filePath: FilePath(filePath))
                } catch {
                    throw CLIError("the config file \(filePath) is not valid JSON (a JSON object of settings is expected; see `naviscan help config`)")
                }
            }
        }
        let environmentProvider = EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "naviscan")
        let flagProvider = InMemoryProvider(name: "flags", values: configValues(flags))

        var entries: [String: Entry] = [:]
        for setting in settings {
            let key = AbsoluteConfigKey(setting.key.split(separator: ".").map(String.init))
            if let v = try lookup(setting, key, in: flagProvider, from: "the command line") {
                entries[setting.key] = Entry(value: v, source: .flag)
            } else if let v = try lookup(setting, key, in: environmentProvider, from: setting.environmentName) {
                entries[setting.key] = Entry(value: v, source: .environment(setting.environmentName))
            } else if let fileProvider, let filePath, let v = try lookup(setting, key, in: fileProvider, from: filePath) {
                entries[setting.key] = Entry(value: v, source: .file(filePath))
            } else if let stored, let v = stored.values[setting.key] {
                entries[setting.key] = Entry(value: v, source: .store(stored.path))
            } else {
                entries[setting.key] = Entry(value: setting.defaultValue, source: .defaultValue)
            }
        }
        if fileProvider != nil, let filePath { try rejectUnknownKeys(path: filePath) }
        return EffectiveConfiguration(configFile: filePath, configFileFound: fileFound, entries: entries)
    }

    private static func configValues(_ flags: [String: SettingValue]) -> [AbsoluteConfigKey: ConfigValue] {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            let content: ConfigContent
            switch value {
            case .string(let s): content = .string(s)
            case .int(let i): content = .int(i)
            case .double(let d): content = .double(d)
            case .bool(let b): content = .bool(b)
            }
            values[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = ConfigValue(content, isSecret: false)
        }
        return values
    }

    private static func lookup(_ setting: Setting, _ key: AbsoluteConfigKey, in provider: some ConfigProvider, from place: String) throws -> SettingValue? {
        let types: [ConfigType]
        switch setting.kind {
        case .string: types = [.string]
        case .int: types = [.int]
        case .double: types = [.double, .int]
        case .bool: types = [.bool]
        }
        var mismatch = false
        for type in types {
            do {
                guard let content = try provider.value(forKey: key, type: type).value?.content else { return nil }
                switch content {
                case .string(let s): return .string(s)
                case .int(let i): return setting.kind == .double ? .double(Double(i)) : .int(i)
                case .double(let d): return .double(d)
                case .bool(let b): return .bool(b)
                default: mismatch = true
                }
            } catch {
                mismatch = true
            }
        }
        guard mismatch else { return nil }
        let expected: String
        switch setting.kind {
        case .string: expected = "text"
        case .int: expected = "a whole number"
        case .double: expected = "a number"
        case .bool: expected = "true or false"
        }
        throw CLIError("\(setting.key) in \(place) must be \(expected)")
    }

    /// A misspelt key in the file would silently do nothing; name it instead.
    private static func rejectUnknownKeys(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CLIError("the config file \(path) must hold a JSON object of settings (see `naviscan help config`)")
        }
        var keys: [String] = []
        func collect(_ object: [String: Any], prefix: String) {
            for (name, value) in object {
                let key = prefix + name
                if let nested = value as? [String: Any] { collect(nested, prefix: key + ".") } else { keys.append(key) }
            }
        }
        collect(object, prefix: "")
        let known = Set(Settings.all.map(\.key))
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw CLIError("unknown setting '\(unknown)' in the config file \(path); known settings: \(Settings.all.map(\.key).joined(separator: ", "))")
        }
    }
}
