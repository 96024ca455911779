/// The metrical-level model's numbers, by name: the level score's weight of every `Feature`, the terms
/// that only move the tempo among candidates, and the three "no tempo" lines. The shipped model is
/// generated (`TempoModel+Shipped.swift`, `make tempo-model`), and its Python twin
/// (scripts/tempo-model/tempomodel/model.py) reads the same file, so the two use the same numbers.
/// Features are looked up by name, never by position: a feature without a weight (or a weight without
/// its feature) is caught by `TempoModelTests` and refused here.
package struct TempoModel: Sendable {
    /// What the level score weighs, measured on one candidate's beats and autocorrelation
    /// (`MetricalLevel.evidence`). The raw values are the names in the model file.
    package enum Feature: String, CaseIterable, Sendable {
        /// Mean full-band (eb) and low-band (lb) strength at the beats, and at the off-beats (eo, lo).
        case eb, eo, lb, lo
        /// The beat intervals' coefficient of variation, and their mean ln² against the period.
        case irr, cost
        /// Contrast of the low band's accents over 2, 3, 4 positions; the full band's over 2.
        case bar2, bar3, bar4, ebar2
        /// x = log2(T / 110 BPM), and x².
        case x, x2
        /// Each region's autocorrelation at ½, 1, 2, 3, 4 beats.
        case fullHalf = "acf.full.0.5", full1 = "acf.full.1", full2 = "acf.full.2", full3 = "acf.full.3", full4 = "acf.full.4"
        case lowHalf = "acf.low.0.5", low1 = "acf.low.1", low2 = "acf.low.2", low3 = "acf.low.3", low4 = "acf.low.4"
        case midHalf = "acf.mid.0.5", mid1 = "acf.mid.1", mid2 = "acf.mid.2", mid3 = "acf.mid.3", mid4 = "acf.mid.4"
        case highHalf = "acf.high.0.5", high1 = "acf.high.1", high2 = "acf.high.2", high3 = "acf.high.3", high4 = "acf.high.4"

        /// The autocorrelation features of each region (0 full, 1 low, 2 mid, 3 high) in
        /// `TempoEstimator.lagMultiples` order.
        static let autocorrelation: [[Feature]] = (0..<4).map { region in
            let first = allCases.firstIndex(of: .fullHalf)! + 5 * region
            return Array(allCases[first..<(first + 5)])
        }
    }

    /// One candidate's feature values, indexed by `Feature`.
    package struct Values {
        private(set) var values = [Double](repeating: 0, count: Feature.allCases.count)
        package subscript(_ feature: Feature) -> Double {
            get { values[Self.index[feature]!] }
            set { values[Self.index[feature]!] = newValue }
        }
        static let index = Dictionary(uniqueKeysWithValues: Feature.allCases.enumerated().map { ($1, $0) })
        package init() {}
    }

    /// The names of the model file's weights, level-only weights and thresholds.
    package static let levelOnlyNames: Set<String> = ["sixth"]
    package static let thresholdNames: Set<String> = ["onBeatRatio", "slowOnsetRatio", "steadyPulseConsistency"]

    package let weights: [String: Double]
    package let levelOnlyWeights: [String: Double]
    package let thresholds: [String: Double]
    /// The weights in `Feature.allCases` order.
    private let vector: [Double]

    /// Traps when a name is missing or unknown: a generated file that does not match the code must not ship
    /// (`TempoModelTests` checks the shipped one).
    package init(weights: [String: Double], levelOnlyWeights: [String: Double], thresholds: [String: Double]) {
        precondition(Self.mismatches(weights: weights, levelOnlyWeights: levelOnlyWeights, thresholds: thresholds).isEmpty,
                     "the tempo model's names do not match its features: \(Self.mismatches(weights: weights, levelOnlyWeights: levelOnlyWeights, thresholds: thresholds))")
        self.weights = weights
        self.levelOnlyWeights = levelOnlyWeights
        self.thresholds = thresholds
        vector = Feature.allCases.map { weights[$0.rawValue]! }
    }

    /// Every name missing from or unknown to the model file's three dictionaries.
    package static func mismatches(weights: [String: Double], levelOnlyWeights: [String: Double], thresholds: [String: Double]) -> [String] {
        func compare(_ what: String, _ expected: Set<String>, _ given: [String: Double]) -> [String] {
            expected.subtracting(given.keys).sorted().map { "\(what): no \($0)" } +
                Set(given.keys).subtracting(expected).sorted().map { "\(what): unknown \($0)" }
        }
        return compare("weights", Set(Feature.allCases.map(\.rawValue)), weights) +
            compare("levelOnlyWeights", levelOnlyNames, levelOnlyWeights) + compare("thresholds", thresholdNames, thresholds)
    }

    /// The level score of one candidate's values.
    package func score(_ values: Values) -> Double {
        var z = 0.0
        for (v, w) in zip(values.values, vector) { z += v * w }
        return z
    }

    package var sixthOfBeatWeight: Double { levelOnlyWeights["sixth"]! }
    package var minOnBeatRatio: Double { thresholds["onBeatRatio"]! }
    package var minSlowOnsetRatio: Double { thresholds["slowOnsetRatio"]! }
    package var minSteadyPulseConsistency: Double { thresholds["steadyPulseConsistency"]! }
}
