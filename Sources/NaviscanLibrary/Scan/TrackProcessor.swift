import Foundation
import NaviscanStore
import Synchronization
import Logging
import NaviscanCore

/// One track, start to finish: decode once and write the requested outputs under temporary names
/// renamed into place. It records nothing: the caller hands the row to a `StoreWriter`, which commits
/// it only once the files are durable. Shared by the library scan and the server's precompute.
///
/// Errors are sorted here: a problem of the file (it does not decode, it cannot be read) becomes a
/// `.failed` outcome; a problem of the output (disk full, read-only, gone) is thrown as a
/// `LibraryError.outputFault`, because no track is to blame and the whole run must stop.
public final class TrackProcessor: @unchecked Sendable {
    /// Who writes a track's profile file.
    public enum ProfileFileWriter: Sendable {
        /// The processor, as soon as the track is analysed (the server's precompute).
        case processor
        /// The album pass after the scan (`AlbumGain`), once, with the album's values: the row is
        /// committed first with the profile and no stamp, which marks the file as still to write.
        /// Otherwise every new track's profile file would be written twice.
        case albumPass
    }

    public let layout: OutputLayout
    public let visualizer: VisualizerConfig?
    public let profile: ProfileConfig?
    private let durability: AtomicFile.Durability
    private let profileFileWriter: ProfileFileWriter
    private let logger: Logger
    private let madeDirectories = Mutex<Set<String>>([])

    public init(layout: OutputLayout, visualizer: VisualizerConfig?, profile: ProfileConfig?,
                durability: AtomicFile.Durability = .deferred, profileFileWriter: ProfileFileWriter = .albumPass, logger: Logger) {
        self.layout = layout
        self.visualizer = visualizer
        self.profile = profile
        self.durability = durability
        self.profileFileWriter = profileFileWriter
        self.logger = logger
    }

    /// Analyses one file. `previous` is its full stored row, if any: outputs this run does not
    /// recompute are kept from it while the file is unchanged.
    /// `onDecoded` hears of each decoded stretch (seconds), for progress inside a long file.
    public func process(_ file: LibraryFile, previous: TrackRecord?, isCancelled: () -> Bool = { false },
                        onDecoded: (Double) -> Void = { _ in }) throws -> TrackOutcome {
        let key = OutputLayout.key(forRelativePath: file.relativePath)
        if let previous, let refreshed = try featuresOnly(file, previous: previous, isCancelled: isCancelled) { return refreshed }
        var record = TrackRecord(file: file, key: key, analyzerVersion: NaviscanVersion.version,
                                 analyzedAt: TrackProfile.timestamp(Date()), changedAt: Date().timeIntervalSince1970)
        let fileUnchanged = previous.map { TrackFreshness.sameFileAndAnalyser(file, $0) } ?? false
        if fileUnchanged, let previous, previous.status == .ok {
            if visualizer == nil { record.visFingerprint = previous.visFingerprint; record.visStamp = previous.visStamp }
            if profile == nil { keepProfile(of: previous, in: &record) }
        }
        // Read apart from the decode (a tag-only edit changes size or mtime, so it is read again).
        record.tags = TagReader.read(path: file.path)
        let visPath = visualizer.map { _ in layout.visPath(key: key) }
        let profilePath = layout.profilePath(key: key)
        do {
            if let visPath { try createOutputDirectory(for: visPath) }
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: visualizer, profile: profile), logger: logger)
            let analysis = try analyzer.analyze(path: file.path, visOutput: visPath, durability: durability, isCancelled: isCancelled, onDecoded: onDecoded)
            record.duration = analysis.duration
            record.codec = analysis.stream.codec
            record.sampleRate = analysis.stream.sampleRate
            record.channels = analysis.stream.channels
            record.contentHash = ContentHash.of(path: file.path, size: file.size)
            if let vis = visualizer, let visPath {
                record.visFingerprint = AnalysisFingerprint.visualizer(vis)
                record.visStamp = OutputStamp.of(path: visPath)
            }
            if let config = profile {
                let profile = TrackProfile(relativePath: file.relativePath, analysis: analysis, config: config, tags: record.tags)
                let json = try profile.jsonData()
                record.profileFingerprint = AnalysisFingerprint.profile(config)
                record.profileStamp = nil
                if profileFileWriter == .processor {
                    try createOutputDirectory(for: profilePath)
                    try AtomicFile.write(json, to: profilePath, durability: durability)
                    record.profileStamp = OutputStamp.of(path: profilePath)
                }
                record.bpm = profile.bpm
                record.bpmConfidence = profile.bpmConfidence
                record.lufs = profile.lufs
                record.gainDB = profile.gainDB
                record.silenceEnd = profile.silenceEnd
                record.silenceStart = profile.silenceStart
                record.silent = profile.silent
                record.profileJSON = String(decoding: json, as: UTF8.self)
                record.gatingHistogram = analysis.loudness?.histogram?.encoded()
                record.features = analysis.features?.data
                record.featuresVersion = SonicFeatures.version
                if let waveform = analysis.waveform {
                    let datPath = layout.waveformPath(key: key)
                    try createOutputDirectory(for: datPath)
                    try WaveformFile.write(waveform, bits: config.waveform.bits, datPath: datPath,
                                           rmsPath: layout.waveformRMSPath(key: key), durability: durability)
                }
            }
            // Drop outputs left over from an older version of the file.
            if record.visFingerprint == nil { OutputLayout.removeFile(layout.visPath(key: key)) }
            if record.profileFingerprint == nil {
                for path in [profilePath, layout.waveformPath(key: key), layout.waveformRMSPath(key: key)] { OutputLayout.removeFile(path) }
            }
            return .analysed(record, seconds: analysis.duration)
        } catch let error as AnalysisCancelled {
            throw error
        } catch {
            if let fault = LibraryError.fault(error) { throw fault }
            if Self.isAccessError(error), let previous, previous.status == .ok {
                return .unreadable(previous, reason: Self.reason(error) + "; its earlier analysis is kept")
            }
            record.status = .failed
            record.errorMessage = Self.reason(error)
            record.failureKind = Self.isAccessError(error) ? .access : .file
            record.visFingerprint = nil
            record.visStamp = nil
            keepProfile(of: nil, in: &record)
            layout.removeOutputs(key: key)
            return .failed(record, reason: record.errorMessage ?? "failed")
        }
    }

    /// When all that is stale is the sound features (a new `SonicFeatures.version`): the file, its
    /// profile and frames are current, so only the features are measured and the row keeps the rest.
    /// Nil when anything else needs the full analysis.
    private func featuresOnly(_ file: LibraryFile, previous: TrackRecord, isCancelled: () -> Bool) throws -> TrackOutcome? {
        guard let profile, TrackFreshness.featuresStale(previous), TrackFreshness.sameFileAndAnalyser(file, previous),
              previous.profileFingerprint == AnalysisFingerprint.profile(profile),
              let json = previous.profileJSON, let stored = try? StoredProfile.read(Data(json.utf8)) else { return nil }
        if let visualizer {
            guard previous.visFingerprint == AnalysisFingerprint.visualizer(visualizer),
                  let stamp = previous.visStamp, OutputStamp.of(path: layout.visPath(key: previous.key)) == stamp else { return nil }
        }
        if let stamp = previous.profileStamp, OutputStamp.of(path: layout.profilePath(key: previous.key)) != stamp { return nil }
        var record = previous
        do {
            let features = try TrackAnalyzer.measureFeatures(path: file.path, profile: profile, bpm: previous.bpm,
                                                             tempoConfidence: previous.bpmConfidence ?? 0,
                                                             loudnessRange: stored.loudnessRange, isCancelled: isCancelled)
            record.features = features?.data
            record.featuresVersion = SonicFeatures.version
        } catch let error as AnalysisCancelled {
            throw error
        } catch {
            // Whatever it is, the full analysis words it and records it.
            return nil
        }
        record.changedAt = Date().timeIntervalSince1970
        return .analysed(record, seconds: previous.duration ?? 0)
    }

    /// Carries a moved file's analysis to its new path: the frame file is linked under the new key,
    /// the profile rewritten with the new path. The old outputs stay until the new row is committed
    /// (the caller then removes them with `removeOutputs`). Returns the new row, or nil when the old
    /// outputs are not usable (the file is then analysed instead).
    public func relink(_ relink: Relink, previous full: TrackRecord) throws -> TrackRecord? {
        let file = relink.to
        let key = OutputLayout.key(forRelativePath: file.relativePath)
        var record = full
        record.relativePath = file.relativePath
        record.key = key
        record.mtime = file.mtime
        record.missingSince = nil
        record.changedAt = Date().timeIntervalSince1970
        record.tags = TagReader.read(path: file.path)
        do {
            if full.visFingerprint != nil {
                let from = layout.visPath(key: full.key), to = layout.visPath(key: key)
                guard OutputStamp.of(path: from) == full.visStamp || full.visStamp == nil else { return nil }
                guard try linkOutput(from, to, what: "frames") else { return nil }
                record.visStamp = OutputStamp.of(path: to)
            }
            if full.profileFingerprint != nil {
                for (from, to) in [(layout.waveformPath(key: full.key), layout.waveformPath(key: key)),
                                   (layout.waveformRMSPath(key: full.key), layout.waveformRMSPath(key: key))] {
                    guard try linkOutput(from, to, what: "waveform") else { return nil }
                }
                guard let json = full.profileJSON,
                      var profile = try? JSONDecoder().decode(TrackProfile.self, from: Data(json.utf8)) else { return nil }
                profile.relativePath = file.relativePath
                let data = try profile.jsonData()
                let to = layout.profilePath(key: key)
                try createOutputDirectory(for: to)
                try AtomicFile.write(data, to: to, durability: durability)
                record.profileJSON = String(decoding: data, as: UTF8.self)
                record.profileStamp = OutputStamp.of(path: to)
            }
            return record
        } catch {
            throw LibraryError.fault(error) ?? error
        }
    }

    /// Hard-links a moved track's output to its new name; false when the old one is gone.
    private func linkOutput(_ from: String, _ to: String, what: String) throws -> Bool {
        try createOutputDirectory(for: to)
        OutputLayout.removeFile(to)
        guard SystemPath.withCString(from, { f in SystemPath.withCString(to) { link(f, $0) } }) == 0 else {
            if errno == ENOENT { return false }
            throw OutputFileError(path: to, code: errno, action: "cannot link the moved track's \(what)")
        }
        return true
    }

    /// What went wrong, without repeating the path the report already shows.
    static func reason(_ error: Error) -> String {
        (error as? DecodeError)?.reason ?? "\(error)"
    }

    /// Could not open or read the file (permission, I/O error, gone mid-scan): worth retrying.
    static func isAccessError(_ error: Error) -> Bool {
        if case .unreadable = error as? DecodeError { return true }
        return false
    }

    private func keepProfile(of previous: TrackRecord?, in record: inout TrackRecord) {
        record.profileFingerprint = previous?.profileFingerprint
        record.profileStamp = previous?.profileStamp
        record.bpm = previous?.bpm
        record.bpmConfidence = previous?.bpmConfidence
        record.lufs = previous?.lufs
        record.gainDB = previous?.gainDB
        record.silenceEnd = previous?.silenceEnd
        record.silenceStart = previous?.silenceStart
        record.silent = previous?.silent
        record.profileJSON = previous?.profileJSON
        record.gatingHistogram = previous?.gatingHistogram
        record.features = previous?.features
        record.featuresVersion = previous?.featuresVersion
    }

    /// Makes the folder `file` goes in, once per folder and run: a scan writes up to four files per
    /// track into 256 folders per output kind, which exist after the first few hundred tracks.
    private func createOutputDirectory(for file: String) throws {
        let directory = OutputLayout.directory(of: file)
        if madeDirectories.withLock({ $0.contains(directory) }) { return }
        try OutputLayout.createDirectory(directory)
        madeDirectories.withLock { _ = $0.insert(directory) }
    }
}
