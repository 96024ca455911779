import Foundation
import NaviscanLibrary
import NaviscanCore
import NaviscanStore

/// A value of a setting, typed as the config file and the flags give it.
/// A setting's value: the same scalars the store records its analysis parameters as.
typealias SettingValue = ParameterValue


/// One option naviscan reads from a flag, a NAVISCAN_* variable or the config file. The key is the
/// config file's key (a dot nests: `serve.port` is `{"serve": {"port": …}}`), the flag is its last
/// part (`--port`), the variable is NAVISCAN_ and the key in capitals with `_` for `.` and `-`.
struct Setting: Sendable, Hashable {
    enum Kind: Sendable { case string, int, double, bool }

    let key: String
    let kind: Kind
    /// nil when the default depends on another setting (out: LIBRARY/.naviscan) or there is none.
    let defaultValue: SettingValue?
    /// What the default means when `defaultValue` is nil.
    let defaultNote: String?
    let summary: String
    /// A secret (the access token): `naviscan config` says where it comes from, never its value.
    let secret: Bool
    /// The values a number may take, and the unit its message names ("" for none).
    let range: ClosedRange<Double>?
    let unit: String

    init(_ key: String, _ kind: Kind, default defaultValue: SettingValue?, note: String? = nil, secret: Bool = false,
         range: ClosedRange<Double>? = nil, unit: String = "", _ summary: String) {
        self.key = key
        self.kind = kind
        self.defaultValue = defaultValue
        self.defaultNote = note
        self.secret = secret
        self.range = range
        self.unit = unit
        self.summary = summary
    }

    /// "must be between 1 and 256, got 300" when `value` is outside the table's range, else nil.
    func outOfRange(_ value: Double) -> String? {
        guard let range, !(value.isFinite && range.contains(value)) else { return nil }
        func text(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
        return "must be between \(text(range.lowerBound)) and \(text(range.upperBound))\(unit.isEmpty ? "" : " " + unit), got \(text(value))"
    }

    var environmentName: String {
        "NAVISCAN_" + String(key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    var flag: String { "--" + (key.split(separator: ".").last.map(String.init) ?? key) }

    /// "--token, NAVISCAN_SERVE_TOKEN or 'serve.token' in the config file": every way to set it.
    var howToSet: String { "\(flag), \(environmentName) or '\(key)' in the config file" }

    /// "(default: 30)" for help texts, from the one table below.
    var defaultText: String {
        if let defaultValue { return "default: \(defaultValue)" }
        return defaultNote.map { "default: \($0)" } ?? "no default"
    }

    static func == (a: Setting, b: Setting) -> Bool { a.key == b.key }
    func hash(into hasher: inout Hasher) { hasher.combine(key) }
}

/// Every setting and its one default. The analysis defaults are the analysers' own
/// (`VisualizerConfig()`, `ProfileConfig()`), so the CLI cannot drift from them.
enum Settings {
    private static let vis = VisualizerConfig()
    private static let profile = ProfileConfig()

    static let library = Setting("library", .string, default: nil, note: "none; give it on the command line",
                                 "The music library folder.")
    static let out = Setting("out", .string, default: nil, note: "LIBRARY/" + OutputLayout.defaultDirectoryName,
                             "Where results go: naviscan.db, profiles/, vis/.")
    static let jobs = Setting("jobs", .int, default: .int(Defaults.jobs), range: 1...256,
                              "Worker threads of a scan (one per core).")
    static let writeVis = Setting("vis", .bool, default: nil, note: "on, unless only --dj is named on a new library",
                                  "Write visualizer frames.")
    static let writeDJ = Setting("dj", .bool, default: nil, note: "on, unless only --vis is named on a new library",
                                 "Write DJ profiles.")
    static let failOn = Setting("fail-on", .string, default: .string(FailurePolicy.new.rawValue),
                                "Which failures make a scan exit with status 1: new, any or never.")
    static let fps = Setting("fps", .double, default: .double(vis.fps), "Visualizer frames per second of audio.")
    static let bands = Setting("bands", .int, default: .int(vis.bandCount), "Log-spaced frequency bands per frame.")
    static let minHz = Setting("min-hz", .double, default: .double(vis.minHz), "Lower edge of the lowest band, in Hz.")
    static let maxHz = Setting("max-hz", .double, default: .double(vis.maxHz), "Upper edge of the highest band, in Hz.")
    static let encoding = Setting("encoding", .string, default: .string(vis.encoding.name),
                                  "Stored frame value type: f32, f16 or u8.")
    static let referenceLUFS = Setting("reference-lufs", .double, default: .double(profile.referenceLUFS), range: -70...0, unit: "LUFS",
                                       "Loudness the gain targets: gain_db = reference - lufs (ReplayGain 2.0: -18).")
    static let silenceThreshold = Setting("silence-threshold", .double, default: .double(profile.silence.thresholdDB), range: -120 ... -10, unit: "dBFS",
                                          "Silence threshold in dBFS (sample peak across channels).")
    static let bpmRange = Setting("bpm-range", .string,
                                  default: .string("\(Int(profile.tempo.minBPM))-\(Int(profile.tempo.maxBPM))"),
                                  "Range reported tempi lie in, as MIN-MAX BPM.")
    static let truePeak = Setting("true-peak", .bool, default: .bool(profile.loudness.truePeak),
                                  "Measure the true peak (dBTP), the ReplayGain peak players clip by; costs a few per cent of a scan.")
    static let waveformPPS = Setting("waveform-pps", .int, default: .int(profile.waveform.pointsPerSecond),
                                     "Seek-bar waveform points (min/max pairs) per second of audio.")
    static let waveformBits = Setting("waveform-bits", .int, default: .int(profile.waveform.bits),
                                      "Seek-bar waveform resolution: 8 or 16 bits.")
    static let waveformPerChannel = Setting("waveform-per-channel", .bool, default: .bool(profile.waveform.perChannel),
                                            "One waveform lane per channel instead of the mono mix.")
    static let albumPerDisc = Setting(AnalysisParameters.albumPerDiscKey, .bool, default: .bool(false),
                                      "Album gain per disc: each disc of a multi-disc album is its own album.")
    static let followExternalLinks = Setting("follow-external-links", .bool, default: .bool(false),
                                             "Follow folder symlinks that lead outside the library (a library of links to other disks).")
    static let host = Setting("serve.host", .string, default: .string(Defaults.host),
                              "Address `serve` binds; loopback unless told otherwise.")
    static let port = Setting("serve.port", .int, default: .int(Defaults.port), range: 0...65_535, "TCP port of `serve`.")
    static let serveJobs = Setting("serve.jobs", .int, default: .int(1), range: 1...64,
                                   "Worker threads of `serve` for POST /visualizer/precompute and background scans.")
    static let watch = Setting("serve.watch", .bool, default: .bool(true),
                               "Keep the library analysed while serving: watch it and re-scan what changes.")
    static let rescanInterval = Setting("serve.rescan-interval", .string, default: .string(Defaults.rescanInterval),
                                        "Full re-scan of the library while serving, as 30m, 6h, 1d; 0 for none.")
    static let stream = Setting("serve.stream", .bool, default: .bool(true), "Serve the audio files (GET /stream).")
    static let corsOrigin = Setting("serve.cors-origin", .string, default: nil, note: "no CORS headers",
                                    "The origin allowed to call the API from a browser page (`*` for any).")
    static let token = Setting("serve.token", .string, default: nil, note: "none on loopback; on another address, OUT/token, made at first start",
                               secret: true, "Access token for the audio, the web page and writes (at least 16 characters).")
    static let protectCompanion = Setting("serve.protect-companion", .bool, default: .bool(false),
                                          "Require the token for the companion's reads too (profiles, frames, waveforms, /ws/push).")
    static let basePath = Setting("serve.base-path", .string, default: nil, note: "none",
                                  "Path prefix of a reverse proxy that serves naviscan under a sub-path, e.g. /naviscan.")
    static let navidromeMusicFolder = Setting("serve.navidrome-music-folder", .string, default: nil, note: "none",
                                              "Navidrome's music folder, as its real paths start (/music): such paths find their tracks.")
    static let navidromeDatabase = Setting("serve.navidrome-db", .string, default: nil, note: "none",
                                           "Navidrome's database (navidrome.db), read only: the song IDs its clients send find their tracks.")
    static let logLevel = Setting("serve.log-level", .string, default: .string("info"),
                                  "What `serve` logs: trace, debug, info (each request), notice, warning, error or critical.")

    /// The analysis parameters a store records, so a plain re-scan reuses them.
    static let analysis: [Setting] = [writeVis, writeDJ, fps, bands, minHz, maxHz, encoding,
                                      referenceLUFS, silenceThreshold, bpmRange, truePeak, albumPerDisc,
                                      waveformPPS, waveformBits, waveformPerChannel]
    static let all: [Setting] = [library, out, jobs, failOn, followExternalLinks] + analysis + [host, port, serveJobs, watch, rescanInterval, stream, corsOrigin,
                                                                                                 token, protectCompanion, basePath, navidromeMusicFolder, navidromeDatabase, logLevel]

    /// `text` padded to the longest of the settings' `field` (keys and variable names are never cut).
    static func column(_ text: String, _ field: KeyPath<Setting, String>) -> String {
        let width = all.map { $0[keyPath: field].count }.max() ?? 0
        return text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
    }
}

/// `--fail-on`: which failures turn a scan's exit status to 1.
enum FailurePolicy: String, CaseIterable, Sendable {
    /// Failures first seen in this run (files that failed before are listed, not counted).
    case new
    case any
    case never
}
