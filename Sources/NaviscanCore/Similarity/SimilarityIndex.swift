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
        guard vectors.count >= 2 else { return nil }
        featuresVersion = SonicFeatures.version
        self.changeSequence = changeSequence
        let dimension = SonicFeatures.dimension
        var median = [Float](repeating: 0, count: dimension), scale = [Float](repeating: 1, count: dimension)
        var column = [Float](repeating: 0, count: vectors.count)
        for d in 0..<dimension {
            for (i, v) in vectors.enumerated() { column[i] = v.values[d] }
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
        let index = SimilarityIndex(rows: vectors.enumerated().map { ($0.offset, $0.element) }, normalisation: self)
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

/// Nearest tracks by sound, brute force over the normalised vectors in memory (100,000 tracks × 55
/// components is 22 MB and one pass per query; an approximate index would pay off only well above a
/// million tracks).
///
/// Distance: the groups (timbre, shape, tonal, rhythm, dynamics) each weigh `groupWeights`, spread
/// over their components: d² = Σ_g w_g · mean over g's components of (z − z')². Similarity is
/// 2^−(d / d½)², 1 for the same sound, ½ at the library's median distance.
public struct SimilarityIndex<ID: Hashable & Sendable>: Sendable {
    /// The groups' weights, chosen on the labelled dev set (docs/similarity.md).
    public static var groupWeights: [SonicFeatures.Group: Float] {
        [.timbre: 1, .shape: 1, .tonal: 0, .rhythm: 0.25, .dynamics: 0]
    }

    public let ids: [ID]
    public let normalisation: SimilarityNormalisation
    /// Normalised vectors, one after another, each component already multiplied by √(its weight).
    private let vectors: [Float]
    private let position: [ID: Int]
    static var dimension: Int { SonicFeatures.dimension }

    // Specialised here for the library's paths: a generic init called from another module runs
    // unspecialised, and for 100,000 tracks that was most of a command's CPU time.
    @_specialize(exported: true, where ID == String)
    public init(rows: [(ID, SonicFeatures)], normalisation: SimilarityNormalisation) {
        self.normalisation = normalisation
        ids = rows.map(\.0)
        var weights = [Float](repeating: 0, count: Self.dimension)
        for group in SonicFeatures.Group.allCases {
            let w = (Self.groupWeights[group] ?? 0) / Float(group.count)
            for d in group.offset..<(group.offset + group.count) { weights[d] = w.squareRoot() }
        }
        let dimension = Self.dimension, clip = SimilarityNormalisation.clip
        var flat = [Float](repeating: 0, count: rows.count * dimension)
        flat.withUnsafeMutableBufferPointer { flat in
            for i in rows.indices {
                rows[i].1.values.withUnsafeBufferPointer { values in
                    for d in 0..<dimension {
                        let z = (values[d] - normalisation.median[d]) / normalisation.scale[d]
                        flat[i * dimension + d] = min(max(z, -clip), clip) * weights[d]
                    }
                }
            }
        }
        vectors = flat
        var position = [ID: Int](minimumCapacity: rows.count)
        for (i, id) in ids.enumerated() where position[id] == nil { position[id] = i }
        self.position = position
    }

    public var count: Int { ids.count }
    @_specialize(exported: true, where ID == String)
    public func contains(_ id: ID) -> Bool { position[id] != nil }
    /// Where `id` is in `ids`.
    @_specialize(exported: true, where ID == String)
    public func position(of id: ID) -> Int? { position[id] }

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
    public func nearest(to id: ID, count: Int, excluding excluded: Set<ID> = []) -> [Neighbour]? {
        guard let query = position[id] else { return nil }
        var best: [(Float, Int)] = []
        best.reserveCapacity(count + 1)
        for i in 0..<ids.count where i != query && !excluded.contains(ids[i]) {
            let d = distance(query, i)
            if best.count < count || d < best[best.count - 1].0 {
                let at = best.firstIndex { d < $0.0 } ?? best.count
                best.insert((d, i), at: at)
                if best.count > count { best.removeLast() }
            }
        }
        return best.map { Neighbour(id: ids[$0.1], similarity: similarity(distance: $0.0), distance: $0.0) }
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
        guard let a = position[from], let b = position[to], steps >= 2 else { return nil }
        let n = ids.count, dimension = Self.dimension
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
            var chosen: Int?
            while chosen == nil {
                var best = Double.infinity
                for i in 0..<n where !excluded[i] { best = min(best, norm[i] - ta * dotA[i] - tb * dotB[i] + pointNorm) }
                guard best.isFinite else { break }
                // Float rounding in the dot products and in p itself, with room to spare.
                let margin = 1e-3 * (1 + abs(best))
                var exact: (Float, Int)?
                point.withUnsafeBufferPointer { p in
                    for i in 0..<n where !excluded[i] && norm[i] - ta * dotA[i] - tb * dotB[i] + pointNorm <= best + margin {
                        let d = distance(i, toPoint: p.baseAddress!)
                        if exact == nil || d < exact!.0 { exact = (d, i) }
                    }
                }
                guard let (_, candidate) = exact else { break }
                excluded[candidate] = true
                if allowed(ids[candidate]) { chosen = candidate }
            }
            guard let chosen else { break }
            result.append(Neighbour(id: ids[chosen], similarity: similarity(distance: distance(a, chosen)), distance: distance(a, chosen)))
        }
        result.append(Neighbour(id: to, similarity: similarity(distance: distance(a, b)), distance: distance(a, b)))
        return result
    }

    /// Distance between two indexed tracks (nil when either has no vector).
    public func distance(_ a: ID, _ b: ID) -> Float? {
        guard let i = position[a], let j = position[b] else { return nil }
        return distance(i, j)
    }
}
