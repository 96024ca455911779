import Foundation
import Logging
import NaviscanCore

/// `naviscan scan`: walks a library, works out what is new or stale, analyses it on a pool of worker
/// threads (one decode per file), writes each file's outputs atomically and then its store row, and
/// prunes tracks that have left the library.
public final class LibraryScanner: @unchecked Sendable {
    public let options: ScanOptions
    public let layout: OutputLayout
    private let logger: Logger
    private let lock = NSLock()
    private var stopRequested = false
    private var live = ScanProgress()
    private var startedAt = ContinuousClock.now

    public init(options: ScanOptions, logger: Logger) {
        self.options = options
        layout = OutputLayout(root: options.output)
        self.logger = logger
    }

    /// Stop handing out work; files in flight are dropped (nothing partial is written). Safe from any thread.
    public func requestStop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
    }

    public var isStopping: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    public func progress() -> ScanProgress {
        lock.lock()
        defer { lock.unlock() }
        var p = live
        p.elapsed = seconds(since: startedAt)
        return p
    }

    public func run() throws -> ScanSummary {
        startedAt = .now
        // Check the library before anything is created: its default output directory lies inside it.
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: options.library, isDirectory: &isDirectory) else {
            throw LibraryError.libraryUnreadable(path: options.library, reason: "no such directory")
        }
        guard isDirectory.boolValue else { throw LibraryError.libraryUnreadable(path: options.library, reason: "not a directory") }
        try OutputLayout.createWritableDirectory(options.output)
        let scanLock = try ScanLock(path: layout.lockPath, outputDirectory: options.output)
        defer { withExtendedLifetime(scanLock) {} }
        let store = try TrackStore(path: layout.databasePath)
        try store.setLibraryRoot(options.library)
        removeTemporaryFiles()

        let listing = try LibraryWalker(root: options.library, excluding: [options.output]).walk()
        var summary = ScanSummary()
        summary.total = listing.files.count
        summary.unsupportedFiles = listing.unsupported
        summary.symlinkLoops = listing.symlinkLoops.count
        for (path, reason) in listing.unreadable {
            summary.failures.append(ScanFailure(relativePath: path, reason: "cannot read: \(reason)"))
        }

        let stored = Dictionary(uniqueKeysWithValues: try store.allTracks().map { ($0.relativePath, $0) })
        let present = Set(listing.files.map(\.relativePath))
        for record in stored.values where !present.contains(record.relativePath) {
            // Row first, files second: a crash in between leaves orphan files, never a row without files.
            try store.delete(relativePath: record.relativePath)
            TrackProcessor.removeOutputs(key: record.key, layout: layout)
            summary.pruned += 1
        }

        var work: [(LibraryFile, TrackRecord?)] = []
        for file in listing.files {
            let record = stored[file.relativePath]
            if let record, !needsAnalysis(file, record) {
                if record.status == .failed {
                    summary.failures.append(ScanFailure(relativePath: file.relativePath, reason: record.errorMessage ?? "failed"))
                } else {
                    summary.unchanged += 1
                }
            } else {
                work.append((file, record))
            }
        }
        // Longest first (file size stands in for duration), so a long file does not finish last alone.
        work.sort { $0.0.size > $1.0.size }
        lock.lock()
        live.queued = work.count
        live.bytesQueued = work.reduce(0) { $0 + $1.0.size }
        lock.unlock()
        logger.info("scan planned", metadata: ["files": "\(listing.files.count)", "to_analyse": "\(work.count)"])

        let processor = TrackProcessor(layout: layout, visualizer: options.visualizer, profile: options.profile, store: store, logger: logger)
        var next = 0
        var results: [(LibraryFile, Result<Double, Error>)] = []
        let group = DispatchGroup()
        for _ in 0..<min(options.jobs, max(work.count, 1)) {
            group.enter()
            let thread = Thread { [self] in
                defer { group.leave() }
                while true {
                    lock.lock()
                    guard !stopRequested, next < work.count else { lock.unlock(); return }
                    let (file, record) = work[next]
                    next += 1
                    lock.unlock()
                    let outcome = Result { try processor.process(file, previous: record, isCancelled: { self.isStopping }) }
                    lock.lock()
                    if case .failure(let error) = outcome, error is AnalysisCancelled {
                        lock.unlock()
                        continue
                    }
                    results.append((file, outcome))
                    live.finished += 1
                    live.bytesFinished += file.size
                    switch outcome {
                    case .success(let seconds): live.audioSeconds += seconds
                    case .failure: live.failed += 1
                    }
                    lock.unlock()
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()

        for (file, outcome) in results {
            switch outcome {
            case .success(let seconds):
                summary.analysed += 1
                summary.audioSeconds += seconds
            case .failure(let error):
                summary.failures.append(ScanFailure(relativePath: file.relativePath, reason: TrackProcessor.reason(error)))
            }
        }
        summary.interrupted = isStopping && results.count < work.count
        summary.wallSeconds = seconds(since: startedAt)
        return summary
    }

    /// A track is analysed again when its size or mtime changed, the analyser version changed, a
    /// requested output's parameters changed, or a requested output file is missing.
    func needsAnalysis(_ file: LibraryFile, _ record: TrackRecord) -> Bool {
        if options.force { return true }
        if record.size != file.size || record.mtime != file.mtime { return true }
        if record.analyzerVersion != NaviscanVersion.version { return true }
        if record.status == .failed { return false }
        if let vis = options.visualizer {
            if record.visFingerprint != AnalysisFingerprint.visualizer(vis) { return true }
            if !FileManager.default.fileExists(atPath: layout.visPath(key: record.key)) { return true }
        }
        if let profile = options.profile {
            if record.profileFingerprint != AnalysisFingerprint.profile(profile) { return true }
            if !FileManager.default.fileExists(atPath: layout.profilePath(key: record.key)) { return true }
        }
        return false
    }

    /// Temporary files left by a run that was killed (we hold the lock, so none is in use).
    private func removeTemporaryFiles() {
        let fm = FileManager.default
        for top in [layout.visDirectory, layout.profilesDirectory] {
            for sub in (try? fm.contentsOfDirectory(atPath: top)) ?? [] {
                let dir = top + "/" + sub
                for name in (try? fm.contentsOfDirectory(atPath: dir)) ?? [] where name.hasPrefix(".") && name.contains(".tmp-") {
                    try? fm.removeItem(atPath: dir + "/" + name)
                }
            }
        }
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = start.duration(to: .now)
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}
