import Foundation
import Logging
import NaviscanCore

/// One track, start to finish: decode once, write the requested outputs atomically, then commit the
/// store row (only once its files exist). Shared by the library scan and the server's precompute.
public final class TrackProcessor: @unchecked Sendable {
    public let layout: OutputLayout
    public let visualizer: VisualizerConfig?
    public let profile: ProfileConfig?
    private let store: TrackStore
    private let logger: Logger

    public init(layout: OutputLayout, visualizer: VisualizerConfig?, profile: ProfileConfig?, store: TrackStore, logger: Logger) {
        self.layout = layout
        self.visualizer = visualizer
        self.profile = profile
        self.store = store
        self.logger = logger
    }

    /// Analyses one file and records it; returns the seconds of audio analysed.
    public func process(_ file: LibraryFile, previous: TrackRecord?, isCancelled: () -> Bool = { false }) throws -> Double {
        let key = OutputLayout.key(forRelativePath: file.relativePath)
        let fileUnchanged = previous.map { $0.size == file.size && $0.mtime == file.mtime && $0.analyzerVersion == NaviscanVersion.version } ?? false
        var record = TrackRecord(
            relativePath: file.relativePath, key: key, size: file.size, mtime: file.mtime, status: .ok,
            errorMessage: nil, duration: nil, codec: nil, sampleRate: nil, channels: nil,
            analyzerVersion: NaviscanVersion.version, visFingerprint: nil, profileFingerprint: nil,
            analyzedAt: TrackProfile.timestamp(Date()), changedAt: Date().timeIntervalSince1970, bpm: nil, bpmConfidence: nil, lufs: nil, gainDB: nil,
            silenceEnd: nil, silenceStart: nil, silent: nil, profileJSON: nil)
        // Outputs this scan does not recompute survive only if the file itself is unchanged.
        if fileUnchanged, let previous, previous.status == .ok {
            if visualizer == nil { record.visFingerprint = previous.visFingerprint }
            if profile == nil { keepProfile(of: previous, in: &record) }
        }
        let visPath = visualizer.map { _ in layout.visPath(key: key) }
        let profilePath = layout.profilePath(key: key)
        do {
            if let visPath { try OutputLayout.createWritableDirectory((visPath as NSString).deletingLastPathComponent) }
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: visualizer, profile: profile), logger: logger)
            let analysis = try analyzer.analyze(path: file.path, visOutput: visPath, isCancelled: isCancelled)
            record.duration = analysis.duration
            record.codec = analysis.stream.codec
            record.sampleRate = analysis.stream.sampleRate
            record.channels = analysis.stream.channels
            if let vis = visualizer { record.visFingerprint = AnalysisFingerprint.visualizer(vis) }
            if let config = profile {
                let profile = TrackProfile(relativePath: file.relativePath, analysis: analysis, config: config)
                let json = try profile.jsonData()
                try OutputLayout.createWritableDirectory((profilePath as NSString).deletingLastPathComponent)
                let out = try AtomicFile(destination: profilePath)
                try json.withUnsafeBytes { try out.write($0) }
                try out.commit()
                record.profileFingerprint = AnalysisFingerprint.profile(config)
                record.bpm = profile.bpm
                record.bpmConfidence = profile.bpmConfidence
                record.lufs = profile.lufs
                record.gainDB = profile.gainDB
                record.silenceEnd = profile.silenceEnd
                record.silenceStart = profile.silenceStart
                record.silent = profile.silent
                record.profileJSON = String(decoding: json, as: UTF8.self)
            }
            // Drop outputs left over from an older version of the file.
            if record.visFingerprint == nil { try? FileManager.default.removeItem(atPath: layout.visPath(key: key)) }
            if record.profileFingerprint == nil { try? FileManager.default.removeItem(atPath: profilePath) }
            // The row is committed only once every file it describes exists.
            try store.save(record)
            return analysis.duration
        } catch let error as AnalysisCancelled {
            throw error
        } catch {
            record.status = .failed
            record.errorMessage = Self.reason(error)
            record.visFingerprint = nil
            record.profileFingerprint = nil
            keepProfile(of: nil, in: &record)
            try store.save(record)
            Self.removeOutputs(key: key, layout: layout)
            throw error
        }
    }

    /// What went wrong, without repeating the path the report already shows.
    static func reason(_ error: Error) -> String {
        (error as? DecodeError)?.reason ?? "\(error)"
    }

    private func keepProfile(of previous: TrackRecord?, in record: inout TrackRecord) {
        record.profileFingerprint = previous?.profileFingerprint
        record.bpm = previous?.bpm
        record.bpmConfidence = previous?.bpmConfidence
        record.lufs = previous?.lufs
        record.gainDB = previous?.gainDB
        record.silenceEnd = previous?.silenceEnd
        record.silenceStart = previous?.silenceStart
        record.silent = previous?.silent
        record.profileJSON = previous?.profileJSON
    }

    static func removeOutputs(key: String, layout: OutputLayout) {
        try? FileManager.default.removeItem(atPath: layout.visPath(key: key))
        try? FileManager.default.removeItem(atPath: layout.profilePath(key: key))
    }
}
