import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("SimilarityIndex.path against a direct scan")
struct SimilarityIndexPathTests {
    /// The path as the plain definition computes it: at every step, the distance of every track
    /// still unused and allowed to the step's point, the nearest taken (ties to the first).
    static func reference(_ index: SimilarityIndex<HashedKeys<Int>>, _ features: [SonicFeatures], from a: Int, to b: Int, steps: Int,
                          allowed: (Int) -> Bool) -> [Int] {
        let dimension = SonicFeatures.descriptorCount, n = index.normalisation
        // The normalised vector with each component times √(its group's weight per component), as the index defines it.
        var weights = [Float](repeating: 0, count: dimension)
        for group in SonicFeatures.Group.allCases {
            for d in group.offset..<(group.offset + group.count) { weights[d] = ((SimilarityIndex<HashedKeys<Int>>.groupWeights[group] ?? 0) / Float(group.count)).squareRoot() }
        }
        let vector = { (i: Int) in (0..<dimension).map { d in min(max((features[i].values[d] - n.median[d]) / n.scale[d], -4), 4) * weights[d] } }
        let (va, vb) = (vector(a), vector(b))
        var used: Set<Int> = [a, b]
        var path = [a]
        for step in 1..<(steps - 1) {
            let t = Float(step) / Float(steps - 1)
            // Zero padded to the index's stride, as its rows are.
            let point = (0..<dimension).map { va[$0] * (1 - t) + vb[$0] * t }
                + [Float](repeating: 0, count: SimilarityIndex<HashedKeys<Int>>.descriptorStride - dimension)
            var best: (Float, Int)?
            for i in 0..<index.count where !used.contains(i) && allowed(i) {
                let d = point.withUnsafeBufferPointer { index.descriptorDistance(i, toPoint: $0.baseAddress!) }
                if best == nil || d < best!.0 { best = (d, i) }
            }
            guard let (_, chosen) = best else { break }
            used.insert(chosen)
            path.append(chosen)
        }
        return path + [b]
    }

    @Test("The same tracks in the same order as a direct scan, with exact duplicates (ties), a refused set, and more steps than tracks")
    func matchesDirectScan() throws {
        var random = SeededGenerator(seed: 51)
        let dimension = SonicFeatures.descriptorCount
        let centres = (0..<8).map { _ in (0..<dimension).map { _ in Float.random(in: 0...10, using: &random) } }
        var vectors = (0..<240).map { i in centres[i % 8].map { $0 + Float.random(in: -1.5...1.5, using: &random) } }
        // Exact copies: equal distances, where the first must win.
        vectors += vectors.prefix(24)
        let features = vectors.map { SonicFeatures(descriptors: $0, timbreMean: Array($0.prefix(TimbreGaussian.order))) }
        let normalisation = try #require(SimilarityNormalisation(measuring: features, changeSequence: 1))
        let index = SimilarityIndex(rows: features.enumerated().map { ($0.offset, $0.element) }, normalisation: normalisation)
        let refused = { (i: Int) in i % 7 == 3 }
        for (from, to, steps) in [(0, 1, 12), (5, 245, 20), (17, 130, 2), (3, 99, 50), (10, 11, 300)] {
            // The last refuses nearly every track: each step looks past hundreds of refusals.
            for allowed in [{ (_: Int) in true }, { !refused($0) }, { $0 % 50 == 0 }] {
                let fast = try #require(index.path(from: from, to: to, steps: steps, allowed: allowed)).map(\.id)
                #expect(fast == Self.reference(index, features, from: from, to: to, steps: steps, allowed: allowed), "\(from) → \(to), \(steps) steps")
            }
        }
    }
}

extension SimilarityIndexPathTests {
    @Test("Thousands of refusals per step (a library's copies of one recording): still the direct scan's path")
    func manyRefusals() throws {
        var random = SeededGenerator(seed: 52)
        let dimension = SonicFeatures.descriptorCount
        let base = (0..<dimension).map { _ in Float.random(in: 0...10, using: &random) }
        // 3,000 near copies of one sound and a few others: only every 700th track may be chosen.
        var vectors = (0..<3000).map { _ in base.map { $0 + Float.random(in: -0.05...0.05, using: &random) } }
        vectors += (0..<40).map { _ in (0..<dimension).map { _ in Float.random(in: 0...10, using: &random) } }
        let features = vectors.map { SonicFeatures(descriptors: $0, timbreMean: Array($0.prefix(TimbreGaussian.order))) }
        let normalisation = try #require(SimilarityNormalisation(measuring: features, changeSequence: 1))
        let index = SimilarityIndex(rows: features.enumerated().map { ($0.offset, $0.element) }, normalisation: normalisation)
        let allowed = { (i: Int) in i % 700 == 0 || i >= 3000 }
        for (from, to, steps) in [(3001, 3002, 8), (1, 3039, 6)] {
            let fast = try #require(index.path(from: from, to: to, steps: steps, allowed: allowed)).map(\.id)
            #expect(fast == Self.reference(index, features, from: from, to: to, steps: steps, allowed: allowed), "\(from) → \(to)")
        }
    }
}

extension SimilarityIndexPathTests {
    @Test("The pool of smallest estimates: the sorted prefix of the finite values, ties by index, for few and many")
    func smallest() {
        var random = SeededGenerator(seed: 53)
        // Many ties (values on a coarse grid) and taken tracks (+∞).
        let values = (0..<20_000).map { _ in Bool.random(using: &random) ? Double.infinity : Double(Int.random(in: 0..<500, using: &random)) }
        let finite = values.enumerated().filter { $0.element.isFinite }.map { ($0.element, $0.offset) }
            .sorted { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        for count in [1, 32, 256, 257, 2048, 9_000, 30_000] {
            let got = SimilarityIndex<HashedKeys<Int>>.smallest(count, of: values)
            #expect(got.map(\.1) == finite.prefix(count).map(\.1), "\(count)")
        }
    }
}
