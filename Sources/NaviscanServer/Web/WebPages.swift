import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// The web page's files: Mustache templates, a script per page and one style sheet, shipped as the
/// NaviscanServer target's resources (`Web/Assets`) and installed to `PREFIX/share/naviscan/web`.
package struct WebAssets: Sendable {
    let directory: String
    let templates: MustacheLibrary
    /// The static files served under /static/, by name.
    let files: [String: (contentType: String, bytes: [UInt8])]

    static let templateNames = ["library", "track"]
    static let staticTypes = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]

    /// Where the assets are: NAVISCAN_WEB_DIR, the installed share/naviscan/web beside bin/, or the
    /// build's resource bundle beside the executable. Nil when none holds them.
    package static func locate() -> String? {
        let executable = Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent().path ?? ""
        var candidates = [
            executable + "/../share/naviscan/web",
            executable + "/naviscan_NaviscanServer.resources/Assets",
            executable + "/naviscan_NaviscanServer.bundle/Contents/Resources/Assets",
            executable + "/naviscan_NaviscanServer.bundle/Assets",
        ]
        if let override = ProcessInfo.processInfo.environment["NAVISCAN_WEB_DIR"] { candidates.insert(override, at: 0) }
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/library.mustache") }
    }

    /// Reads every template and static file once, at start-up.
    init(directory: String) throws {
        self.directory = directory
        var templates = MustacheLibrary()
        for name in Self.templateNames {
            let text = try String(contentsOfFile: directory + "/" + name + ".mustache", encoding: .utf8)
            try templates.register(text, named: name)
        }
        self.templates = templates
        var files: [String: (String, [UInt8])] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            guard let type = Self.staticTypes[(name as NSString).pathExtension] else { continue }
            files[name] = (type, [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))))
        }
        self.files = files
    }

    func page(_ template: String, _ context: [String: Any]) -> Response {
        let html = templates.render(context, withTemplate: template) ?? ""
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    func file(named name: String) throws -> Response {
        guard let file = files[name] else { throw APIError.notFound("no such file: /static/\(name)") }
        return Response(status: .ok, headers: [.contentType: file.contentType, .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }
}

/// What the pages show, in words and numbers a person reads.
enum WebText {
    static func duration(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "" }
        let total = Int(saturating: seconds.rounded())
        return total >= 3600 ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }

    /// `2026-11-23 07:42:56 UTC`
    static func time(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date).replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }

    static func number(_ value: Double?, digits: Int = 1, unit: String = "") -> String {
        guard let value, value.isFinite else { return "" }
        return String(format: "%.\(digits)f", value) + unit
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(count), unit = 0
        while value >= 1000 && unit < units.count - 1 { value /= 1000; unit += 1 }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    /// A query value, percent-encoded for a link.
    static func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~/"))) ?? ""
    }

    /// One row of the library table; the `*_sort` values order the columns numerically.
    static func row(_ track: TrackRecord) -> [String: Any] {
        [
            "path": track.relativePath, "link": query(track.relativePath),
            "artist": track.tags?.artist ?? "", "title": track.tags?.title ?? "", "album": track.tags?.album ?? "",
            "duration": duration(track.duration), "duration_sort": track.duration ?? -1,
            "bpm": number(track.bpm), "bpm_sort": track.bpm ?? -1,
            "lufs": number(track.lufs), "lufs_sort": track.lufs ?? -999,
            "gain": number(track.gainDB, unit: " dB"), "gain_sort": track.gainDB ?? -999,
            "codec": track.codec ?? "", "failed": track.status == .failed, "missing": track.missingSince != nil,
        ]
    }

    /// The profile's fields as label/value pairs, in the order a person reads them.
    /// "480 beats in 1 run, 4 beats to the bar, confidence 0.87".
    static func beatGrid(_ grid: BeatGrid?) -> String {
        guard let grid, grid.beatCount > 0 else { return "no beats" }
        let runs = grid.segments.count == 1 ? "steady" : "\(grid.segments.count) runs of steady tempo"
        let bars = grid.meter.map { "\($0) beats to the bar" } ?? "bars unclear"
        return String(format: "%d beats (%@), %@, confidence %.2f", grid.beatCount, runs, bars, grid.confidence)
    }

    static func profileFields(_ profile: TrackProfile) -> [[String: String]] {
        func num(_ value: Double?, _ digits: Int = 2, _ unit: String = "") -> String { number(value, digits: digits, unit: unit) }
        var fields: [(String, String)] = [
            ("Title", profile.tags?.title ?? ""), ("Artist", profile.tags?.artist ?? ""), ("Album", profile.tags?.album ?? ""),
            ("Duration", duration(profile.duration) + " (" + num(profile.duration, 3, " s") + ")"),
            ("Tempo", profile.bpm.map { String(format: "%.2f BPM, confidence %.2f", $0, profile.bpmConfidence) } ?? "no steady beat"),
            ("Key", profile.key.flatMap { key in key.musicalKey.map { "\($0.words) (Camelot \($0.camelot), Open Key \($0.openKey)), confidence " + num(key.confidence) } }
                ?? "no key (no clear harmony: drums, noise or silence)"),
            ("First beat", num(profile.firstBeat, 3, " s")),
            ("Beat grid", beatGrid(profile.beatGrid)),
            ("Sound starts (leading silence ends)", num(profile.silenceEnd, 3, " s")),
            ("Sound ends (trailing silence starts)", num(profile.silenceStart, 3, " s")),
            ("Loudness", num(profile.lufs, 2, " LUFS")), ("Loudness range", num(profile.loudnessRange, 2, " LU")),
            ("Sample peak", num(profile.peakDB, 2, " dBFS")), ("True peak", num(profile.truePeakDB, 2, " dBTP")),
            ("Gain to reference", num(profile.gainDB, 2, " dB") + " (reference " + num(profile.referenceLUFS, 1, " LUFS") + ")"),
            ("Stream", [profile.codec, "\(profile.sampleRate) Hz", profile.channels == 1 ? "mono" : "\(profile.channels) channels"]
                .filter { !$0.isEmpty }.joined(separator: ", ")),
            ("Analysed", profile.analyzedAt),
        ]
        if let note = profile.loudnessNote { fields.append(("Loudness note", note)) }
        if let gain = profile.replayGain {
            let parts = [("trackGain", gain.trackGain), ("trackPeak", gain.trackPeak), ("albumGain", gain.albumGain), ("albumPeak", gain.albumPeak)]
                .compactMap { key, value in value.map { "\(key) \(String(format: "%.2f", $0))" } }
            fields.append(("ReplayGain", parts.joined(separator: ", ")))
        }
        let outros = ["fade_out": "fades out", "cold_end": "ends cold (stops from loud)", "silence_tail": "ends in a silent tail"]
        if let outro = profile.outro?.rawValue { fields.append(("Outro", outros[outro] ?? outro)) }
        fields.append(("Music audibly ends", num(profile.audibleEnd, 3, " s")))
        if let ramp = profile.startRamp { fields.append(("Crossfade in (level after the start)", Self.rampText(ramp, after: "in"))) }
        if let ramp = profile.endRamp { fields.append(("Crossfade out (level before the end)", Self.rampText(ramp, after: "before the end"))) }
        return fields.filter { !$0.1.isEmpty }.map { ["label": $0.0, "value": $0.1] }
    }

    /// A MixRamp ramp ("dB seconds;" pairs, as MPD reads it) in words: "−30 dB in 0.12 s · …".
    static func rampText(_ ramp: String, after: String) -> String {
        ramp.split(separator: ";").compactMap { point -> String? in
            let parts = point.split(separator: " ").compactMap { Double($0) }
            guard parts.count == 2 else { return nil }
            return String(format: "%.0f dB %@ %.2f s", parts[0], after, parts[1]).replacingOccurrences(of: "-", with: "−")
        }.joined(separator: " · ")
    }
}
