/// Parameters of the visualizer frames. Every field that changes the output is persisted in the
/// frame file's header.
public struct VisualizerConfig: Sendable, Hashable, Codable {
    /// Frames per second of audio. Frame i is centred at i / fps seconds.
    public var fps: Double = 30
    public var bandCount: Int = 64
    public var minHz: Double = 40
    public var maxHz: Double = 16_000
    /// Every source is resampled to this rate first, so 8 kHz and 96 kHz files give comparable frames.
    public var analysisRate: Int = 44_100
    public var fftSize: Int = 1024
    public var encoding: VisSampleEncoding = .float32
    public var normalization = LevelNormalization()

    public init() {}

    /// Samples between frame centres at the analysis rate (fractional when the rate is not a multiple of fps).
    public var hop: Double { Double(analysisRate) / fps }

    /// The limits every frame file's header is held to as well (`VisFrameHeader`).
    public static let maximumFPS = 1000.0
    public static let bandCountRange = 1...4096

    public func validate() throws {
        func fail(_ message: String) -> VisualizerConfigError { VisualizerConfigError(message: message) }
        guard fps > 0, fps <= Self.maximumFPS else { throw fail("fps must be in (0, \(Int(Self.maximumFPS))], got \(fps)") }
        guard Self.bandCountRange.contains(bandCount) else { throw fail("band count must be 1…4096, got \(bandCount)") }
        guard analysisRate >= 8000 && analysisRate <= 384_000 else { throw fail("analysis rate must be 8000…384000 Hz, got \(analysisRate)") }
        guard fftSize >= 64, fftSize & (fftSize - 1) == 0, fftSize <= 65536 else { throw fail("FFT size must be a power of two in 64…65536, got \(fftSize)") }
        guard minHz > 0, maxHz > minHz else { throw fail("band range must satisfy 0 < min < max, got \(minHz)–\(maxHz) Hz") }
        guard maxHz <= Double(analysisRate) / 2 else { throw fail("band range ends at \(maxHz) Hz, above the analysis Nyquist frequency \(analysisRate / 2) Hz") }
        guard normalization.rangeDB > 0 else { throw fail("normalization range must be positive") }
    }
}

public struct VisualizerConfigError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { "invalid visualizer settings: \(message)" }
}

/// How each band value is stored in a frame file.
public enum VisSampleEncoding: UInt8, Sendable, Hashable, Codable, CaseIterable {
    /// IEEE 754 binary32, the value as computed.
    case float32 = 0
    /// IEEE 754 binary16 (round to nearest even): about 3 significant digits, half the size.
    case float16 = 1
    /// round(value × 255): a quarter of the size; steps of 1/255.
    case uint8 = 2

    public var bytesPerValue: Int {
        switch self {
        case .float32: return 4
        case .float16: return 2
        case .uint8: return 1
        }
    }

    public var name: String {
        switch self {
        case .float32: return "f32"
        case .float16: return "f16"
        case .uint8: return "u8"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }
}
