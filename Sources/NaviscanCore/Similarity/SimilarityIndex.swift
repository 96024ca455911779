import Foundation

/// How the library's features are put on one scale: per descriptor, a robust z-score (median and
/// 1.4826 × median absolute deviation over the library, clipped to ±4); the timbre Gaussians' means
/// taken about the library's median mean; the median divergence and descriptor distance that put the
/// two on one scale; and the distance at which two tracks are half similar (the median distance
/// between tracks of the library).
public struct SimilarityNormalisation: Codable, Sendable, Equatable {
    public var featuresVersion: Int
    /// The store's change sequence it was measured at: stale once tracks change.
    public var changeSequence: Int64
    public var median: [Float]
    public var scale: [Float]
    /// The median over the library of each cepstral mean of the timbre Gaussians.
    public var timbreCenter: [Float]
    /// Median over pairs of tracks of the squared, weighted descriptor distance.
    public var descriptorMedian: Float
    /// Median over pairs of the timbre Gaussians' divergence.
    public var divergenceMedian: Float
    public var halfSimilarDistance: Float

    static let clip: Float = 4

    public init(featuresVersion: Int, changeSequence: Int64, median: [Float], scale: [Float], timbreCenter: [Float],
                descriptorMedian: Float, divergenceMedian: Float, halfSimilarDistance: Float) {
        self.featuresVersion = featuresVersion
        self.changeSequence = changeSequence
        self.median = median
        self.scale = scale
        self.timbreCenter = timbreCenter
        self.descriptorMedian = descriptorMedian
        self.divergenceMedian = divergenceMedian
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
        let descriptors = SonicFeatures.descriptorCount
        var median = [Float](repeating: 0, count: descriptors), scale = [Float](repeating: 1, count: descriptors)
        var column = [Float](repeating: 0, count: vectors.count)
        for d in 0..<descriptors {
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
        timbreCenter = (0..<TimbreGaussian.order).map { c in
            for i in 0..<vectors.count { column[i] = vectors.value(i, descriptors + c) }
            return Self.median(&column)
        }
        (descriptorMedian, divergenceMedian, halfSimilarDistance) = (1, 1, 1)
        // The medians over up to 20,000 pairs, spread evenly over the library: first of the two
        // parts (each on its own scale), then of the distance they make together.
        let pairs = Self.pairs(vectors.count)
        let index = SimilarityIndex(keys: HashedKeys(Array(0..<vectors.count)), features: vectors, normalisation: self, proximity: .none)
        let parts = pairs.map { index.parts($0.0, $0.1) }
        var column2 = parts.map(\.descriptors)
        descriptorMedian = max(1e-6, Self.median(&column2))
        column2 = parts.map(\.divergence)
        divergenceMedian = max(1e-6, Self.median(&column2))
        // The parts on the scale just measured: the index's distance D, without building it again.
        let factors = SimilarityIndex<HashedKeys<Int>>.factors(self)
        var distances = parts.map { SimilarityIndex<HashedKeys<Int>>.combine($0.descriptors, $0.divergence, factors) }
        halfSimilarDistance = max(1e-3, Self.median(&distances))
    }

    /// Up to 20,000 pairs: every track in turn, each with partners spread over the library (never itself).
    static func pairs(_ n: Int) -> [(Int, Int)] {
        (0..<min(20_000, n * (n - 1) / 2)).map { k in
            let a = k % n
            return (a, (a + 1 + Int((UInt64(k) &* 2_654_435_761) % UInt64(n - 1))) % n)
        }
    }

    /// No scaling (a library of one track, which has no neighbours anyway).
    public static func identity(changeSequence: Int64) -> SimilarityNormalisation {
        SimilarityNormalisation(featuresVersion: SonicFeatures.version, changeSequence: changeSequence,
                                median: .init(repeating: 0, count: SonicFeatures.descriptorCount),
                                scale: .init(repeating: 1, count: SonicFeatures.descriptorCount),
                                timbreCenter: .init(repeating: 0, count: TimbreGaussian.order),
                                descriptorMedian: 1, divergenceMedian: 1, halfSimilarDistance: 1)
    }

    static func median(_ values: inout [Float]) -> Float {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }
}

/// Nearest tracks by sound, brute force over the library in memory (an approximate index would pay
/// off only well above a million tracks).
///
/// Distance: D² = a · SKL / median SKL + (1 − a) · d² / median d², where SKL is the symmetrised
/// Kullback–Leibler divergence of the timbre Gaussians and d² = Σ_g w_g · mean over group g's
/// descriptors of (z − z')². Neighbours are ranked by mutual proximity (Schnitzer et al. 2012): the
/// chance that each of the two is nearer to the other than a track of the library drawn at random
/// is, each track's distances taken as normal with the mean and spread of its distances to a sample
/// of the library. That is also the similarity answered, in [0, 1]; a library's "average" tracks
/// (hubs, near to everything) stop appearing in every list. docs/similarity.md gives the figures.
public struct SimilarityIndex<Keys: SimilarityKeys>: Sendable {
    public typealias ID = Keys.Key

    /// The descriptor groups' weights (`SimilarityModel`).
    public static var groupWeights: [SonicFeatures.Group: Float] { SimilarityModel.groupWeights }
    /// Tracks each track's distance statistics are measured against (mutual proximity).
    static var proximitySample: Int { 256 }

    /// The tracks' distance statistics (mutual proximity): measured here, given (as the store's
    /// snapshot keeps them, measured with the same normalisation), or none (an index made only to
    /// measure a library's normalisation).
    public enum Proximity: Sendable { case measured, given([Float]), none }

    /// Row i's name.
    public let keys: Keys
    public let normalisation: SimilarityNormalisation
    /// Normalised descriptors, `descriptorStride` per track (zero padded), each already multiplied
    /// by √(its weight).
    private let vectors: [Float]
    /// The timbre Gaussians as `TimbreDivergence` rows.
    private let gaussians: [Float]
    /// Per track: the mean and standard deviation of its distances to the proximity sample.
    public private(set) var proximity: [Float]
    package static var descriptorStride: Int { (SonicFeatures.descriptorCount + 7) / 8 * 8 }
    private let divergenceFactor: Float, descriptorFactor: Float

    public init<Key>(rows: [(Key, SonicFeatures)], normalisation: SimilarityNormalisation) where Keys == HashedKeys<Key> {
        self.init(keys: HashedKeys(rows.map(\.0)), features: FeatureMatrix(rows.map(\.1)), normalisation: normalisation)
    }

    /// `keys[i]` has the vector of row i of `features`.
    @_specialize(exported: true, where Keys == SortedPaths)
    public init(keys: Keys, features: FeatureMatrix, normalisation: SimilarityNormalisation, proximity: Proximity = .measured) {
        precondition(keys.count == features.count)
        self.normalisation = normalisation
        self.keys = keys
        var weights = [Float](repeating: 0, count: SonicFeatures.descriptorCount)
        for group in SonicFeatures.Group.allCases {
            let w = (Self.groupWeights[group] ?? 0) / Float(group.count)
            for d in group.offset..<(group.offset + group.count) { weights[d] = w.squareRoot() }
        }
        let n = keys.count, dimension = SonicFeatures.dimension, stride = Self.descriptorStride
        let descriptors = SonicFeatures.descriptorCount, clip = SimilarityNormalisation.clip
        let rowLength = TimbreDivergence.rowLength
        var vectors = [Float](repeating: 0, count: n * stride)
        var gaussians = [Float](repeating: 0, count: n * rowLength)
        features.values.withUnsafeBufferPointer { flat in
            vectors.withUnsafeMutableBufferPointer { out in
                for i in 0..<n {
                    for d in 0..<descriptors {
                        let z = (flat[i * dimension + d] - normalisation.median[d]) / normalisation.scale[d]
                        out[i * stride + d] = min(max(z, -clip), clip) * weights[d]
                    }
                }
            }
            gaussians.withUnsafeMutableBufferPointer { out in
                // A covariance inverted per track: 100,000 of them are worth every core.
                nonisolated(unsafe) let out = out, flat = flat
                let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, n / 4096))
                DispatchQueue.concurrentPerform(iterations: parts) { part in
                    for i in (n * part / parts)..<(n * (part + 1) / parts) {
                        let values = UnsafeBufferPointer(rebasing: flat[(i * dimension + descriptors)..<((i + 1) * dimension)])
                        // A covariance that is not positive definite cannot come from a scan (the ridge);
                        // a zero row then leaves the track to its descriptors.
                        _ = TimbreDivergence.row(values, center: normalisation.timbreCenter,
                                                 into: UnsafeMutableBufferPointer(rebasing: out[(i * rowLength)..<((i + 1) * rowLength)]))
                    }
                }
            }
        }
        self.vectors = vectors
        self.gaussians = gaussians
        (descriptorFactor, divergenceFactor) = Self.factors(normalisation)
        self.proximity = [Float](repeating: 1, count: 2 * n)
        guard SimilarityModel.mutualProximity else { return }
        switch proximity {
        case .measured: self.proximity = measureProximity()
        case .given(let given) where given.count == 2 * n: self.proximity = given
        case .given: self.proximity = measureProximity()
        case .none: break
        }
    }

    /// Each track's mean and standard deviation of its distances to the sample: min(n, 256) tracks
    /// spread evenly over the index (itself left out).
    private func measureProximity() -> [Float] {
        let n = keys.count
        guard n >= 2 else { return [Float](repeating: 1, count: 2 * n) }
        let count = min(n, Self.proximitySample)
        let sample = (0..<count).map { $0 * n / count }
        nonisolated(unsafe) let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2 * n)
        defer { out.deallocate() }
        let chunk = 512
        DispatchQueue.concurrentPerform(iterations: (n + chunk - 1) / chunk) { c in
            let query = UnsafeMutablePointer<Float>.allocate(capacity: TimbreDivergence.rowLength)
            defer { query.deallocate() }
            for i in (c * chunk)..<min(n, (c + 1) * chunk) {
                let a = prepare(i, query)
                var sum = 0.0, squares = 0.0, seen = 0
                for j in sample where j != i {
                    let d = Double(distance(i, query: query, queryA: a, j))
                    sum += d
                    squares += d * d
                    seen += 1
                }
                let mean = sum / Double(seen)
                out[2 * i] = Float(mean)
                // A floor: a track at one distance from every other still ranks.
                out[2 * i + 1] = Float(max(squares / Double(seen) - mean * mean, 1e-12).squareRoot())
            }
        }
        return Array(out)
    }

    public var count: Int { keys.count }
    @_specialize(exported: true, where Keys == SortedPaths)
    public func contains(_ id: ID) -> Bool { keys.position(of: id) != nil }
    /// Where `id` is in `keys`.
    @_specialize(exported: true, where Keys == SortedPaths)
    public func position(of id: ID) -> Int? { keys.position(of: id) }

    /// What the squared descriptor distance and the divergence are multiplied by in D².
    static func factors(_ normalisation: SimilarityNormalisation) -> (descriptor: Float, divergence: Float) {
        ((1 - SimilarityModel.timbreShare) / normalisation.descriptorMedian, SimilarityModel.timbreShare / normalisation.divergenceMedian)
    }

    /// D from the squared descriptor distance and the divergence.
    @inline(__always)
    static func combine(_ descriptors: Float, _ divergence: Float, _ factors: (descriptor: Float, divergence: Float)) -> Float {
        factors.descriptor == 0 ? (factors.divergence * divergence).squareRoot()
            : (factors.descriptor * descriptors + factors.divergence * divergence).squareRoot()
    }

    /// Writes row `i`'s query form into `query`; returns its `a`.
    private func prepare(_ i: Int, _ query: UnsafeMutablePointer<Float>) -> Float {
        gaussians.withUnsafeBufferPointer { g in
            let row = g.baseAddress! + i * TimbreDivergence.rowLength
            TimbreDivergence.query(row, into: query)
            return TimbreDivergence.a(row)
        }
    }

    /// The squared descriptor distance and the divergence of two tracks, each on its own scale.
    package func parts(_ a: Int, _ b: Int) -> (descriptors: Float, divergence: Float) {
        var query = [Float](repeating: 0, count: TimbreDivergence.rowLength)
        return query.withUnsafeMutableBufferPointer { query in
            let qa = prepare(a, query.baseAddress!)
            return gaussians.withUnsafeBufferPointer { g in
                vectors.withUnsafeBufferPointer { v in
                    (SIMDMath.squaredDistance(v.baseAddress! + a * Self.descriptorStride, v.baseAddress! + b * Self.descriptorStride, count: Self.descriptorStride),
                     TimbreDivergence.divergence(query: query.baseAddress!, queryA: qa, row: g.baseAddress! + b * TimbreDivergence.rowLength))
                }
            }
        }
    }

    /// The distance D from the prepared query of track `a` to track `b`.
    @inline(__always)
    private func distance(_ a: Int, query: UnsafePointer<Float>, queryA: Float, _ b: Int) -> Float {
        gaussians.withUnsafeBufferPointer { g in
            vectors.withUnsafeBufferPointer { v in
                let skl = TimbreDivergence.divergence(query: query, queryA: queryA, row: g.baseAddress! + b * TimbreDivergence.rowLength)
                // The descriptors are skipped when they weigh nothing.
                let d = descriptorFactor == 0 ? 0
                    : SIMDMath.squaredDistance(v.baseAddress! + a * Self.descriptorStride, v.baseAddress! + b * Self.descriptorStride, count: Self.descriptorStride)
                return Self.combine(d, skl, (descriptorFactor, divergenceFactor))
            }
        }
    }

    package func distance(_ a: Int, _ b: Int) -> Float {
        var query = [Float](repeating: 0, count: TimbreDivergence.rowLength)
        return query.withUnsafeMutableBufferPointer { query in
            let qa = prepare(a, query.baseAddress!)
            return distance(a, query: query.baseAddress!, queryA: qa, b)
        }
    }

    /// From track `a` to a point of the normalised, weighted descriptor space (`descriptorStride`
    /// values): the sonic path moves through the descriptors, where a point between two tracks exists.
    package func descriptorDistance(_ a: Int, toPoint point: UnsafePointer<Float>) -> Float {
        vectors.withUnsafeBufferPointer { v in
            SIMDMath.squaredDistance(v.baseAddress! + a * Self.descriptorStride, point, count: Self.descriptorStride).squareRoot()
        }
    }

    /// The descriptors' own similarity, 2^−(d / d½)² with d½ their median distance: what the
    /// same-recording test reads (a copy or transcode has the same descriptors to within rounding).
    public func descriptorSimilarity(_ a: ID, _ b: ID) -> Double? {
        guard let i = keys.position(of: a), let j = keys.position(of: b) else { return nil }
        return descriptorSimilarity(i, j)
    }

    package func descriptorSimilarity(_ a: Int, _ b: Int) -> Double {
        let d2 = vectors.withUnsafeBufferPointer { v in
            SIMDMath.squaredDistance(v.baseAddress! + a * Self.descriptorStride, v.baseAddress! + b * Self.descriptorStride, count: Self.descriptorStride)
        }
        return pow(2, -Double(d2 / normalisation.descriptorMedian))
    }

    /// Mutual proximity of two tracks at distance `d`: the chance that each is nearer the other than
    /// a random track of the library is (normal approximations of their distances to the sample).
    @inline(__always)
    private func mutualProximity(_ a: Int, _ b: Int, _ d: Float) -> Float {
        proximity.withUnsafeBufferPointer { p in
            let za = (d - p[2 * a]) / p[2 * a + 1], zb = (d - p[2 * b]) / p[2 * b + 1]
            return 0.25 * erfc(za * 0.70710678) * erfc(zb * 0.70710678)
        }
    }

    /// Similarity of two rows at distance `d`: their mutual proximity (1 for a pair nearer each other
    /// than to anything else, ¼ for a pair at both tracks' mean distance, towards 0 for the most
    /// different); without it, 2^−(d / d½)² (½ at the library's median distance).
    @inline(__always)
    private func similarity(_ a: Int, _ b: Int, _ d: Float) -> Float {
        if SimilarityModel.mutualProximity { return mutualProximity(a, b, d) }
        let ratio = d / normalisation.halfSimilarDistance
        return exp2(-ratio * ratio)
    }

    package func similarity(_ a: Int, _ b: Int) -> Double {
        a == b ? 1 : Double(similarity(a, b, distance(a, b)))
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

    /// The `count` most similar to `id`, most similar first, never `id` itself; nil when `id` has
    /// no vector.
    @_specialize(exported: true, where Keys == SortedPaths)
    public func nearest(to id: ID, count: Int, excluding excluded: Set<ID> = []) -> [Neighbour]? {
        guard let query = keys.position(of: id) else { return nil }
        let skipped = Set(excluded.compactMap(keys.position(of:)))
        let n = keys.count
        // A pass reads about 1.9 kB per track (100,000 tracks: 190 MB), more than one core's share of
        // the memory bandwidth: large libraries are read in parts, one per core, each keeping its own
        // best; merged in row order, ties go to the first row as in one pass.
        let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, n / 16_384))
        nonisolated(unsafe) let found = UnsafeMutableBufferPointer<[(Float, Float, Int)]>.allocate(capacity: parts)
        _ = found.initialize(repeating: [])
        defer {
            found.deinitialize()
            found.deallocate()
        }
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            var best: [(Float, Float, Int)] = []     // (similarity, distance, row), most similar first
            best.reserveCapacity(count + 1)
            let form = UnsafeMutablePointer<Float>.allocate(capacity: TimbreDivergence.rowLength)
            defer { form.deallocate() }
            let qa = prepare(query, form)
            for i in (n * part / parts)..<(n * (part + 1) / parts) where i != query && (skipped.isEmpty || !skipped.contains(i)) {
                let d = distance(query, query: form, queryA: qa, i)
                let s = similarity(query, i, d)
                if best.count < count || s > best[best.count - 1].0 {
                    let at = best.firstIndex { s > $0.0 } ?? best.count
                    best.insert((s, d, i), at: at)
                    if best.count > count { best.removeLast() }
                }
            }
            found[part] = best
        }
        let best = found.flatMap { $0 }.enumerated().sorted { $0.element.0 > $1.element.0 || ($0.element.0 == $1.element.0 && $0.offset < $1.offset) }
        return best.prefix(count).map { Neighbour(id: keys[$0.element.2], similarity: Double($0.element.0), distance: $0.element.1) }
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
        let n = keys.count, dimension = Self.descriptorStride
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
                            if exact[at].isNaN { exact[at] = descriptorDistance(pool[at].1, toPoint: p.baseAddress!) }
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
            result.append(Neighbour(id: keys[chosen], similarity: similarity(a, chosen), distance: distance(a, chosen)))
        }
        result.append(Neighbour(id: to, similarity: similarity(a, b), distance: distance(a, b)))
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
