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
    /// The versions the stages that run are recorded with.
    private let stageVersions: StageVersions
    private let logger: Logger
    private let madeDirectories = Mutex<Set<String>>([])

    public init(layout: OutputLayout, visualizer: VisualizerConfig?, profile: ProfileConfig?,
                durability: AtomicFile.Durability = .deferred, profileFileWriter: ProfileFileWriter = .albumPass,
                stageVersions: StageVersions = .current, logger: Logger) {
        self.layout = layout
        self.visualizer = visualizer
        self.profile = profile
        self.durability = durability
        self.profileFileWriter = profileFileWriter
        self.stageVersions = stageVersions
        self.logger = logger
    }

    /// Analyses one file. `previous` is its full stored row, if any: outputs this run does not
    /// recompute are kept from it while the file is unchanged. `work`: everything, or only some
    /// stages of an unchanged file (`TrackFreshness`).
    /// `onDecoded` hears of each decoded stretch (seconds), for progress inside a long file.
    public func process(_ file: LibraryFile, previous: TrackRecord?, work: TrackWork = .full, isCancelled: () -> Bool = { false },
                        onDecoded: (Double) -> Void = { _ in }) throws -> TrackOutcome {
        let key = OutputLayout.key(forRelativePath: file.relativePath)
        if case .stages(let stages) = work, let previous,
           let partial = try reanalyse(stages, of: file, previous: previous, isCancelled: isCancelled, onDecoded: onDecoded) {
            return partial
        }
        var record = TrackRecord(file: file, key: key, analyzerVersion: NaviscanVersion.version,
                                 analyzedAt: TrackProfile.timestamp(Date()), changedAt: Date().timeIntervalSince1970)
        let fileUnchanged = previous.map { $0.size == file.size && $0.mtime == file.mtime } ?? false
        var versions = StageVersions([:])
        if fileUnchanged, let previous, previous.status == .ok {
            if visualizer == nil { record.visFingerprint = previous.visFingerprint; record.visStamp = previous.visStamp }
            if profile == nil { keepProfile(of: previous, in: &record) }
            versions = previous.analysedWith ?? versions
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
                try record.setProfile(TrackProfile(relativePath: file.relativePath, analysis: analysis, config: config, tags: record.tags),
                                      config: config)
                try writeProfileFileIfOurs(record: &record)
                record.gatingHistogram = analysis.loudness?.histogram?.encoded()
                record.features = analysis.features?.data
                record.featuresVersion = stageVersions[.features]
                if let waveform = analysis.waveform { try writeWaveform(waveform, config: config, key: key) }
            }
            // Drop outputs left over from an older version of the file.
            if record.visFingerprint == nil { OutputLayout.removeFile(layout.visPath(key: key)) }
            if record.profileFingerprint == nil {
                for path in [profilePath, layout.waveformPath(key: key), layout.waveformRMSPath(key: key)] { OutputLayout.removeFile(path) }
            }
            let ran = AnalysisStage.of(visualizer: visualizer != nil, profile: profile != nil)
            record.stageVersions = recorded(versions, ran: ran, holding: record).description
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
            // Retried when a stage changes (or the file does).
            record.stageVersions = stageVersions.description
            layout.removeOutputs(key: key)
            return .failed(record, reason: record.errorMessage ?? "failed")
        }
    }

    /// The stages of an unchanged, analysed file that must run again, in one decode; the row keeps
    /// the rest, and the files of stages that do not run (frames, waveform) are not touched. Nil when
    /// the stored results cannot be built on (the full analysis runs instead).
    private func reanalyse(_ stages: Set<AnalysisStage>, of file: LibraryFile, previous: TrackRecord,
                           isCancelled: () -> Bool, onDecoded: (Double) -> Void) throws -> TrackOutcome? {
        guard previous.status == .ok, previous.size == file.size, previous.mtime == file.mtime,
              let versions = previous.analysedWith else { return nil }
        let runsVisualizer = visualizer != nil && stages.contains(.visualizer)
        let profileStages = profile != nil ? stages.intersection(AnalysisStage.profile) : []
        // The stored profile the stages that run are merged into; every profile stage running (new
        // parameters) needs none.
        var stored: TrackProfile?
        let wholeProfile = profileStages == AnalysisStage.profile
        if !profileStages.isEmpty && !wholeProfile {
            guard previous.profileFingerprint == profile.map(AnalysisFingerprint.profile), let json = previous.profileJSON,
                  let decoded = try? JSONDecoder().decode(TrackProfile.self, from: Data(json.utf8)) else { return nil }
            stored = decoded
        }
        guard runsVisualizer || !profileStages.isEmpty else { return nil }
        // The visualizer options go along even when no frames are written: they set the rate the
        // onsets are measured at, as in the full pass.
        var options = AnalysisOptions(visualizer: visualizer, profile: profileStages.isEmpty ? nil : profile)
        options.profileStages = profileStages
        options.prior = stored.map(PriorResults.init)
        var record = previous
        record.analyzerVersion = NaviscanVersion.version
        record.changedAt = Date().timeIntervalSince1970
        let key = previous.key
        let visPath = runsVisualizer ? layout.visPath(key: key) : nil
        do {
            if let visPath { try createOutputDirectory(for: visPath) }
            let analysis = try TrackAnalyzer(options: options, logger: logger)
                .analyze(path: file.path, visOutput: visPath, durability: durability, isCancelled: isCancelled, onDecoded: onDecoded)
            if let visualizer, let visPath {
                record.visFingerprint = AnalysisFingerprint.visualizer(visualizer)
                record.visStamp = OutputStamp.of(path: visPath)
            }
            if let config = profile, !profileStages.isEmpty {
                // The features, the waveform and the frames are not in the profile: it is rewritten
                // only when a stage it holds ran.
                if !profileStages.isDisjoint(with: [.silence, .loudness, .tempo, .beatGrid, .key]) {
                    if let stored {
                        let fresh = TrackProfile(relativePath: file.relativePath, analysis: analysis, config: config)
                        try record.setProfile(stored.updating(profileStages, from: fresh), config: config)
                    } else {
                        record.tags = TagReader.read(path: file.path)
                        try record.setProfile(TrackProfile(relativePath: file.relativePath, analysis: analysis, config: config, tags: record.tags),
                                              config: config)
                    }
                    record.analyzedAt = TrackProfile.timestamp(Date())
                    try writeProfileFileIfOurs(record: &record)
                }
                if !profileStages.isDisjoint(with: [.silence, .loudness]) { record.gatingHistogram = analysis.loudness?.histogram?.encoded() }
                if profileStages.contains(.features) {
                    record.features = analysis.features?.data
                    record.featuresVersion = stageVersions[.features]
                }
                if let waveform = analysis.waveform { try writeWaveform(waveform, config: config, key: key) }
            }
        } catch let error as AnalysisCancelled {
            throw error
        } catch {
            if let fault = LibraryError.fault(error) { throw fault }
            // Whatever it is, the full analysis words it and records it.
            return nil
        }
        let ran = AnalysisStage.of(visualizer: runsVisualizer, profile: false).union(profileStages)
        record.stageVersions = recorded(versions, ran: ran, holding: record).description
        return .analysed(record, seconds: previous.duration ?? 0)
    }

    /// The versions a row records after `ran` ran: theirs become this build's; the decode stage's
    /// only when every stage the row holds ran on this build's decoding.
    private func recorded(_ previous: StageVersions, ran: Set<AnalysisStage>, holding record: TrackRecord) -> StageVersions {
        var versions = previous
        for stage in ran { versions[stage] = stageVersions[stage] }
        if ran.isSuperset(of: TrackFreshness.held(record)) { versions[.decode] = stageVersions[.decode] }
        return versions
    }

    /// The processor writes the profile file itself when it is the writer (the server's precompute);
    /// otherwise the row goes without a stamp, and the album pass writes the file.
    private func writeProfileFileIfOurs(record: inout TrackRecord) throws {
        guard profileFileWriter == .processor, let json = record.profileJSON else { return }
        let path = layout.profilePath(key: record.key)
        try createOutputDirectory(for: path)
        try AtomicFile.write(Data(json.utf8), to: path, durability: durability)
        record.profileStamp = OutputStamp.of(path: path)
    }

    private func writeWaveform(_ waveform: WaveformData, config: ProfileConfig, key: String) throws {
        let datPath = layout.waveformPath(key: key)
        try createOutputDirectory(for: datPath)
        try WaveformFile.write(waveform, bits: config.waveform.bits, datPath: datPath,
                               rmsPath: layout.waveformRMSPath(key: key), durability: durability)
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

extension TrackRecord {
    /// The row's copy of `profile` and the columns read from it; no file stamp (it is not written yet).
    mutating func setProfile(_ profile: TrackProfile, config: ProfileConfig) throws {
        let json = try profile.jsonData()
        profileFingerprint = AnalysisFingerprint.profile(config)
        profileStamp = nil
        bpm = profile.bpm
        bpmConfidence = profile.bpmConfidence
        lufs = profile.lufs
        gainDB = profile.gainDB
        silenceEnd = profile.silenceEnd
        silenceStart = profile.silenceStart
        silent = profile.silent
        profileJSON = String(decoding: json, as: UTF8.self)
    }
}
