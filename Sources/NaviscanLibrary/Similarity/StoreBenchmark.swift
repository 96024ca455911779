import Foundation
import NaviscanCore
import NaviscanStore

/// `naviscan bench --store N`: a store of N tracks made from a real one, and what the similarity
/// commands cost on it, each run as a user runs it (its own process, the CPU time and peak memory
/// the kernel counted for it).
public enum StoreBenchmark {
    /// Fills a new store at `into` with `count` tracks: the analysed tracks of `source` (with features),
    /// again and again under `Copies/K/…`, every row as the scan wrote it (profile, histogram, tags), its
    /// features scaled by up to ±5 % so that no two are the same sound. Rows only: no output files.
    public static func makeStore(from source: LibraryStore, into: String, count: Int, seed: UInt64 = 53) throws {
        let originals = try source.allTracks().filter { $0.status == .ok && $0.features != nil }
        guard !originals.isEmpty else { throw StoreBenchmarkError.noFeatures(source.path) }
        let tags = try source.tags(of: originals.map(\.relativePath))
        try FileManager.default.createDirectory(atPath: into, withIntermediateDirectories: true)
        let store = try LibraryStore(path: OutputLayout(root: into).databasePath)
        guard try store.count() == 0 else { throw StoreBenchmarkError.notEmpty(into) }
        var random = SeededGenerator(seed: seed)
        var batch: [StoreChange] = []
        for k in 0..<count {
            var row = originals[k % originals.count]
            row.features = SonicFeatures(data: row.features!)!.perturbed(by: 0.05, using: &random).data
            row.tags = tags[row.relativePath]
            row.relativePath = "Copies/\(k / originals.count)/" + row.relativePath
            row.key = OutputLayout.key(forRelativePath: row.relativePath)
            batch.append(.save(row))
            if batch.count == 1000 {
                try store.commitTracks(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try store.commitTracks(batch)
        if let identity = try? source.libraryIdentity(), let root = identity.root {
            try store.recordLibraryIdentity(root: root, device: identity.device ?? 0)
        }
        try store.refreshSimilarityIndex()
        try store.checkpoint()
    }

    /// What one run of a command cost: the kernel's count for its process.
    public struct Cost: Sendable {
        public var cpuSeconds: Double
        public var peakResidentBytes: Int
        public var status: Int32
    }

    /// Runs `executable arguments` and waits for it, its output thrown away.
    public static func measure(_ executable: String, _ arguments: [String]) throws -> Cost {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw StoreBenchmarkError.cannotRun(executable, String(cString: strerror(spawned))) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw StoreBenchmarkError.cannotRun(executable, String(cString: strerror(errno))) }
        }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Cost(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), peakResidentBytes: Int(usage.ru_maxrss) * 1024, status: exit)
    }
}

public enum StoreBenchmarkError: Error, CustomStringConvertible {
    case noFeatures(String)
    case notEmpty(String)
    case cannotRun(String, String)

    public var description: String {
        switch self {
        case .noFeatures(let path): "\(path) holds no analysed track with sound features; scan a library with --dj first"
        case .notEmpty(let path): "\(path) already holds a store; give a new folder to make the benchmark's store in"
        case .cannotRun(let path, let reason): "cannot run \(path): \(reason)"
        }
    }
}
