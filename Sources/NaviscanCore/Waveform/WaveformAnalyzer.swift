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

    public func validate() throws {
        guard (1...1000).contains(pointsPerSecond) else { throw WaveformError.badConfig("--waveform-pps must be between 1 and 1000, got \(pointsPerSecond)") }
        guard bits == 8 || bits == 16 else { throw WaveformError.badConfig("--waveform-bits must be 8 or 16, got \(bits)") }
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
/// may be shorter. Work per sample: one add, a compare pair, a multiply-add per lane.
public final class WaveformAnalyzer {
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
        let lanes = data.lanes, spp = data.samplesPerPoint
        let scale = 1 / Float(channels)
        var frame = 0
        while frame < block.frameCount {
            let n = min(spp - filled, block.frameCount - frame)
            for f in frame..<(frame + n) {
                let base = block.samples + f * channels
                if lanes == 1 {
                    var sum: Float = 0
                    for c in 0..<channels { sum += base[c] }
                    let v = sum * scale
                    low[0] = min(low[0], v)
                    high[0] = max(high[0], v)
                    power[0] += Double(v * v)
                } else {
                    for c in 0..<channels {
                        let v = base[c]
                        low[c] = min(low[c], v)
                        high[c] = max(high[c], v)
                        power[c] += Double(v * v)
                    }
                }
            }
            frame += n
            filled += n
            if filled == spp { emit() }
        }
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
    case badConfig(String)
    case notAWaveform(path: String, reason: String)

    public var description: String {
        switch self {
        case .badConfig(let why): return why
        case .notAWaveform(let path, let reason): return "\(path) is not a waveform naviscan reads (\(reason)); run the scan again to rewrite it"
        }
    }
}
