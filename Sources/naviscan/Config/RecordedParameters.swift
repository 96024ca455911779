import Foundation
import NaviscanLibrary

/// The analysis parameters a store records after each scan (in its meta table), so that a plain
/// re-scan analyses the way the last one did rather than falling back to the defaults.
enum RecordedParameters {
    static let metaName = MetaKey.analysisParameters
    static let lastScanMetaName = "last_scan"
    static let failedPathsMetaName = MetaKey.failedPaths

    /// The recorded values of the store at `databasePath`, or nil when there is no store or no record.
    static func read(databasePath: String) -> [String: SettingValue]? {
        guard let text = TrackStore.peekMeta(metaName, path: databasePath),
              let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return nil }
        var values: [String: SettingValue] = [:]
        for setting in Settings.analysis {
            guard let raw = object[setting.key] else { continue }
            switch (setting.kind, raw) {
            case (.bool, let b as Bool): values[setting.key] = .bool(b)
            case (.string, let s as String): values[setting.key] = .string(s)
            case (.int, let n as NSNumber): values[setting.key] = .int(n.intValue)
            case (.double, let n as NSNumber): values[setting.key] = .double(n.doubleValue)
            default: continue
            }
        }
        return values
    }

    static func json(_ values: [String: SettingValue]) -> String {
        let object = values.mapValues(\.jsonObject)
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ values: [String: SettingValue], to store: TrackStore) throws {
        try store.setMeta(metaName, json(values))
    }

    /// "encoding f32 → f16, fps 30 → 60": what differs between two records (keys of either).
    static func differences(from old: [String: SettingValue], to new: [String: SettingValue]) -> [String] {
        Settings.analysis.compactMap { setting in
            let a = old[setting.key], b = new[setting.key]
            guard a != b else { return nil }
            return "\(setting.key) \(a?.description ?? "unset") -> \(b?.description ?? "unset")"
        }
    }

    /// The files that failed in the last scan, including those the store has no row for (a file
    /// that cannot be opened at all): a failure among them is not new.
    static func failedPaths(databasePath: String) -> Set<String> {
        guard let text = TrackStore.peekMeta(failedPathsMetaName, path: databasePath),
              let paths = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return [] }
        return Set(paths)
    }

    static func writeFailedPaths(_ paths: [String], to store: TrackStore) throws {
        let data = try JSONEncoder().encode(paths.sorted())
        try store.setMeta(failedPathsMetaName, String(decoding: data, as: UTF8.self))
    }
}
