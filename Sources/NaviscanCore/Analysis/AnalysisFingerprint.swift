import Foundation

/// A short, stable digest of everything that changes an output: the analyser version and the
/// parameters of that output. Stored results whose fingerprint differs are recomputed.
public enum AnalysisFingerprint {
    public static func visualizer(_ config: VisualizerConfig) -> String {
        digest(kind: "vis", config)
    }

    public static func profile(_ config: ProfileConfig) -> String {
        digest(kind: "profile", config)
    }

    private static func digest<T: Encodable>(kind: String, _ config: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(config)) ?? Data()
        var hasher = FNV1a64()
        hasher.add("\(NaviscanVersion.name) \(NaviscanVersion.version) \(kind) ")
        hasher.add(json)
        return CFormat.string("%016llx", hasher.value)
    }
}

/// FNV-1a, 64-bit: a tiny, stable (unlike Swift's `Hasher`, which is seeded per process) hash.
public struct FNV1a64 {
    public private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    public init() {}

    public mutating func add<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes {
            value ^= UInt64(byte)
            value = value &* 0x0000_0100_0000_01B3
        }
    }

    public mutating func add(_ string: String) { add(string.utf8) }

    /// The same, over raw memory: a tight loop for file blocks.
    public mutating func add(bytes: UnsafeRawBufferPointer) {
        var v = value
        for byte in bytes {
            v ^= UInt64(byte)
            v = v &* 0x0000_0100_0000_01B3
        }
        value = v
    }
}
