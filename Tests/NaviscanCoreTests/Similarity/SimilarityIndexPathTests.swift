import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("SimilarityIndex.path against a direct scan")
struct SimilarityIndexPathTests {
    /// The path as the plain definition computes it: at every step, the distance of every track
    /// still unused and allowed to the step's point, the nearest taken (ties to the first).
    static func reference(_ index: SimilarityIndex<Int>, _ features: [SonicFeatures], from a: Int, to b: Int, steps: Int,
                          allowed: (Int) -> Bool) -> [Int] {
        let dimension = SonicFeatures.dimension, n = index.normalisation
        // The normalised vector with each component times √(its group's weight per component), as the index defines it.
        var weights = [Float](repeating: 0, count: dimension)
        for group in SonicFeatures.Group.allCases {
            for d in group.offset..<(group.offset + group.count) { weights[d] = ((SimilarityIndex<Int>.groupWeights[group] ?? 0) / Float(group.count)).squareRoot() }
        }
        let vector = { (i: Int) in (0..<dimension).map { d in min(max((features[i].values[d] - n.median[d]) / n.scale[d], -4), 4) * weights[d] } }
        let (va, vb) = (vector(a), vector(b))
        var used: Set<Int> = [a, b]
        var path = [a]
        for step in 1..<(steps - 1) {
            let t = Float(step) / Float(steps - 1)
            let point = (0..<dimension).map { va[$0] * (1 - t) + vb[$0] * t }
            var best: (Float, Int)?
            for i in 0..<index.count where !used.contains(i) && allowed(i) {
                let d = point.withUnsafeBufferPointer { index.distance(i, toPoint: $0.baseAddress!) }
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
        let dimension = SonicFeatures.dimension
        let centres = (0..<8).map { _ in (0..<dimension).map { _ in Float.random(in: 0...10, using: &random) } }
        var vectors = (0..<240).map { i in centres[i % 8].map { $0 + Float.random(in: -1.5...1.5, using: &random) } }
        // Exact copies: equal distances, where the first must win.
        vectors += vectors.prefix(24)
        let features = vectors.map(SonicFeatures.init(values:))
        let normalisation = try #require(SimilarityNormalisation(measuring: features, changeSequence: 1))
        let index = SimilarityIndex(rows: features.enumerated().map { ($0.offset, $0.element) }, normalisation: normalisation)
        let refused = { (i: Int) in i % 7 == 3 }
        for (from, to, steps) in [(0, 1, 12), (5, 245, 20), (17, 130, 2), (3, 99, 50), (10, 11, 300)] {
            for allowed in [{ (_: Int) in true }, { !refused($0) }] {
                let fast = try #require(index.path(from: from, to: to, steps: steps, allowed: allowed)).map(\.id)
                #expect(fast == Self.reference(index, features, from: from, to: to, steps: steps, allowed: allowed), "\(from) → \(to), \(steps) steps")
            }
        }
    }
}
