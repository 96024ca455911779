import Foundation

/// The key decision's model: a weight per named feature (`KeyFeatures.names`) in a conditional
/// logit over the 24 keys, and the key clarity below which a track has no key. The shipped values
/// live in one generated file, `KeyModel+Shipped.swift`, written by `make key-model`
/// (scripts/key-model), which fits them in folds by source; docs/key-model.md is the model card.
public struct KeyModel: Sendable, Equatable {
    public var weights: [String: Double]
    /// Tracks whose clarity is below this have no key.
    public var minimumClarity: Double
    /// A key needs at least a triad's worth of pitch classes (`KeyFeatures.pitchClasses`): a lone
    /// tone fits a key profile well enough, yet names no key. Fixed, not fitted.
    public static let minimumPitchClasses = 3

    /// Every feature must have a weight: a feature added without one is a build's mistake, not a 0.
    public init(weights: [String: Double], minimumClarity: Double) {
        precondition(Set(weights.keys) == Set(KeyFeatures.names),
                     "the key model's weights do not name the features: \(Set(weights.keys).symmetricDifference(KeyFeatures.names).sorted())")
        self.weights = weights
        self.minimumClarity = minimumClarity
    }

    /// Each key's probability, in the order of `MusicalKey.all`.
    public func probabilities(_ features: KeyFeatures) -> [Double] {
        let w = KeyFeatures.names.map { weights[$0]! }
        let scores = features.values.map { row in zip(w, row).reduce(0) { $0 + $1.0 * $1.1 } }
        let top = scores.max() ?? 0
        let exps = scores.map { exp($0 - top) }
        let total = exps.reduce(0, +)
        return exps.map { $0 / total }
    }

    public func decide(_ features: KeyFeatures, tuning: Double) -> KeyDetector.Result {
        guard features.clarity >= minimumClarity, features.pitchClasses >= Self.minimumPitchClasses else { return KeyDetector.Result(key: nil, confidence: 0, tuning: tuning) }
        let p = probabilities(features)
        let best = p.indices.max { p[$0] < p[$1] }!
        return KeyDetector.Result(key: MusicalKey.all[best], confidence: p[best], tuning: tuning)
    }
}
