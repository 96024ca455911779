import Foundation
import NaviscanCore

/// One part of a library split for scans on several machines (`naviscan scan LIB --shard K/N`).
///
/// A track belongs to shard `⌊h × N / 2⁶⁴⌋`, where `h` is the 64-bit FNV-1a hash of the UTF-8 bytes
/// of its relative path: the number whose 16 hex digits are its store key (`OutputLayout.key`).
/// The hash's high bits decide (its low bits mix poorly for small N), and nothing depends on the
/// machine, its byte order or the mount point, so every node of a cluster agrees on the split.
/// Shards are numbered from 0, like `SLURM_ARRAY_TASK_ID` and `JOB_COMPLETION_INDEX`.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public let index: Int
    public let count: Int

    /// The environment variables `auto/N` reads, in this order: a Slurm job array's task, a
    /// Kubernetes Indexed Job's completion index.
    public static let indexVariables = ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"]
    public static let maximumCount = 100_000

    public init(index: Int, count: Int) {
        precondition(count >= 1 && (0..<count).contains(index), "shard \(index)/\(count) out of range")
        self.index = index
        self.count = count
    }

    /// "K/N" or "auto/N" (K from the first of `indexVariables` that is set). The errors say what to write.
    public init(parsing text: String, environment: [String: String]) throws(ShardError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[1]) else { throw .malformed(text) }
        guard (1...Self.maximumCount).contains(count) else { throw .countOutOfRange(count) }
        let index: Int
        if parts[0] == "auto" {
            guard let variable = Self.indexVariables.first(where: { environment[$0] != nil }) else { throw .noIndexVariable(count: count) }
            let value = environment[variable]!.trimmingCharacters(in: .whitespaces)
            guard let number = Int(value) else { throw .indexVariableNotNumber(variable: variable, value: value) }
            guard (0..<count).contains(number) else { throw .indexOutOfRange(index: number, count: count, from: variable) }
            index = number
        } else {
            guard let number = Int(parts[0]) else { throw .malformed(text) }
            guard (0..<count).contains(number) else { throw .indexOutOfRange(index: number, count: count, from: nil) }
            index = number
        }
        self.init(index: index, count: count)
    }

    /// The shard, out of `count`, that the track at `relativePath` belongs to.
    public static func index(ofRelativePath relativePath: String, count: Int) -> Int {
        var hasher = FNV1a64()
        hasher.add(relativePath)
        return Int(hasher.value.multipliedFullWidth(by: UInt64(count)).high)
    }

    public func contains(relativePath: String) -> Bool {
        count == 1 || Self.index(ofRelativePath: relativePath, count: count) == index
    }

    public var description: String { "\(index)/\(count)" }
}

/// The shards a store holds, as its `shard` meta value records them: "2/4" for a shard scan's store,
/// "0,1,3/4" for a merge of three of four. A store without the value covers the whole library.
public struct ShardSet: Sendable, Equatable, CustomStringConvertible {
    public var indices: Set<Int>
    public let count: Int

    public init(_ shard: Shard) {
        indices = [shard.index]
        count = shard.count
    }

    public init?(recorded text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let count = Int(parts[1]), count >= 1 else { return nil }
        let indices = parts[0].split(separator: ",").compactMap { Int($0) }
        guard !indices.isEmpty, indices.allSatisfy({ (0..<count).contains($0) }) else { return nil }
        self.indices = Set(indices)
        self.count = count
    }

    public var isComplete: Bool { indices.count == count }

    public func contains(relativePath: String) -> Bool {
        indices.contains(Shard.index(ofRelativePath: relativePath, count: count))
    }

    public var description: String { indices.sorted().map(String.init).joined(separator: ",") + "/\(count)" }
}

/// A `--shard` value that cannot be used, in words that say what to write instead.
public enum ShardError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case countOutOfRange(Int)
    case indexOutOfRange(index: Int, count: Int, from: String?)
    case noIndexVariable(count: Int)
    case indexVariableNotNumber(variable: String, value: String)

    /// What is wrong with the shard given as `K/N` or `auto/N`; the CLI adds its flag's name.
    public var description: String {
        switch self {
        case .malformed(let text):
            return "a shard is K/N (shard K of N, counted from 0) or auto/N, not '\(text)'; e.g. 0/4"
        case .countOutOfRange(let count):
            return "N must be between 1 and \(Shard.maximumCount), got \(count)"
        case .indexOutOfRange(let index, let count, let variable?):
            return "\(variable) is \(index), but auto/\(count) has shards 0 to \(count - 1); submit the job array as --array=0-\(count - 1) (Kubernetes: completions: \(count))"
        case .indexOutOfRange(let index, let count, nil):
            return "\(index)/\(count): shards are counted from 0, so K must be 0 to \(count - 1)"
        case .noIndexVariable(let count):
            return "auto/\(count) reads the shard from \(Shard.indexVariables.joined(separator: " or ")), and neither is set; run it as a Slurm array task or a Kubernetes Indexed Job, or give the shard as K/\(count)"
        case .indexVariableNotNumber(let variable, let value):
            return "\(variable) is '\(value)', not a shard number; auto/N needs a whole number there"
        }
    }
}
