import Foundation

/// The onset front end's compressed band levels, coarsened and kept for the bar-line choice
/// (`BarLines`): a chord or bass change is a change of the spectrum between one beat and the next,
/// which the flux (rises only, summed per region) does not show apart from the drums.
///
/// Every `blockHops` hops (50 ms) one block: the mean level of each of 12 band groups (the low
/// region split evenly into 4, the mid into 5, the high into 3), one byte each in steps of 1/`codeScale`
/// of the ln(1 + γ·magnitude) level (levels run 0–8). 12 bytes per block: 864 kB per hour of audio,
/// kept for the first `Config.barAnalysisSeconds` only (430 kB), so memory stays flat in track length.
public final class BandLevels {
    public static let blockHops = 5
    public static let groupCount = 12
    public static let codeScale: Float = 32
    /// Groups of the low and of the mid region (the rest is the high region).
    public static let lowGroups = 0..<4
    public static let midGroups = 4..<9

    /// The levels kept: `codes[block * groupCount + group]`, block b covering hops 5b…5b+4 (the last
    /// block may cover fewer).
    public struct Summary: Sendable, Equatable {
        public var codes: [UInt8]
        package init(codes: [UInt8]) { self.codes = codes }
        public var blockCount: Int { codes.count / BandLevels.groupCount }
        public static let empty = Summary(codes: [])
    }

    /// First band of each group, then the band count.
    private let edges: [Int]
    /// 1 / the group's width (0 for an empty group).
    private let inverseWidths: [Float]
    private var sums: [Float]
    private var block: [UInt8]
    private var hopsInBlock = 0
    private var codes: [UInt8] = []
    private let capacity: Int

    /// `bandCount` bands, the mid region from `midFirstBand`, the high from `highFirstBand`; `maxHops`
    /// hops are kept.
    public init(bandCount: Int, midFirstBand: Int, highFirstBand: Int, maxHops: Int) {
        func split(_ from: Int, _ to: Int, _ parts: Int) -> [Int] { (0..<parts).map { from + $0 * (to - from) / parts } }
        let edges = split(0, midFirstBand, 4) + split(midFirstBand, highFirstBand, 5) + split(highFirstBand, bandCount, 3) + [bandCount]
        self.edges = edges
        inverseWidths = (0..<Self.groupCount).map { edges[$0 + 1] > edges[$0] ? 1 / Float(edges[$0 + 1] - edges[$0]) : 0 }
        sums = [Float](repeating: 0, count: Self.groupCount)
        block = [UInt8](repeating: 0, count: Self.groupCount)
        capacity = (maxHops + Self.blockHops - 1) / Self.blockHops * Self.groupCount
        codes.reserveCapacity(min(capacity, 600 * 20 * Self.groupCount))
    }

    /// One hop's levels (`bandCount` of them).
    public func append(_ levels: UnsafePointer<Float>) {
        guard codes.count < capacity else { return }
        edges.withUnsafeBufferPointer { edges in
            inverseWidths.withUnsafeBufferPointer { inverse in
                sums.withUnsafeMutableBufferPointer { sums in
                    for g in 0..<Self.groupCount {
                        var s: Float = 0
                        for b in edges[g]..<edges[g + 1] { s += levels[b] }
                        sums[g] += s * inverse[g]
                    }
                }
            }
        }
        hopsInBlock += 1
        if hopsInBlock == Self.blockHops { closeBlock() }
    }

    public func finish() -> Summary {
        if hopsInBlock > 0, codes.count < capacity { closeBlock() }
        return Summary(codes: codes)
    }

    private func closeBlock() {
        let scale = Self.codeScale / Float(hopsInBlock)
        for g in 0..<Self.groupCount {
            block[g] = UInt8(max(0, min(255, (sums[g] * scale + 0.5).rounded(.down))))
            sums[g] = 0
        }
        codes.append(contentsOf: block)
        hopsInBlock = 0
    }
}
