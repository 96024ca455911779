import Foundation
import NaviscanCore
import Testing

/// The streaming tempo statistics against plain whole-sequence definitions.
@Suite("Streaming statistics")
struct StreamingStatisticsTests {
    /// Whole-sequence autocorrelation by definition (O(n·maxLag), Double): mean removed, unbiased, r[0] = 1.
    static func referenceAutocorrelation(_ x: [Double], maxLag: Int) -> [Double] {
        let n = x.count
        let mean = x.reduce(0, +) / Double(n)
        let c = x.map { $0 - mean }
        let zero = c.reduce(0) { $0 + $1 * $1 } / Double(n)
        return (0...maxLag).map { lag in
            var s = 0.0
            for i in 0..<(n - lag) { s += c[i] * c[i + lag] }
            return s / Double(n - lag) / zero
        }
    }

    /// An onset-like sequence: decaying pulses every `period` values on a noise floor, plus an offset.
    static func pulses(count: Int, period: Int, seed: UInt64) -> [Double] {
        var state = seed
        return (0..<count).map { i in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(state >> 40) / Double(1 << 24)
            return 2 + 0.3 * noise + 5 * exp(-Double(i % period) / 3)
        }
    }

    @Test("Block-wise streaming autocorrelation equals the definition, for lengths around the block size",
          arguments: [64, 602])
    func streamingAutocorrelation(maxLag: Int) throws {
        var blockLength = 1024
        while blockLength < 4 * maxLag { blockLength <<= 1 }
        blockLength -= maxLag
        for count in [maxLag + 2, blockLength - 1, blockLength + maxLag, blockLength + maxLag + 1, 3 * blockLength + 17] {
            let x = Self.pulses(count: count, period: 47, seed: UInt64(count))
            let streaming = StreamingAutocorrelation(maxLag: maxLag)
            for v in x { streaming.append(v) }
            let got = try #require(streaming.finish(), "n = \(count)")
            let want = Self.referenceAutocorrelation(x, maxLag: maxLag)
            let worst = zip(got, want).map { abs($0 - $1) }.max()!
            #expect(worst < 2e-4, "n = \(count), lag \(maxLag): max deviation \(worst)")
        }
        // Too short, and constant: no autocorrelation.
        let short = StreamingAutocorrelation(maxLag: maxLag)
        for v in Self.pulses(count: maxLag + 1, period: 5, seed: 1) { short.append(v) }
        #expect(short.finish() == nil)
        let constant = StreamingAutocorrelation(maxLag: maxLag)
        for _ in 0..<(3 * maxLag) { constant.append(0.75) }
        #expect(constant.finish() == nil)
    }

    @Test("Streaming peak emphasis equals the centred moving-mean definition, ends included")
    func peakEmphasis() {
        let half = 50
        for count in [1, 30, 101, 102, 1000] {
            let x = Self.pulses(count: count, period: 13, seed: 9)
            var want: [Double] = []
            for i in 0..<count {
                let lo = max(0, i - half), hi = min(count, i + half + 1)
                want.append(max(0, x[i] - x[lo..<hi].reduce(0, +) / Double(hi - lo)))
            }
            let emphasis = PeakEmphasis(half: half)
            var got: [Double] = []
            for v in x { emphasis.append(v) { got.append($0) } }
            emphasis.finish { got.append($0) }
            #expect(got.count == count)
            #expect(zip(got, want).allSatisfy { abs($0 - $1) < 1e-9 }, "n = \(count)")
        }
    }
}
