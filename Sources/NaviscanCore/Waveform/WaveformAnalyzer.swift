import Foundation

/// Parameters of the seek-bar waveform (part of the profile's parameters and fingerprint).
public struct WaveformConfig: Sendable, Hashable, Codable {
    /// Points (min/max pairs) per second of audio.
    public var pointsPerSecond = 50
    /// 8 or 16: the `.dat` file's sample resolution.
    public var bits = 8
    /// One min/max lane per source channel instead of one for the mono mix.
    public var perChannel = false

    public init() {}

    public static let pointsPerSecondRange = 1...1000
    public static let supportedBits = [8, 16]

    public func validate() throws {
        guard Self.pointsPerSecondRange.contains(pointsPerSecond) else { throw WaveformError.pointsPerSecondOutOfRange(pointsPerSecond) }
        guard Self.supportedBits.contains(bits) else { throw WaveformError.bitsUnsupported(bits) }
    }

    /// Source samples per point: the rate over the points per second, rounded (at least 1).
    public func samplesPerPoint(sampleRate: Int) -> Int { max(1, Int((Double(sampleRate) / Double(pointsPerSecond)).rounded())) }
}

/// A track's waveform: per point and lane, the minimum, maximum and RMS of the samples, as floats.
/// Point 0 starts at the first played sample (the decoders trim encoder delay and padding).
public struct WaveformData: Sendable, Equatable {
    public var sampleRate: Int
    public var samplesPerPoint: Int
    /// 1 (the mono mix) or the source's channel count.
    public var lanes: Int
    /// Interleaved by lane: point p, lane l at `p * lanes + l`.
    public var minima: [Float] = []
    public var maxima: [Float] = []
    public var rms: [Float] = []

    public var pointCount: Int { minima.count / max(1, lanes) }
    public var duration: Double { Double(pointCount * samplesPerPoint) / Double(sampleRate) }
}

/// Min/max and RMS of each slot of `samplesPerPoint` source frames, on the mono mix (the channels'
/// mean, as audiowaveform mixes) or per channel, fed the native-rate decoded blocks. The last slot
/// may be shorter.
public final class WaveformAnalyzer {
    /// The waveform stage's version: bump it when the points it writes change.
    public static let version = 1

    public let config: WaveformConfig
    private let channels: Int
    private var data: WaveformData
    private var low: [Float], high: [Float], power: [Double]
    private var filled = 0

    public init(config: WaveformConfig, sampleRate: Int, channels: Int, expectedSeconds: Double = 600) {
        self.config = config
        self.channels = channels
        let lanes = config.perChannel ? channels : 1
        data = WaveformData(sampleRate: sampleRate, samplesPerPoint: config.samplesPerPoint(sampleRate: sampleRate), lanes: lanes)
        let capacity = Int(expectedSeconds * Double(config.pointsPerSecond) + 1) * lanes
        data.minima.reserveCapacity(capacity)
        data.maxima.reserveCapacity(capacity)
        data.rms.reserveCapacity(capacity)
        low = [Float](repeating: .infinity, count: lanes)
        high = [Float](repeating: -.infinity, count: lanes)
        power = [Double](repeating: 0, count: lanes)
    }

    public func process(_ block: AudioBlock) {
        let spp = data.samplesPerPoint
        var frame = 0
        while frame < block.frameCount {
            let n = min(spp - filled, block.frameCount - frame)
            let start = block.samples + frame * channels
            if data.lanes == 1 {
                accumulateMix(start, frames: n)
            } else {
                for c in 0..<channels { accumulate(lane: c, start + c, frames: n) }
            }
            frame += n
            filled += n
            if filled == spp { emit() }
        }
    }

    /// The channels' mean of `frames` frames into lane 0. Locals, not the arrays, in the loop: a
    /// class's array element written per sample costs a uniqueness and an exclusivity check each.
    private func accumulateMix(_ samples: UnsafePointer<Float>, frames: Int) {
        var lo = low[0], hi = high[0], sum: Float = 0
        var first = 0
        if channels == 2 {
            // Eight frames at a time: the scalar min/max/sum chain does not vectorise by itself. A compare
            // and select, not the standard library's `pointwiseMin`/`pointwiseMax` (not inlined: a call per
            // eight frames).
            var lo8 = SIMD8<Float>(repeating: lo), hi8 = SIMD8<Float>(repeating: hi), sum8 = SIMD8<Float>()
            while first + 8 <= frames {
                let pair = SIMD16<Float>(lowHalf: loadSIMD8(samples + 2 * first), highHalf: loadSIMD8(samples + 2 * first + 8))
                let v = (pair.evenHalf + pair.oddHalf) * 0.5
                lo8.replace(with: v, where: v .< lo8)
                hi8.replace(with: v, where: v .> hi8)
                sum8 += v * v
                first += 8
            }
            lo = lo8.min()
            hi = hi8.max()
            sum = sum8.sum()
            for f in first..<frames {
                let v = (samples[2 * f] + samples[2 * f + 1]) * 0.5
                lo = min(lo, v)
                hi = max(hi, v)
                sum += v * v
            }
        } else {
            let scale = 1 / Float(channels)
            for f in 0..<frames {
                var mix: Float = 0
                for c in 0..<channels { mix += samples[f * channels + c] }
                let v = mix * scale
                lo = min(lo, v)
                hi = max(hi, v)
                sum += v * v
            }
        }
        low[0] = lo
        high[0] = hi
        power[0] += Double(sum)
    }

    private func accumulate(lane: Int, _ samples: UnsafePointer<Float>, frames: Int) {
        var lo = low[lane], hi = high[lane], sum: Float = 0
        for f in 0..<frames {
            let v = samples[f * channels]
            lo = min(lo, v)
            hi = max(hi, v)
            sum += v * v
        }
        low[lane] = lo
        high[lane] = hi
        power[lane] += Double(sum)
    }

    private func emit() {
        for lane in 0..<data.lanes {
            data.minima.append(low[lane])
            data.maxima.append(high[lane])
            data.rms.append(Float((power[lane] / Double(filled)).squareRoot()))
            low[lane] = .infinity
            high[lane] = -.infinity
            power[lane] = 0
        }
        filled = 0
    }

    public func finish() -> WaveformData {
        if filled > 0 { emit() }
        return data
    }
}

public enum WaveformError: Error, Equatable, CustomStringConvertible {
    case pointsPerSecondOutOfRange(Int)
    case bitsUnsupported(Int)
    case notAWaveform(path: String, reason: String)
    /// The file exists but could not be read (permission, I/O error), or does not exist.
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .pointsPerSecondOutOfRange(let pps): return "waveform points per second must be between 1 and 1000, got \(pps)"
        case .bitsUnsupported(let bits): return "waveform bits must be 8 or 16, got \(bits)"
        case .notAWaveform(let path, let reason): return "\(path) is not a waveform naviscan reads (\(reason)); run the scan again to rewrite it"
        case .unreadable(let path, let reason): return "\(path) cannot be read (\(reason))"
        }
    }
}
