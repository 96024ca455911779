import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The similarity model: the timbre Gaussian and its divergence against known truths, the Float16
/// the store keeps, and the whole model against its Python twin (scripts/similarity-model/
/// fit_similarity.py) on committed band dumps.
@Suite("Similarity model: timbre Gaussian, divergence, the Python twin")
struct SimilarityModelTests {
    struct Parity: Decodable {
        struct Model: Decodable {
            var order: Int
            var share: Float
            var weights: [Float]
            var mutualProximity: Bool
            var ridge: Double
            var varianceFloor: Double
            enum CodingKeys: String, CodingKey { case order, share, weights, ridge, mutualProximity = "mutual_proximity", varianceFloor = "variance_floor" }
        }
        var model: Model
        var frames: Int
        var bands: Int
        var tracks: [String]
        var gaussians: [[Float]]
        var divergence: [[Double]]
        struct Normalisation: Decodable {
            var median: [Float]
            var scale: [Float]
            var descriptorMedian: Float
            var divergenceMedian: Float
            var halfSimilarDistance: Float
            enum CodingKeys: String, CodingKey {
                case median, scale, descriptorMedian = "descriptor_median", divergenceMedian = "divergence_median",
                     halfSimilarDistance = "half_similar_distance"
            }
        }
        var descriptors: [[Float]]
        var normalisation: Normalisation
        var distance: [[Double]]
        var similarity: [[Double]]
    }

    static func parity() throws -> Parity {
        let data = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("similarity/parity.json")))
        return try JSONDecoder().decode(Parity.self, from: data)
    }

    /// The divergence of every pair of stored Gaussians through `TimbreDivergence`'s rows.
    static func divergences(_ gaussians: [[Float]]) -> [[Float]] {
        let length = TimbreDivergence.rowLength
        var rows = [Float](repeating: 0, count: gaussians.count * length)
        var center = [Float](repeating: 0, count: TimbreGaussian.order)
        for c in center.indices { center[c] = gaussians.map { $0[c] }.sorted()[gaussians.count / 2] }
        rows.withUnsafeMutableBufferPointer { rows in
            for (i, g) in gaussians.enumerated() {
                let ok = g.withUnsafeBufferPointer {
                    TimbreDivergence.row($0, center: center, into: UnsafeMutableBufferPointer(rebasing: rows[(i * length)..<((i + 1) * length)]))
                }
                precondition(ok)
            }
        }
        var query = [Float](repeating: 0, count: length)
        return gaussians.indices.map { i in
            rows.withUnsafeBufferPointer { rows in
                query.withUnsafeMutableBufferPointer { q in
                    TimbreDivergence.query(rows.baseAddress! + i * length, into: q.baseAddress!)
                    let a = TimbreDivergence.a(rows.baseAddress! + i * length)
                    return gaussians.indices.map { j in TimbreDivergence.divergence(query: q.baseAddress!, queryA: a, row: rows.baseAddress! + j * length) }
                }
            }
        }
    }

    /// A Gaussian's stored values: mean, then the covariance's upper triangle.
    static func stored(mean: [Float], covariance: (Int, Int) -> Float) -> [Float] {
        var values = mean
        for i in 0..<mean.count { for j in i..<mean.count { values.append(covariance(i, j)) } }
        return values
    }

    @Test("the divergence of equal Gaussians is 0, and of shifted isotropic ones |δ|²/σ² (the closed form)")
    func knownDivergences() {
        let k = TimbreGaussian.order
        let sigma2: Float = 0.04
        let base = (0..<k).map { Float($0) * 0.01 }
        let shifted = base.enumerated().map { $0.offset == 2 ? $0.element + 0.1 : $0.element }
        let isotropic = { (i: Int, j: Int) -> Float in i == j ? sigma2 : 0 }
        let wide = { (i: Int, j: Int) -> Float in i == j ? 4 * sigma2 : 0 }
        let d = Self.divergences([Self.stored(mean: base, covariance: isotropic), Self.stored(mean: shifted, covariance: isotropic),
                                  Self.stored(mean: base, covariance: wide)])
        #expect(abs(d[0][0]) < 1e-4 && abs(d[1][1]) < 1e-4)
        #expect(abs(d[0][1] - 0.01 / sigma2) < 1e-3, "\(d[0][1])")          // 0.25
        #expect(abs(d[0][1] - d[1][0]) < 1e-4)
        // Σ₂ = 4Σ₁, same mean: ½ (K·4 + K/4) − K = 1.125 K.
        #expect(abs(d[0][2] - 1.125 * Float(k)) < 1e-3 * Float(k), "\(d[0][2])")
    }

    @Test("Float16 conversion: every half value reads back to itself; rounding is to nearest, ties to even")
    func halfPrecision() {
        for bits in UInt16.min...UInt16.max {
            let value = Half.value(bits)
            if value.isNaN { #expect(Half.value(Half.bits(value)).isNaN); continue }
            #expect(Half.bits(value) == bits || (value == 0 && Half.bits(value) & 0x7FFF == 0), "\(bits)")
        }
        #expect(Half.value(Half.bits(1 + 1.0 / 2048)) == 1)                 // a tie: to the even 1.0
        #expect(Half.value(Half.bits(1 + 3.0 / 2048)) == 1 + 2.0 / 1024)    // a tie: to the even 1 + 2⁻⁹
        #expect(Half.value(Half.bits(1e-3)) == 0.0010004043579101562)
        #expect(Half.value(Half.bits(70_000)) == .infinity && Half.value(Half.bits(-1e-9)) == 0)
        #expect(Half.value(Half.bits(3e-6)) == Float(50) * pow(2, -24))     // a subnormal half
    }

    @Test("the accumulator's mean and covariance of cepstra with a known distribution")
    func accumulatorMoments() throws {
        // Log band powers whose cepstrum is exactly c (the DCT-II's inverse over 24 bands), with c
        // alternating between two known vectors: mean (a + b) / 2, covariance (a − b)(a − b)ᵀ / 4.
        let k = TimbreGaussian.order, bands = TimbreGaussianAccumulator.bandCount
        let a = (0..<k).map { 0.2 * sin(Double($0 + 1)) }, b = (0..<k).map { 0.1 * cos(Double($0 + 1)) }
        func logBands(_ c: [Double]) -> [Float] {
            (0..<bands).map { n in
                var sum = 0.0
                for m in 0..<k {
                    let angle = Double.pi * Double(m + 1) * (Double(n) + 0.5) / Double(bands)
                    sum += 2 * c[m] * cos(angle)
                }
                return Float(sum)
            }
        }
        let accumulator = TimbreGaussianAccumulator()
        let frames = [logBands(a), logBands(b)]
        for i in 0..<1000 { frames[i % 2].withUnsafeBufferPointer { accumulator.add(logBands: $0.baseAddress!) } }
        let values = try #require(accumulator.values())
        var at = k, variance = 0.0
        for i in 0..<k { variance += (a[i] - b[i]) * (a[i] - b[i]) / 4 }
        let ridge = 1e-3 * variance / Double(k) + 1e-4
        for i in 0..<k {
            #expect(abs(values[i] - (a[i] + b[i]) / 2) < 1e-5)
            for j in i..<k {
                let expected = (a[i] - b[i]) * (a[j] - b[j]) / 4 + (i == j ? ridge : 0)
                #expect(abs(values[at] - expected) < 1e-5, "Σ[\(i),\(j)] \(values[at]) ≠ \(expected)")
                at += 1
            }
        }
    }

    @Test("the shipped constants are the fixture's, and the Swift Gaussians and divergences are the Python twin's")
    func parityWithTwin() throws {
        let parity = try Self.parity()
        // One fit wrote both the generated constants and the fixture.
        #expect(parity.model.order == SimilarityModel.timbreOrder && parity.model.order == TimbreGaussian.order)
        #expect(parity.model.share == SimilarityModel.timbreShare)
        #expect(parity.model.mutualProximity == SimilarityModel.mutualProximity)
        #expect(parity.model.ridge == TimbreGaussian.ridge && parity.model.varianceFloor == TimbreGaussian.varianceFloor)
        #expect(parity.model.weights == SonicFeatures.Group.allCases.map { SimilarityModel.groupWeights[$0] ?? -1 })
        #expect(parity.bands == TimbreGaussianAccumulator.bandCount && parity.tracks.count >= 6)
        let raw = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("similarity/bands.f32")))
        let floats = raw.withUnsafeBytes { bytes in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
        #expect(floats.count == parity.tracks.count * parity.frames * parity.bands)
        for (t, expected) in parity.gaussians.enumerated() {
            let accumulator = TimbreGaussianAccumulator()
            floats.withUnsafeBufferPointer { f in
                for frame in 0..<parity.frames { accumulator.add(logBands: f.baseAddress! + (t * parity.frames + frame) * parity.bands) }
            }
            let values = try #require(accumulator.values()).map { Half.value(Half.bits(Float($0))) }
            // Float32 cepstra against Float64 ones: at most one Float16 step apart.
            for (i, (x, y)) in zip(values, expected).enumerated() {
                #expect(abs(x - y) <= 1.5e-3 * abs(y) + 1e-7, "\(parity.tracks[t]) value \(i): \(x) ≠ \(y)")
            }
        }
        let divergences = Self.divergences(parity.gaussians)
        for i in parity.gaussians.indices {
            for j in parity.gaussians.indices {
                let expected = parity.divergence[i][j]
                #expect(abs(Double(divergences[i][j]) - expected) <= 2e-3 * expected + 2e-3,
                        "\(parity.tracks[i]) – \(parity.tracks[j]): \(divergences[i][j]) ≠ \(expected)")
            }
        }
    }

    @Test("the index's distances and similarities are the Python twin's over the same tracks and normalisation")
    func indexParityWithTwin() throws {
        let parity = try Self.parity()
        let n = parity.normalisation
        var center = [Float](repeating: 0, count: TimbreGaussian.order)
        for c in center.indices { center[c] = parity.gaussians.map { $0[c] }.sorted()[parity.gaussians.count / 2] }
        let normalisation = SimilarityNormalisation(featuresVersion: SonicFeatures.version, changeSequence: 1, median: n.median, scale: n.scale,
                                                    timbreCenter: center, descriptorMedian: n.descriptorMedian,
                                                    divergenceMedian: n.divergenceMedian, halfSimilarDistance: n.halfSimilarDistance)
        let rows = zip(parity.descriptors, parity.gaussians).enumerated().map { ($0.offset, SonicFeatures(values: $0.element.0 + $0.element.1)) }
        let index = SimilarityIndex(rows: rows, normalisation: normalisation)
        for i in rows.indices {
            for j in rows.indices where i != j {
                let d = Double(try #require(index.distance(i, j)))
                #expect(abs(d - parity.distance[i][j]) <= 1e-3 * parity.distance[i][j] + 1e-3, "\(parity.tracks[i]) – \(parity.tracks[j]): \(d) ≠ \(parity.distance[i][j])")
                let neighbours = try #require(index.nearest(to: i, count: rows.count))
                let s = try #require(neighbours.first { $0.id == j }).similarity
                #expect(abs(s - parity.similarity[i][j]) <= 2e-3, "\(parity.tracks[i]) – \(parity.tracks[j]): similarity \(s) ≠ \(parity.similarity[i][j])")
            }
        }
    }
}
