import Foundation
import Logging
import NaviscanCore
import NaviscanStore

/// `naviscan bench`: the same files three ways in one process (decode only, decode + loudness, the
/// full --vis --dj analysis with nothing written) so a user can size a machine and we can hold the bar.
public final class LibraryBenchmark: @unchecked Sendable {
    public enum Mode: String, CaseIterable, Sendable {
        case decode = "decode only"
        case loudness = "decode + loudness"
        case full = "full --vis --dj"
    }

    public struct Row: Sendable {
        public var format: String
        public var files = 0
        public var audioSeconds = 0.0
        /// Wall seconds per mode.
        public var wall: [Mode: Double] = [:]
        /// Process CPU seconds (user + system, every thread) per mode: unlike the wall time, what
        /// other programs on a shared machine take does not count.
        public var cpu: [Mode: Double] = [:]

        public func realtimeFactor(_ mode: Mode) -> Double { (wall[mode] ?? 0) > 0 ? audioSeconds / wall[mode]! : 0 }
        /// Wall time of `mode` as a multiple of decode-only.
        public func ratio(_ mode: Mode) -> Double { (wall[.decode] ?? 0) > 0 ? (wall[mode] ?? 0) / wall[.decode]! : 0 }
    }

    public struct Report: Sendable {
        public var rows: [Row]
        public var failed: [String]
        /// Peak resident memory of the whole process, bytes.
        public var peakResidentBytes: Int
        public var jobs: Int
    }

    public let library: String
    public let jobs: Int
    public let limit: Int?
    private let logger: Logger

    public init(library: String, jobs: Int, limit: Int?, logger: Logger) {
        self.library = library
        self.jobs = max(1, jobs)
        self.limit = limit
        self.logger = logger
    }

    /// One point of a jobs sweep: decode-only and the full analysis over every decodable file.
    public struct SweepPoint: Sendable {
        public var jobs: Int
        public var audioSeconds: Double
        public var decodeWall: Double
        public var fullWall: Double
        public var decodeCPU: Double
        public var fullCPU: Double
    }

    /// Times `modes` (all three unless told), per format.
    public func run(modes: [Mode] = Mode.allCases) throws -> Report {
        let (files, failed) = try warmUp()
        var groups: [String: [LibraryFile]] = [:]
        for (file, format) in files { groups[format, default: []].append(file) }
        var rows: [Row] = []
        for (format, group) in groups.sorted(by: { $0.key < $1.key }) {
            var row = Row(format: format)
            row.files = group.count
            for mode in modes {
                let timing = measure(group, mode: mode, jobs: jobs)
                row.wall[mode] = timing.wall
                row.cpu[mode] = timing.cpu
                row.audioSeconds = timing.audioSeconds
            }
            rows.append(row)
        }
        if rows.count > 1 {
            var all = Row(format: "all")
            all.files = rows.reduce(0) { $0 + $1.files }
            all.audioSeconds = rows.reduce(0) { $0 + $1.audioSeconds }
            for mode in modes {
                all.wall[mode] = rows.reduce(0) { $0 + ($1.wall[mode] ?? 0) }
                all.cpu[mode] = rows.reduce(0) { $0 + ($1.cpu[mode] ?? 0) }
            }
            rows.append(all)
        }
        return Report(rows: rows, failed: failed, peakResidentBytes: ProcessUsage.now().peakResidentBytes, jobs: jobs)
    }

    /// Decode-only and the full analysis over every decodable file (all formats together) with each
    /// of `jobCounts` threads: how far the analysis scales next to how far decoding alone does.
    public func sweep(jobCounts: [Int]) throws -> [SweepPoint] {
        let files = try warmUp().files.map(\.file)
        return jobCounts.map { n in
            let decode = measure(files, mode: .decode, jobs: n)
            let full = measure(files, mode: .full, jobs: n)
            return SweepPoint(jobs: n, audioSeconds: decode.audioSeconds, decodeWall: decode.wall, fullWall: full.wall,
                              decodeCPU: decode.cpu, fullCPU: full.cpu)
        }
    }

    /// Walks the library and decodes every file once: this fills the page cache (so no timed pass
    /// pays for disk reads the others skip) and tells each file's format. Returns the decodable
    /// files with their format, and the others' relative paths.
    private func warmUp() throws -> (files: [(file: LibraryFile, format: String)], failed: [String]) {
        var files = try LibraryWalker(root: library, excluding: [OutputLayout.defaultRoot(library: library)]).walk().files
        files.sort { $0.relativePath < $1.relativePath }
        if let limit { files = Array(files.prefix(limit)) }
        let probe = measure(files, mode: .decode, jobs: jobs)
        var decodable: [(file: LibraryFile, format: String)] = []
        var failed: [String] = []
        for (file, outcome) in zip(files, probe.outcomes) {
            if let (format, _) = outcome { decodable.append((file, format)) } else { failed.append(file.relativePath) }
        }
        return (decodable, failed.sorted())
    }

    private struct Timing {
        var wall: Double
        var cpu: Double
        /// Per file: (format, audio seconds), or nil when it could not be decoded.
        var outcomes: [(String, Double)?]
        var audioSeconds: Double { outcomes.compactMap { $0?.1 }.reduce(0, +) }
    }

    /// Runs `mode` over all files on `jobs` threads.
    private func measure(_ files: [LibraryFile], mode: Mode, jobs: Int) -> Timing {
        // Guarded by `lock`.
        nonisolated(unsafe) var results = [(String, Double)?](repeating: nil, count: files.count)
        let lock = NSLock()
        let cpuBefore = ProcessUsage.now().cpuSeconds
        let start = ContinuousClock.now
        WorkPool(jobs: jobs).run(files) { [logger] i, file in
            let outcome = try? Self.process(file.path, mode: mode, logger: logger)
            lock.lock()
            results[i] = outcome
            lock.unlock()
        }
        let d = start.duration(to: .now)
        return Timing(wall: Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18,
                      cpu: ProcessUsage.now().cpuSeconds - cpuBefore, outcomes: results)
    }

    private static func process(_ path: String, mode: Mode, logger: Logger) throws -> (String, Double) {
        let decoder = try AudioDecoderFactory.open(path: path)
        let info = decoder.info
        switch mode {
        case .full:
            let analyzer = TrackAnalyzer(options: AnalysisOptions(visualizer: VisualizerConfig(), profile: ProfileConfig()), logger: logger)
            let result = try analyzer.analyze(decoder: decoder, visSink: DiscardingFrameSink())
            return (info.container, result.duration)
        case .decode, .loudness:
            let meter = mode == .loudness
                ? try LoudnessMeter(config: .init(), sampleRate: info.sampleRate, layout: info.channelLayout) : nil
            let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * info.channels)
            defer { block.deallocate() }
            var frames = 0
            while case let n = try decoder.read(into: block, maxFrames: 4096), n > 0 {
                meter?.process(AudioBlock(samples: block, frameCount: n, channels: info.channels))
                frames += n
            }
            _ = meter?.finish()
            return (info.container, Double(frames) / Double(info.sampleRate))
        }
    }
}

/// This process's resource use so far (getrusage).
struct ProcessUsage {
    /// User + system CPU seconds of every thread.
    var cpuSeconds: Double
    var peakResidentBytes: Int

    static func now() -> ProcessUsage {
        var usage = rusage()
        #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        let peak = Int(usage.ru_maxrss)            // bytes on Darwin
        #else
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let peak = Int(usage.ru_maxrss) * 1024     // KiB on Linux
        #endif
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) * 1e-6 }
        return ProcessUsage(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), peakResidentBytes: peak)
    }
}
