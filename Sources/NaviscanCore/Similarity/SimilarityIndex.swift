import Foundation

/// How the library's features are put on one scale: per component, a robust z-score (median and
/// 1.4826 × median absolute deviation over the library, clipped to ±4), and the distance at which
/// two tracks are half similar (the median distance between tracks of the library).
public struct SimilarityNormalisation: Codable, Sendable, Equatable {
    public var featuresVersion: Int
    /// The store's change sequence it was measured at: stale once tracks change.
    public var changeSequence: Int64
    public var median: [Float]
    public var scale: [Float]
    public var halfSimilarDistance: Float

    static let clip: Float = 4

    public init(featuresVersion: Int, changeSequence: Int64, median: [Float], scale: [Float], halfSimilarDistance: Float) {
        self.featuresVersion = featuresVersion
        self.changeSequence = changeSequence
        self.median = median
        self.scale = scale
        self.halfSimilarDistance = halfSimilarDistance
    }

    /// Measures `vectors`; nil for fewer than two.
    public init?(measuring vectors: [SonicFeatures], changeSequence: Int64) {
        self.init(measuring: FeatureMatrix(vectors), changeSequence: changeSequence)
    }

    /// Measures `vectors`; nil for fewer than two.
    public init?(measuring vectors: FeatureMatrix, changeSequence: Int64) {
        guard vectors.count >= 2 else { return nil }
        featuresVersion = SonicFeatures.version
        self.changeSequence = changeSequence
        let dimension = SonicFeatures.dimension
        var median = [Float](repeating: 0, count: dimension), scale = [Float](repeating: 1, count: dimension)
        var column = [Float](repeating: 0, count: vectors.count)
        for d in 0..<dimension {
            for i in 0..<vectors.count { column[i] = vectors.value(i, d) }
            let m = Self.median(&column)
            for i in column.indices { column[i] = abs(column[i] - m) }
            let mad = Self.median(&column) * 1.4826
            median[d] = m
            // A component that hardly varies across the library must not dominate through a tiny scale.
            scale[d] = max(mad, 1e-3 * max(1, abs(m)))
        }
        self.median = median
        self.scale = scale
        halfSimilarDistance = 1
        let index = SimilarityIndex(keys: HashedKeys(Array(0..<vectors.count)), features: vectors, normalisation: self)
        // The median over up to 20,000 pairs, spread evenly over the library.
        var distances: [Float] = []
        let n = vectors.count
        let pairs = min(20_000, n * (n - 1) / 2)
        for k in 0..<pairs {
            // Every track in turn, each with partners spread over the library (never itself).
            let a = k % n
            let b = (a + 1 + Int((UInt64(k) &* 2_654_435_761) % UInt64(n - 1))) % n
            distances.append(index.distance(a, b))
        }
        halfSimilarDistance = max(1e-3, Self.median(&distances))
    }

    /// No scaling (a library of one track, which has no neighbours anyway).
    public static func identity(changeSequence: Int64) -> SimilarityNormalisation {
        SimilarityNormalisation(featuresVersion: SonicFeatures.version, changeSequence: changeSequence,
                                median: .init(repeating: 0, count: SonicFeatures.dimension),
                                scale: .init(repeating: 1, count: SonicFeatures.dimension), halfSimilarDistance: 1)
    }

    static func median(_ values: inout [Float]) -> Float {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }
}

/// Nearest tracks by sound, brute force over the normalised vectors in memory (100,000 tracks × 43
/// components is 17 MB and one pass per query; an approximate index would pay off only well above a
/// million tracks).
///
/// Distance: the groups (timbre, shape, tonal, rhythm, dynamics) each weigh `groupWeights`, spread
/// over their components: d² = Σ_g w_g · mean over g's components of (z − z')². Similarity is
/// 2^−(d / d½)², 1 for the same sound, ½ at the library's median distance.
public struct SimilarityIndex<Keys: SimilarityKeys>: Sendable {
    public typealias ID = Keys.Key

    /// The groups' weights, chosen on the labelled dev set (docs/similarity.md).
    public static var groupWeights: [SonicFeatures.Group: Float] {
        [.timbre: 1, .shape: 1, .tonal: 0, .rhythm: 0.25, .dynamics: 0]
    }

    /// Row i's name.
    public let keys: Keys
    public let normalisation: SimilarityNormalisation
    /// Normalised vectors, one after another, each component already multiplied by √(its weight).
    private let vectors: [Float]
    static var dimension: Int { SonicFeatures.dimension }

    public init<Key>(rows: [(Key, SonicFeatures)], normalisation: SimilarityNormalisation) where Keys == HashedKeys<Key> {
        self.init(keys: HashedKeys(rows.map(\.0)), features: FeatureMatrix(rows.map(\.1)), normalisation: normalisation)
    }

    /// `keys[i]` has the vector of row i of `features`; the matrix's storage becomes the index's
    /// (normalised in place, no copy when the caller keeps no other reference).
    @_specialize(exported: true, where Keys == SortedPaths)
    public init(keys: Keys, features: consuming FeatureMatrix, normalisation: SimilarityNormalisation) {
        precondition(keys.count == features.count)
        self.normalisation = normalisation
        self.keys = keys
        var weights = [Float](repeating: 0, count: Self.dimension)
        for group in SonicFeatures.Group.allCases {
            let w = (Self.groupWeights[group] ?? 0) / Float(group.count)
            for d in group.offset..<(group.offset + group.count) { weights[d] = w.squareRoot() }
        }
        let dimension = Self.dimension, clip = SimilarityNormalisation.clip
        var flat = features.takeValues()
        flat.withUnsafeMutableBufferPointer { flat in
            for i in 0..<keys.count {
                for d in 0..<dimension {
                    let z = (flat[i * dimension + d] - normalisation.median[d]) / normalisation.scale[d]
                    flat[i * dimension + d] = min(max(z, -clip), clip) * weights[d]
                }
            }
        }
        vectors = flat
    }

    public var count: Int { keys.count }
    @_specialize(exported: true, where Keys == SortedPaths)
    public func contains(_ id: ID) -> Bool { keys.position(of: id) != nil }
    /// Where `id` is in `keys`.
    @_specialize(exported: true, where Keys == SortedPaths)
    public func position(of id: ID) -> Int? { keys.position(of: id) }

    package func distance(_ a: Int, _ b: Int) -> Float {
        vectors.withUnsafeBufferPointer { distance(a, toPoint: $0.baseAddress! + b * Self.dimension) }
    }

    /// From track `a` to a point of the normalised, weighted space (`dimension` values).
    package func distance(_ a: Int, toPoint point: UnsafePointer<Float>) -> Float {
        vectors.withUnsafeBufferPointer { v in
            var sum: Float = 0
            for d in 0..<Self.dimension {
                let x = v[a * Self.dimension + d] - point[d]
                sum += x * x
            }
            return sum.squareRoot()
        }
    }

    public func similarity(distance: Float) -> Double {
        let ratio = Double(distance / normalisation.halfSimilarDistance)
        return pow(2, -ratio * ratio)
    }

    public struct Neighbour: Sendable, Equatable {
        public var id: ID
        public var similarity: Double
        public var distance: Float

        public init(id: ID, similarity: Double, distance: Float) {
            self.id = id
            self.similarity = similarity
            self.distance = distance
        }
    }

    /// The `count` nearest to `id`, nearest first, never `id` itself; nil when `id` has no vector.
    @_specialize(exported: true, where Keys == SortedPaths)
    public func nearest(to id: ID, count: Int, excluding excluded: Set<ID> = []) -> [Neighbour]? {
        guard let query = keys.position(of: id) else { return nil }
        let skipped = Set(excluded.compactMap(keys.position(of:)))
        var best: [(Float, Int)] = []
        best.reserveCapacity(count + 1)
        for i in 0..<keys.count where i != query && (skipped.isEmpty || !skipped.contains(i)) {
            let d = distance(query, i)
            if best.count < count || d < best[best.count - 1].0 {
                let at = best.firstIndex { d < $0.0 } ?? best.count
                best.insert((d, i), at: at)
                if best.count > count { best.removeLast() }
            }
        }
        return best.map { Neighbour(id: keys[$0.1], similarity: similarity(distance: $0.0), distance: $0.0) }
    }

    /// A sonic path: `steps` tracks from `from` to `to` (both included), each between the track
    /// before it and the goal, the vector moving evenly from one to the other. `allowed` is asked only
    /// of a track about to be chosen; one it refuses is never chosen.
    ///
    /// One pass over the vectors gives every track's |x|², x·a and x·b; each step's squared distance
    /// from x to its point p ≈ (1 − t)a + tb is then |x|² − 2((1 − t)x·a + t x·b) + |p|², a few
    /// operations per track instead of a pass over its components (docs/performance.md). That sum
    /// rounds differently from the direct one, so the tracks within its rounding of the best are
    /// measured directly and the nearest of those is taken: the track a direct scan picks, ties to
    /// the first.
    public func path(from: ID, to: ID, steps: Int, allowed: (ID) -> Bool = { _ in true }) -> [Neighbour]? {
        path(from: from, to: to, steps: steps, allowedRow: { allowed(keys[$0]) })
    }

    /// `path(from:to:steps:allowed:)` asking of rows (`keys[row]`), not of keys.
    @_specialize(exported: true, where Keys == SortedPaths)
    public func path(from: ID, to: ID, steps: Int, allowedRow allowed: (Int) -> Bool) -> [Neighbour]? {
        guard let a = keys.position(of: from), let b = keys.position(of: to), steps >= 2 else { return nil }
        let n = keys.count, dimension = Self.dimension
        var norm = [Double](repeating: 0, count: n), dotA = norm, dotB = norm
        vectors.withUnsafeBufferPointer { v in
            let va = v.baseAddress! + a * dimension, vb = v.baseAddress! + b * dimension
            for i in 0..<n {
                let x = v.baseAddress! + i * dimension
                var xx: Float = 0, xa: Float = 0, xb: Float = 0
                for d in 0..<dimension {
                    xx += x[d] * x[d]
                    xa += x[d] * va[d]
                    xb += x[d] * vb[d]
                }
                (norm[i], dotA[i], dotB[i]) = (Double(xx), Double(xa), Double(xb))
            }
        }
        // Each step's estimated squared distance per track; +∞ once a track is taken or refused.
        var score = [Double](repeating: 0, count: n)
        var excluded = [Bool](repeating: false, count: n)
        excluded[a] = true
        excluded[b] = true
        var result = [Neighbour(id: from, similarity: 1, distance: 0)]
        for step in 1..<(steps - 1) {
            let t = Float(step) / Float(steps - 1)
            let point = (0..<dimension).map { d in
                vectors[a * dimension + d] * (1 - t) + vectors[b * dimension + d] * t
            }
            let pointNorm = point.reduce(0) { $0 + Double($1) * Double($1) }
            let (ta, tb) = (2 * Double(1 - t), 2 * Double(t))
            for i in 0..<n { score[i] = excluded[i] ? .infinity : norm[i] - ta * dotA[i] - tb * dotB[i] + pointNorm }
            // The best few by estimate, so that a refused track (the same recording as an end: a
            // library can hold thousands of copies) costs a look at the few, not a pass over all.
            var poolSize = 32
            var chosen: Int?
            search: while chosen == nil {
                let pool = Self.smallest(poolSize, of: score)
                // Every track estimated below `bound` is in the pool.
                let bound = pool.count < poolSize ? Double.infinity : pool[pool.count - 1].0
                // Per pool entry: refused already, and its exact distance once measured.
                var refused = [Bool](repeating: false, count: pool.count)
                var exact = [Float](repeating: .nan, count: pool.count)
                var first = 0
                while chosen == nil {
                    while first < pool.count && refused[first] { first += 1 }
                    guard first < pool.count else {
                        guard bound.isFinite else { break search }
                        poolSize *= 4
                        continue search
                    }
                    let best = pool[first].0
                    // Float rounding in the dot products and in p itself, with room to spare.
                    let limit = best + 1e-3 * (1 + abs(best))
                    guard limit < bound else {
                        poolSize *= 4
                        continue search
                    }
                    // The pool is in estimate order: those within the rounding of the best come first.
                    var nearest: Int?
                    point.withUnsafeBufferPointer { p in
                        for at in first..<pool.count where !refused[at] {
                            if pool[at].0 > limit { break }
                            if exact[at].isNaN { exact[at] = distance(pool[at].1, toPoint: p.baseAddress!) }
                            // The nearest, ties to the first in the index, as a direct scan picks.
                            if let n = nearest, exact[at] > exact[n] || (exact[at] == exact[n] && pool[at].1 > pool[n].1) { continue }
                            nearest = at
                        }
                    }
                    guard let at = nearest else { break search }
                    let candidate = pool[at].1
                    refused[at] = true
                    excluded[candidate] = true
                    score[candidate] = .infinity
                    if allowed(candidate) { chosen = candidate }
                }
            }
            guard let chosen else { break }
            result.append(Neighbour(id: keys[chosen], similarity: similarity(distance: distance(a, chosen)), distance: distance(a, chosen)))
        }
        result.append(Neighbour(id: to, similarity: similarity(distance: distance(a, b)), distance: distance(a, b)))
        return result
    }

    /// The `count` smallest finite values of `values` with their indices, smallest first.
    package static func smallest(_ count: Int, of values: [Double]) -> [(Double, Int)] {
        // Insertion into a short sorted list is cheapest for a few; for many, a selection of the
        // `count` smallest (Hoare's, in linear time on average), then a sort of those alone.
        if count > 256 {
            var all: [(Double, Int)] = []
            for (i, value) in values.enumerated() where value.isFinite { all.append((value, i)) }
            let precedes = { (a: (Double, Int), b: (Double, Int)) in a.0 < b.0 || (a.0 == b.0 && a.1 < b.1) }
            if all.count > count {
                var low = 0, high = all.count - 1
                while low < high {
                    let pivot = all[(low + high) / 2]
                    var i = low, j = high
                    while i <= j {
                        while precedes(all[i], pivot) { i += 1 }
                        while precedes(pivot, all[j]) { j -= 1 }
                        if i <= j {
                            all.swapAt(i, j)
                            i += 1
                            j -= 1
                        }
                    }
                    if count - 1 <= j { high = j } else if count - 1 >= i { low = i } else { break }
                }
                all.removeSubrange(count...)
            }
            all.sort(by: precedes)
            return all
        }
        var best: [(Double, Int)] = []
        best.reserveCapacity(count + 1)
        for (i, value) in values.enumerated() where value.isFinite && (best.count < count || value < best[best.count - 1].0) {
            let at = best.firstIndex { value < $0.0 } ?? best.count
            best.insert((value, i), at: at)
            if best.count > count { best.removeLast() }
        }
        return best
    }

    /// Distance between two indexed tracks (nil when either has no vector).
    @_specialize(exported: true, where Keys == SortedPaths)
    public func distance(_ a: ID, _ b: ID) -> Float? {
        guard let i = keys.position(of: a), let j = keys.position(of: b) else { return nil }
        return distance(i, j)
    }
}
