import Foundation

/// A short, stable digest of an output's parameters (the options a user chose). Stored results whose
/// fingerprint differs are recomputed. What the analysers do is versioned per stage (`StageVersions`),
/// not here: the digest's salt stays what 0.5.9 wrote, so its stores keep their fingerprints.
public enum AnalysisFingerprint {
    static let salt = "naviscan 0.5.9"

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
        hasher.add("\(salt) \(kind) ")
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
