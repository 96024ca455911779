import Foundation
import Logging
import NaviscanCore

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

    public func run() throws -> Report {
        var files = try LibraryWalker(root: library, excluding: [library + "/.naviscan"]).walk().files
        files.sort { $0.relativePath < $1.relativePath }
        if let limit { files = Array(files.prefix(limit)) }
        // A warm-up pass fills the page cache (so no mode pays for disk reads the others skip) and
        // tells each file's format; then every format is timed on its own, mode by mode.
        let (_, probe) = measure(files, mode: .decode)
        var failed: [String] = []
        var groups: [String: [LibraryFile]] = [:]
        for (file, outcome) in zip(files, probe) {
            if let (format, _) = outcome { groups[format, default: []].append(file) } else { failed.append(file.relativePath) }
        }
        var rows: [Row] = []
        for (format, group) in groups.sorted(by: { $0.key < $1.key }) {
            var row = Row(format: format)
            row.files = group.count
            for mode in Mode.allCases {
                let (wall, results) = measure(group, mode: mode)
                row.wall[mode] = wall
                if mode == .decode { row.audioSeconds = results.compactMap { $0?.1 }.reduce(0, +) }
            }
            rows.append(row)
        }
        if rows.count > 1 {
            var all = Row(format: "all")
            all.files = rows.reduce(0) { $0 + $1.files }
            all.audioSeconds = rows.reduce(0) { $0 + $1.audioSeconds }
            for mode in Mode.allCases { all.wall[mode] = rows.reduce(0) { $0 + ($1.wall[mode] ?? 0) } }
            rows.append(all)
        }
        var usage = rusage()
        #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        let peak = Int(usage.ru_maxrss)            // bytes on Darwin
        #else
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let peak = Int(usage.ru_maxrss) * 1024     // KiB on Linux
        #endif
        return Report(rows: rows, failed: failed.sorted(), peakResidentBytes: peak, jobs: jobs)
    }

    /// Runs `mode` over all files on `jobs` threads; returns the wall time and, per file, (format, audio seconds) or nil.
    private func measure(_ files: [LibraryFile], mode: Mode) -> (Double, [(String, Double)?]) {
        var results = [(String, Double)?](repeating: nil, count: files.count)
        let lock = NSLock()
        let start = ContinuousClock.now
        WorkPool(jobs: jobs).run(files) { [logger] i, file in
            let outcome = try? Self.process(file.path, mode: mode, logger: logger)
            lock.lock()
            results[i] = outcome
            lock.unlock()
        }
        let d = start.duration(to: .now)
        return (Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18, results)
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
