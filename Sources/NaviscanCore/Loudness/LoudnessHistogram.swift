import Foundation

/// A track's 400 ms gating blocks, kept so an album's loudness can be gated over all its tracks'
/// blocks together (what libebur128's `ebur128_loudness_global_multiple` computes) from stored data,
/// without decoding anything again.
///
/// Blocks above the absolute gate are counted in 0.1 LU bins from −70 to +30 LUFS (libebur128's own
/// histogram grid), and each bin also keeps the exact sum of its blocks' energies. The relative gate
/// is then exact (total energy / total count), every bin above the gate's bin is summed exactly, and
/// only the one bin the gate falls in is split, in proportion to where the gate lies in it. The size
/// is bounded (at most 1,000 bins of 14 bytes; corpus tracks filled 78–283) whatever the length,
/// where the block energies themselves would cost 40 bytes a second of audio.
public struct LoudnessHistogram: Sendable, Equatable {
    public struct Bin: Sendable, Equatable {
        public var index: Int
        public var count: Int
        /// The sum of the energies of the blocks in this bin.
        public var energy: Double
    }

    public static let lowestLUFS = -70.0
    public static let binWidth = 0.1
    public static let binCount = 1000
    /// Version of `encoded()`; `init(encoded:)` rejects any other.
    static let formatVersion: UInt8 = 1

    /// The non-empty bins, by increasing loudness.
    public private(set) var bins: [Bin]

    public var blockCount: Int { bins.reduce(0) { $0 + $1.count } }

    /// From block energies (channel-weighted mean squares) that passed the absolute gate.
    init<Energies: Sequence>(blockEnergies: Energies) where Energies.Element == Double {
        var counts = [Int](repeating: 0, count: Self.binCount)
        var sums = [Double](repeating: 0, count: Self.binCount)
        for energy in blockEnergies where energy >= LoudnessGating.absoluteGate {
            let index = Self.bin(of: energy)
            counts[index] += 1
            sums[index] += energy
        }
        bins = counts.indices.compactMap { counts[$0] > 0 ? Bin(index: $0, count: counts[$0], energy: sums[$0]) : nil }
    }

    static func bin(of energy: Double) -> Int {
        let position = (LoudnessGating.loudness(energy: energy) - lowestLUFS) / binWidth
        return min(binCount - 1, max(0, Int(saturating: position.rounded(.down))))
    }

    /// The integrated loudness (LUFS) of all the blocks of `histograms` gated together; nil when
    /// none has a block (every member silent).
    public static func integratedLoudness<Histograms: Sequence>(of histograms: Histograms) -> Double? where Histograms.Element == LoudnessHistogram {
        var counts = [Int](repeating: 0, count: binCount)
        var sums = [Double](repeating: 0, count: binCount)
        for histogram in histograms {
            for bin in histogram.bins {
                counts[bin.index] += bin.count
                sums[bin.index] += bin.energy
            }
        }
        let total = counts.reduce(0, +)
        guard total > 0 else { return nil }
        let gate = sums.reduce(0, +) / Double(total) * LoudnessGating.integratedRelativeGate
        let gateLUFS = LoudnessGating.loudness(energy: gate)
        let gateBin = bin(of: gate)
        // The share of the gate's bin at or above the gate, taking its blocks as spread evenly.
        let upperEdge = lowestLUFS + Double(gateBin + 1) * binWidth
        let share = gateBin == 0 && gateLUFS < lowestLUFS ? 1 : min(1, max(0, (upperEdge - gateLUFS) / binWidth))
        var energy = sums[gateBin] * share, count = Double(counts[gateBin]) * share
        for index in (gateBin + 1)..<binCount {
            energy += sums[index]
            count += Double(counts[index])
        }
        return count > 0 ? LoudnessGating.loudness(energy: energy / count) : nil
    }

    // MARK: stored form

    /// Version byte, bin count (UInt16), then per bin: index (UInt16), count (UInt32), energy sum
    /// (Float64), all little-endian.
    public func encoded() -> Data {
        var data = Data(capacity: 3 + 14 * bins.count)
        data.append(Self.formatVersion)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        append(UInt16(bins.count))
        for bin in bins {
            append(UInt16(bin.index))
            append(UInt32(clamping: bin.count))
            append(bin.energy.bitPattern)
        }
        return data
    }

    public init(encoded data: Data) throws {
        let bytes = [UInt8](data)
        guard let version = bytes.first, version == Self.formatVersion else {
            throw LoudnessHistogramError.unknownVersion(bytes.first.map(Int.init))
        }
        guard bytes.count >= 3 else { throw LoudnessHistogramError.damaged }
        func read<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
            var value = T.zero
            for k in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + k]) << (8 * k) }
            return value
        }
        let n = Int(read(UInt16.self, at: 1))
        guard bytes.count == 3 + 14 * n else { throw LoudnessHistogramError.damaged }
        var bins: [Bin] = []
        bins.reserveCapacity(n)
        for k in 0..<n {
            let at = 3 + 14 * k
            let bin = Bin(index: Int(read(UInt16.self, at: at)), count: Int(read(UInt32.self, at: at + 2)),
                          energy: Double(bitPattern: read(UInt64.self, at: at + 6)))
            guard (0..<Self.binCount).contains(bin.index), bin.index > (bins.last?.index ?? -1), bin.count > 0,
                  bin.energy.isFinite, bin.energy > 0 else { throw LoudnessHistogramError.damaged }
            bins.append(bin)
        }
        self.bins = bins
    }
}

public enum LoudnessHistogramError: Error, Equatable, CustomStringConvertible {
    case unknownVersion(Int?)
    case damaged

    public var description: String {
        switch self {
        case .unknownVersion(let v):
            return "the stored loudness histogram has format version \(v.map(String.init) ?? "none"), which this naviscan does not read; analyse the track again"
        case .damaged:
            return "the stored loudness histogram is damaged; analyse the track again"
        }
    }
}
