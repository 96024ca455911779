import Foundation

/// ITU-R BS.1770-4 gating and EBU Tech 3342 loudness range over consecutive 100 ms block energies.
///
/// libebur128 in its I and LRA modes sums every filtered sample seven times (a 400 ms block every
/// 100 ms, a 3 s block every second). Built from 100 ms energies instead, each sample is summed once:
/// a 400 ms block is the mean of four consecutive 100 ms energies, a 3 s block the mean of thirty.
/// Block timing, gates, percentiles and edge values follow libebur128's block-list mode exactly
/// (the first 400 ms block ends at 400 ms, one every 100 ms after; the first 3 s block at 3 s, one
/// every second after; a trailing part-block counts for neither), so the results agree with it to
/// rounding. Energies are channel-weighted mean squares of the K-weighted signal.
struct LoudnessGating {
    /// −70 LUFS, the absolute gate, as an energy.
    static let absoluteGate = energy(loudness: -70)
    /// The relative gates: −10 LU for integrated loudness, −20 LU for the loudness range.
    static let integratedRelativeGate = pow(10, -10.0 / 10)
    static let rangeRelativeGate = pow(10, -20.0 / 10)

    static func loudness(energy: Double) -> Double { 10 * log10(energy) - 0.691 }
    static func energy(loudness: Double) -> Double { pow(10, (loudness + 0.691) / 10) }

    /// The last thirty 100 ms energies, as a ring.
    private var recent = [Double](repeating: 0, count: 30)
    private var count = 0
    /// 400 ms block energies above the absolute gate.
    private(set) var momentaryBlocks: [Double] = []
    /// 3 s block energies above the absolute gate.
    private(set) var shortTermBlocks: [Double] = []
    /// The energy of the latest 400 ms block, gated or not; nil before the first.
    private(set) var latestMomentary: Double?

    init() {
        momentaryBlocks.reserveCapacity(10 * 600)
        shortTermBlocks.reserveCapacity(600)
    }

    /// Appends the energy of the next 100 ms.
    mutating func add(energy: Double) {
        recent[count % 30] = energy
        count += 1
        if count >= 4 {
            let block = meanOfLast(4)
            latestMomentary = block
            if block >= Self.absoluteGate { momentaryBlocks.append(block) }
        }
        if count >= 30, (count - 30) % 10 == 0 {
            let block = meanOfLast(30)
            if block >= Self.absoluteGate { shortTermBlocks.append(block) }
        }
    }

    private func meanOfLast(_ n: Int) -> Double {
        var sum = 0.0
        for k in (count - n)..<count { sum += recent[k % 30] }
        return sum / Double(n)
    }

    /// Integrated loudness in LUFS; nil when no 400 ms block passes the gates (silence, or under 400 ms).
    func integratedLoudness() -> Double? {
        guard !momentaryBlocks.isEmpty else { return nil }
        let gate = momentaryBlocks.reduce(0, +) / Double(momentaryBlocks.count) * Self.integratedRelativeGate
        var sum = 0.0, n = 0
        for e in momentaryBlocks where e >= gate { sum += e; n += 1 }
        return n > 0 ? Self.loudness(energy: sum / Double(n)) : nil
    }

    /// Loudness range in LU: the 10th to 95th percentile of the gated 3 s loudness values. 0 when no
    /// 3 s block passes the gates (libebur128's value for that case).
    func loudnessRange() -> Double {
        guard !shortTermBlocks.isEmpty else { return 0 }
        let gate = shortTermBlocks.reduce(0, +) / Double(shortTermBlocks.count) * Self.rangeRelativeGate
        let gated = shortTermBlocks.filter { $0 >= gate }.sorted()
        guard !gated.isEmpty else { return 0 }
        let high = gated[Int(Double(gated.count - 1) * 0.95 + 0.5)]
        let low = gated[Int(Double(gated.count - 1) * 0.1 + 0.5)]
        return Self.loudness(energy: high) - Self.loudness(energy: low)
    }
}
