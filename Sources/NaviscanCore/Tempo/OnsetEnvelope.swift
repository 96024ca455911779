import Foundation

/// Onset strength at a 10 ms hop: spectral flux on log-magnitude bands.
///
/// Each hop takes a 1024-point Hann spectrum of the mono analysis-rate stream, maps it to log-spaced
/// bands (`BandMapper`), compresses each band as log(1 + γ·magnitude) and sums the positive
/// differences to the previous hop. Besides the full-band flux it keeps the flux of the bands below
/// 200 Hz (kick drums, bass), which the tempo estimator uses to find the beat level.
/// Memory: two Float per hop (800 bytes per second of audio).
public final class OnsetEnvelope {
    public static let bandCount = 40
    public static let lowBandLimitHz = 200.0
    static let compression: Float = 1000

    public let sampleRate: Int
    public let hop: Int
    /// Envelope frames per second.
    public var frameRate: Double { Double(sampleRate) / Double(hop) }
    public private(set) var flux: [Float] = []
    public private(set) var lowFlux: [Float] = []

    private let fftSize = 1024
    private let spectrum: SpectrumAnalyzer
    private let bands: BandMapper
    private let lowBands: Int
    private let power: UnsafeMutablePointer<Float>
    private let current: UnsafeMutablePointer<Float>
    private let previous: UnsafeMutablePointer<Float>
    private var hasPrevious = false
    private let buffer: UnsafeMutablePointer<Float>
    private let capacity: Int
    private var bufferCount = 0

    public init(sampleRate: Int) {
        self.sampleRate = sampleRate
        hop = max(1, Int((Double(sampleRate) * 0.01).rounded()))
        spectrum = SpectrumAnalyzer(size: fftSize)
        let maxHz = min(16_000, Double(sampleRate) / 2)
        bands = BandMapper(bandCount: Self.bandCount, minHz: 30, maxHz: maxHz, fftSize: fftSize, sampleRate: sampleRate)
        lowBands = (0..<Self.bandCount).filter {
            BandMapper.edge($0 + 1, bandCount: Self.bandCount, minHz: 30, maxHz: maxHz) <= Self.lowBandLimitHz
        }.count
        power = .allocate(capacity: fftSize / 2 + 1)
        current = .allocate(capacity: Self.bandCount)
        previous = .allocate(capacity: Self.bandCount)
        capacity = fftSize + 8192
        buffer = .allocate(capacity: capacity)
        // Half a window of zeros first, so hop i is centred on sample i·hop.
        buffer.initialize(repeating: 0, count: fftSize / 2)
        bufferCount = fftSize / 2
        flux.reserveCapacity(100 * 600)
        lowFlux.reserveCapacity(100 * 600)
    }

    deinit {
        power.deallocate()
        current.deallocate()
        previous.deallocate()
        buffer.deallocate()
    }

    public func process(_ samples: UnsafeBufferPointer<Float>) {
        var offset = 0
        while offset < samples.count {
            let n = min(capacity - bufferCount, samples.count - offset)
            (buffer + bufferCount).update(from: samples.baseAddress! + offset, count: n)
            bufferCount += n
            offset += n
            var start = 0
            while start + fftSize <= bufferCount {
                analyzeFrame(buffer + start)
                start += hop
            }
            if start > 0 {
                buffer.update(from: buffer + start, count: bufferCount - start)
                bufferCount -= start
            }
        }
    }

    private func analyzeFrame(_ frame: UnsafePointer<Float>) {
        spectrum.powerSpectrum(of: frame, into: power)
        bands.map(power, into: current)
        var total: Float = 0
        var low: Float = 0
        for b in 0..<Self.bandCount {
            let level = log1pf(Self.compression * current[b].squareRoot())
            if hasPrevious {
                let rise = max(0, level - previous[b])
                total += rise
                if b < lowBands { low += rise }
            }
            previous[b] = level
        }
        hasPrevious = true
        flux.append(total)
        lowFlux.append(low)
    }
}
