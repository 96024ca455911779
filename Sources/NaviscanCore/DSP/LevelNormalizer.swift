import Foundation

/// Band power → display value in [0, 1], with automatic gain from a peak follower.
///
/// 1. Level: L = 10·log10(power) dBFS (a full-scale sine reads 0 dB in its band's peak).
///    Power 0 (digital silence) maps to exactly 0; so does anything below `floorDB`.
/// 2. Reference: a follower of each frame's loudest band. It rises at `attack` and falls at `release`
///    (exponential time constants in seconds; attack 0 = instant). It never goes below
///    `minReferenceDB`, which caps the gain given to quiet passages.
/// 3. Value = clamp((L − (reference − rangeDB)) / rangeDB, 0, 1): the top `rangeDB` below the reference.
/// With an instant attack the reference is always ≥ the frame's loudest band, so no value exceeds 1
/// before clamping: loud onsets do not clip.
public struct LevelNormalization: Sendable, Equatable, Hashable, Codable {
    public var floorDB: Float = -100
    public var rangeDB: Float = 60
    public var attack: Float = 0
    public var release: Float = 2
    public var minReferenceDB: Float = -30

    public init() {}

    public init(floorDB: Float, rangeDB: Float, attack: Float, release: Float, minReferenceDB: Float) {
        self.floorDB = floorDB
        self.rangeDB = rangeDB
        self.attack = attack
        self.release = release
        self.minReferenceDB = minReferenceDB
    }
}

public final class LevelNormalizer {
    public let parameters: LevelNormalization
    private let attackCoefficient: Float
    private let releaseCoefficient: Float
    private var reference: Float
    private let levels: UnsafeMutablePointer<Float>
    private let bandCount: Int

    public init(parameters: LevelNormalization, fps: Double, bandCount: Int) {
        self.parameters = parameters
        self.bandCount = bandCount
        func coefficient(_ tau: Float) -> Float {
            tau <= 0 ? 1 : Float(1 - exp(-1 / (fps * Double(tau))))
        }
        attackCoefficient = coefficient(parameters.attack)
        releaseCoefficient = coefficient(parameters.release)
        reference = parameters.minReferenceDB
        levels = .allocate(capacity: bandCount)
    }

    deinit { levels.deallocate() }

    /// 10 / ln 10: power in dB from its natural log.
    static let decibelsPerNeper: Float = 4.342_944_8

    /// Maps `bands` (mean power per band) to display values in place.
    public func normalize(_ bands: UnsafeMutablePointer<Float>) {
        let floor = parameters.floorDB
        var frameMax = floor
        for b in 0..<bandCount {
            let p = bands[b]
            // fastLog: no libm call per band; its error (< 1e-6 in ln) is far below a display step.
            let level = p > 0 ? Self.decibelsPerNeper * fastLog(p) : -Float.infinity
            levels[b] = level
            if level > frameMax { frameMax = level }
        }
        let coefficient = frameMax > reference ? attackCoefficient : releaseCoefficient
        reference += coefficient * (frameMax - reference)
        let ref = max(reference, parameters.minReferenceDB)
        let bottom = ref - parameters.rangeDB
        let inverseRange = 1 / parameters.rangeDB
        for b in 0..<bandCount {
            let level = levels[b]
            if level <= floor {
                bands[b] = 0
            } else {
                bands[b] = min(1, max(0, (level - bottom) * inverseRange))
            }
        }
    }
}
