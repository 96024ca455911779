import Foundation
import NaviscanCore

/// The last scan as the store records it (`LibraryStore.recordScan`), whoever ran it: `naviscan
/// scan`, a shard scan, or `serve` keeping the library analysed. `naviscan status` shows it.
public struct ScanRecord: Codable, Sendable, Equatable {
    public var finishedAt: String
    public var analysed: Int
    public var failed: Int
    public var pending: Int
    public var interrupted: Bool
    /// Who ran it: scan, serve (absent in records from before it was kept).
    public var by: String?

    public init(finishedAt: String, analysed: Int, failed: Int, pending: Int, interrupted: Bool, by: String?) {
        self.finishedAt = finishedAt
        self.analysed = analysed
        self.failed = failed
        self.pending = pending
        self.interrupted = interrupted
        self.by = by
    }

    enum CodingKeys: String, CodingKey { case finishedAt = "finished_at", analysed, failed, pending, interrupted, by }
}

/// A recorded analysis parameter's value (the config file's JSON scalars).
public enum ParameterValue: Equatable, Sendable, Codable, CustomStringConvertible {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public var description: String {
        switch self {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
        case .bool(let b): return b ? "true" : "false"
        }
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .bool(let b): try c.encode(b)
        }
    }
}

/// The analysis parameters a scan ran with, by setting key, as the store records them: a later
/// plain scan analyses the same way, and `naviscan merge` refuses shards made with others. The keys
/// are the config file's; the library reads only `albumPerDisc`.
public struct AnalysisParameters: Equatable, Sendable, Codable {
    public var values: [String: ParameterValue]

    public init(_ values: [String: ParameterValue] = [:]) { self.values = values }

    /// The setting that makes each disc its own album for album gain.
    public static let albumPerDiscKey = "album-per-disc"

    public var albumPerDisc: Bool {
        if case .bool(let value) = values[Self.albumPerDiscKey] { return value }
        return false
    }

    public init(from decoder: Decoder) throws { values = try [String: ParameterValue](from: decoder) }
    public func encode(to encoder: Encoder) throws { try values.encode(to: encoder) }

    /// "fps 30 vs 60": the keys whose values differ, sorted.
    public func differences(from other: AnalysisParameters) -> [String] {
        Set(values.keys).union(other.values.keys).sorted().compactMap { key in
            let a = values[key]?.description ?? "unset", b = other.values[key]?.description ?? "unset"
            return a == b ? nil : "\(key) \(a) vs \(b)"
        }
    }
}
