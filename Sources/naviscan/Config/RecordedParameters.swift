import Foundation
import NaviscanLibrary
import NaviscanStore

/// The analysis parameters a store recorded at its last scan (`LibraryStore.recordScan`), read as
/// settings, so that a plain re-scan analyses the way the last one did rather than falling back to
/// the defaults.
enum RecordedParameters {
    /// The recorded values of the store at `databasePath`, or nil when there is no store or no record.
    /// Each value is read as its setting's kind (a whole number recorded for a decimal setting is one).
    static func read(databasePath: String) -> [String: SettingValue]? {
        guard let recorded = LibraryStore.peek(path: databasePath)?.parameters else { return nil }
        var values: [String: SettingValue] = [:]
        for setting in Settings.analysis {
            guard let raw = recorded.values[setting.key] else { continue }
            switch (setting.kind, raw) {
            case (.bool, .bool), (.string, .string), (.int, .int), (.double, .double): values[setting.key] = raw
            case (.double, .int(let n)): values[setting.key] = .double(Double(n))
            case (.int, .double(let d)) where d == d.rounded(): values[setting.key] = .int(Int(d))
            default: continue
            }
        }
        return values
    }

    /// "encoding f32 -> f16, fps 30 -> 60": what differs between two records (keys of either).
    static func differences(from old: [String: SettingValue], to new: [String: SettingValue]) -> [String] {
        Settings.analysis.compactMap { setting in
            let a = old[setting.key], b = new[setting.key]
            guard a != b else { return nil }
            return "\(setting.key) \(a?.description ?? "unset") -> \(b?.description ?? "unset")"
        }
    }
}
