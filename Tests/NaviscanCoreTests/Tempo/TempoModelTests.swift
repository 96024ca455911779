import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The tempo model file against the code that reads it, and the Swift against its Python twin
/// (scripts/tempo-model/tempomodel) on committed onset dumps (Fixtures/tempo-model, made by
/// `make tempo-model`).
@Suite("Tempo model: named weights, the Python twin")
struct TempoModelTests {
    struct Parity: Decodable {
        struct Model: Decodable {
            var weights: [String: Double]
            var levelOnlyWeights: [String: Double]
            var thresholds: [String: Double]
        }
        struct Track: Decodable {
            var name: String
            var candidates: [Double]
            var features: [[String: Double]]
            var scores: [Double]
            var levelScores: [Double]
            var onBeatRatio: [Double]
            var bpm: Double?
            var beatIndex: Int?
            var levelIndex: Int?
        }
        var bands: Int
        var model: Model
        var tracks: [Track]
    }

    static func parity() throws -> Parity {
        try JSONDecoder().decode(Parity.self, from: Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("tempo-model/parity.json"))))
    }

    /// The summary the onset front end makes of a Float16 dump, and the dump's loudness.
    static func replay(_ name: String, bands: Int) throws -> (OnsetPeriodicity.Summary, Double?) {
        let raw = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("tempo-model/\(name).f16")))
        let levels = raw.withUnsafeBytes { bytes in
            (0..<(raw.count / 2)).map { Half.value(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self))) }
        }
        let envelope = try OnsetEnvelope(inputRate: 22_050)
        #expect(envelope.bandCount == bands)
        envelope.replay(levels: levels)
        struct Loudness: Decodable { var lufs: Double? }
        let lufs = try JSONDecoder().decode(Loudness.self, from: Data(contentsOf: URL(fileURLWithPath: FixturePaths.fixture("tempo-model/\(name).json")))).lufs
        return (envelope.finish(), lufs)
    }

    @Test("every feature has its weight and every weight its feature")
    func namesMatch() {
        let model = TempoModel.shipped
        #expect(TempoModel.mismatches(weights: model.weights, levelOnlyWeights: model.levelOnlyWeights, thresholds: model.thresholds).isEmpty)
        var weights = model.weights
        weights["onsetDensity"] = 1
        #expect(TempoModel.mismatches(weights: weights, levelOnlyWeights: model.levelOnlyWeights, thresholds: model.thresholds)
            == ["weights: unknown onsetDensity"])
        weights = model.weights
        weights["bar3"] = nil
        #expect(TempoModel.mismatches(weights: weights, levelOnlyWeights: model.levelOnlyWeights, thresholds: model.thresholds)
            == ["weights: no bar3"])
    }

    @Test("the score is the weights times the features, by name")
    func scoreByName() {
        var values = TempoModel.Values()
        values[.bar3] = 2
        values[.high4] = -1
        let model = TempoModel.shipped
        #expect(abs(model.score(values) - (2 * model.weights["bar3"]! - model.weights["acf.high.4"]!)) < 1e-12)
    }

    @Test("the parity fixtures were made with the model the code ships")
    func fixtureModel() throws {
        let parity = try Self.parity()
        #expect(parity.model.weights == TempoModel.shipped.weights)
        #expect(parity.model.levelOnlyWeights == TempoModel.shipped.levelOnlyWeights)
        #expect(parity.model.thresholds == TempoModel.shipped.thresholds)
    }

    @Test("Swift and the Python twin agree on the committed dumps", arguments: try! TempoModelTests.parity().tracks.map(\.name))
    func twin(name: String) throws {
        let parity = try Self.parity()
        let track = try #require(parity.tracks.first { $0.name == name })
        let (summary, lufs) = try Self.replay(name, bands: parity.bands)
        let estimator = TempoEstimator(config: .init())
        let weighing = try #require(estimator.weigh(summary, lufs: lufs))
        #expect(weighing.candidates.count == track.candidates.count, "candidates \(weighing.candidates) vs \(track.candidates)")
        for (swift, python) in zip(weighing.candidates, track.candidates) {
            #expect(abs(swift - python) <= 0.06, "candidate \(swift) vs \(python)")
        }
        // Tolerances: the twin computes in Float64, the Swift's streaming autocorrelation in Float32
        // (features differ by up to 7·10⁻⁴, scores by up to 0.006, mostly through the cost weight);
        // a 1 % change of any feature of size 1 is five times the feature tolerance.
        for (i, (evidence, python)) in zip(weighing.evidences, track.features).enumerated() {
            for feature in TempoModel.Feature.allCases {
                let want = try #require(python[feature.rawValue], "the twin has no \(feature.rawValue)")
                let got = evidence.values[feature]
                #expect(abs(got - want) <= 0.002 * max(1, abs(want)), "\(name) candidate \(i) \(feature.rawValue): \(got) vs \(want)")
            }
            #expect(abs(evidence.score - track.scores[i]) <= 0.02 + 0.001 * abs(track.scores[i]), "score \(i)")
            #expect(abs(evidence.levelScore - track.levelScores[i]) <= 0.02 + 0.001 * abs(track.levelScores[i]), "level score \(i)")
            #expect(abs(evidence.onBeatRatio - track.onBeatRatio[i]) <= 0.02 * max(1, track.onBeatRatio[i]), "r \(i)")
        }
        let result = estimator.estimate(summary, lufs: lufs)
        if let want = track.bpm {
            let got = try #require(result.bpm, "\(name): the twin reads \(want) BPM, the Swift no tempo")
            #expect(abs(got - want) <= 0.01 * want, "\(name): \(got) vs \(want) BPM")
        } else {
            #expect(result.bpm == nil, "\(name): the twin reads no tempo, the Swift \(result.bpm ?? 0)")
        }
    }
}
