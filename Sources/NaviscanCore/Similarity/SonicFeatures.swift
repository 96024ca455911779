import Foundation

/// A track's sound in numbers, for "more like this": means and spreads over the whole track of its
/// timbre, spectral shape, tonal content, rhythm and dynamics (the descriptors), then its timbre as
/// one Gaussian (`TimbreGaussian`). docs/similarity.md lists each component with its unit. Every
/// component is finite; a track without enough sound has none.
public struct SonicFeatures: Sendable, Equatable {
    /// Bumped whenever a component's definition changes: stored vectors of another version are
    /// computed again (and only those).
    public static let version = 2

    /// The feature groups, in vector order, and how many components each has.
    public enum Group: String, CaseIterable, Sendable {
        case timbre, shape, tonal, rhythm, dynamics

        public var count: Int {
            switch self {
            case .timbre: return 2 * SonicFeatureAccumulator.cepstrumCount
            case .shape: return 5 + SonicFeatureAccumulator.contrastOctaves
            case .tonal: return 3
            case .rhythm: return 3
            case .dynamics: return 2
            }
        }

        /// Where the group's components start in the vector.
        public var offset: Int { Group.allCases.prefix { $0 != self }.reduce(0) { $0 + $1.count } }
    }

    /// The descriptors (the groups' components), each stored as Float32 and z-scored over the library.
    public static let descriptorCount = Group.allCases.reduce(0) { $0 + $1.count }
    /// Every value: the descriptors, then the timbre Gaussian's mean and covariance (stored as Float16:
    /// the divergences it gives differ from Float32's by less than docs/similarity.md's measured bound).
    public static let dimension = descriptorCount + TimbreGaussian.count
    /// Bytes of a stored vector.
    public static let storedBytes = descriptorCount * 4 + TimbreGaussian.count * 2

    public var values: [Float]

    public init(values: [Float]) {
        precondition(values.count == Self.dimension)
        self.values = values
    }

    /// Descriptors (`descriptorCount`), then the timbre Gaussian: its mean (`TimbreGaussian.order`)
    /// and its covariance's upper triangle, row by row (`TimbreGaussian.triangle`).
    public init(descriptors: [Float], timbreMean: [Float], timbreCovariance: [Float]) {
        precondition(descriptors.count == Self.descriptorCount && timbreMean.count == TimbreGaussian.order
            && timbreCovariance.count == TimbreGaussian.triangle)
        self.init(values: descriptors + timbreMean + timbreCovariance)
    }

    /// Descriptors with an isotropic timbre Gaussian (variance `timbreVariance` per coefficient): a
    /// synthetic track whose timbre is only its mean.
    public init(descriptors: [Float], timbreMean: [Float], timbreVariance: Float = 0.01) {
        var covariance: [Float] = []
        for i in 0..<TimbreGaussian.order { for j in i..<TimbreGaussian.order { covariance.append(i == j ? timbreVariance : 0) } }
        self.init(descriptors: descriptors, timbreMean: timbreMean, timbreCovariance: covariance)
    }

    /// Another sound near this one (synthetic libraries): each descriptor and timbre mean scaled by
    /// its own random factor within 1 ± `fraction`, the covariance by one (so it stays positive definite).
    public func perturbed(by fraction: Float, using random: inout some RandomNumberGenerator) -> SonicFeatures {
        let split = Self.descriptorCount + TimbreGaussian.order
        var values = self.values
        for i in 0..<split { values[i] *= Float.random(in: (1 - fraction)...(1 + fraction), using: &random) }
        let factor = Float.random(in: (1 - fraction)...(1 + fraction), using: &random)
        for i in split..<values.count { values[i] *= factor }
        return SonicFeatures(values: values)
    }

    /// The vector as stored: the descriptors as little-endian Float32, the Gaussian as little-endian
    /// Float16, preceded by nothing (its version is stored beside it).
    public var data: Data { Self.stored(values[...]) }

    static func stored(_ values: ArraySlice<Float>) -> Data {
        var out = Data(capacity: storedBytes)
        let split = values.startIndex + descriptorCount
        for value in values[..<split] { withUnsafeBytes(of: value.bitPattern.littleEndian) { out.append(contentsOf: $0) } }
        for value in values[split...] { withUnsafeBytes(of: Half.bits(value).littleEndian) { out.append(contentsOf: $0) } }
        return out
    }

    /// The values as a stored vector reads back (the Gaussian rounded to Float16).
    public var stored: SonicFeatures { SonicFeatures(data: data)! }

    /// A stored vector; nil when its length or any value is not what this version writes.
    public init?(data: Data) {
        var one = FeatureMatrix()
        guard data.withUnsafeBytes({ one.append(stored: $0) }) else { return nil }
        values = one.values
    }
}

/// Many tracks' vectors in one flat array, row after row (`dimension` values each): what the
/// similarity index reads, without an array per track (a store holds 100,000 of them).
public struct FeatureMatrix: Sendable, Equatable {
    public private(set) var values: [Float] = []
    public var count: Int { values.count / SonicFeatures.dimension }

    public init() {}

    public init(_ vectors: [SonicFeatures]) {
        values.reserveCapacity(vectors.count * SonicFeatures.dimension)
        for vector in vectors { values += vector.values }
    }

    public mutating func reserveCapacity(_ rows: Int) { values.reserveCapacity(rows * SonicFeatures.dimension) }

    /// Appends a vector as stored (`SonicFeatures.data`); false, appending nothing, when its length
    /// or any value is not what this version writes.
    public mutating func append(stored raw: UnsafeRawBufferPointer) -> Bool {
        let descriptors = SonicFeatures.descriptorCount
        guard raw.count == SonicFeatures.storedBytes else { return false }
        let start = values.count
        values.append(contentsOf: repeatElement(0, count: SonicFeatures.dimension))
        let finite = values.withUnsafeMutableBufferPointer { row in
            var finite = true
            for i in 0..<descriptors {
                let value = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
                finite = finite && value.isFinite
                row[start + i] = value
            }
            for i in 0..<TimbreGaussian.count {
                let value = Half.value(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: descriptors * 4 + i * 2, as: UInt16.self)))
                finite = finite && value.isFinite
                row[start + descriptors + i] = value
            }
            return finite
        }
        if !finite { values.removeSubrange(start...) }
        return finite
    }

    public subscript(row: Int) -> SonicFeatures {
        SonicFeatures(values: Array(values[(row * SonicFeatures.dimension)..<((row + 1) * SonicFeatures.dimension)]))
    }

    /// The values, leaving the matrix empty (so that a consumer can own them without a copy).
    public mutating func takeValues() -> [Float] {
        defer { values = [] }
        return values
    }

    /// The matrix, leaving this one empty.
    public mutating func take() -> FeatureMatrix {
        defer { values = [] }
        return self
    }

    /// Row `row` as stored (`SonicFeatures.data`).
    public func stored(_ row: Int) -> Data {
        SonicFeatures.stored(values[(row * SonicFeatures.dimension)..<((row + 1) * SonicFeatures.dimension)])
    }

    /// Component `component` of row `row`.
    public func value(_ row: Int, _ component: Int) -> Float { values[row * SonicFeatures.dimension + component] }
}

/// Gathers `SonicFeatures` from the onset front end's spectra (1024-point Hann power spectra at
/// 22.05 kHz, every 10 ms): every `stride`-th one is measured, so the cost is a small fraction of
/// the front end's, and memory does not grow with the track.
public final class SonicFeatureAccumulator {
    public static let cepstrumCount = 12
    public static let contrastOctaves = 6
    /// Spectra with less power than a sine at this level are silence and are not measured.
    static let silenceDBFS: Float = -60
    /// Fewer measured spectra than this (2 s of sound at the default stride) give no vector.
    static let minimumFrames = 25

    let stride: Int
    let binHz: Float
    let binCount: Int
    private let bands: BandMapper
    private let bandCount = 24
    private let silencePower: Float
    /// The timbre Gaussian's moments; its cepstra's first twelve are the timbre group's too.
    private let timbre = TimbreGaussianAccumulator()
    /// Each bin's pitch class (−1 outside 55 Hz–5 kHz).
    private let pitchClass: [Int]
    /// The bins each contrast octave spans (62.5 Hz … 4 kHz … 8 kHz).
    private let octaveBins: [Range<Int>]
    private let bandPower: UnsafeMutablePointer<Float>
    private let logBands: UnsafeMutablePointer<Float>
    private let frameChroma: UnsafeMutablePointer<Float>
    /// The bins between 55 Hz and 5 kHz (those with a pitch class).
    private let tonalBins: Range<Int>

    /// Sees each measured spectrum's log band powers (for fitting; nil in a scan).
    weak var observer: OnsetBandObserver?
    private var hop = 0
    private var frames = 0
    private var cepstrumSum = [Double](repeating: 0, count: cepstrumCount)
    private var cepstrumSquares = [Double](repeating: 0, count: cepstrumCount)
    private var centroidSum = 0.0, centroidSquares = 0.0, rolloffSum = 0.0
    private var flatnessSum = 0.0, flatnessSquares = 0.0
    private var contrastSum = [Double](repeating: 0, count: contrastOctaves)
    private var chroma = [Double](repeating: 0, count: 12)
    private var levelSum = 0.0, levelSquares = 0.0
    // Onset density: peaks of the onset flux above its running mean.
    private var fluxMean: Float = 0
    private var fluxPrevious: Float = 0, fluxBeforePrevious: Float = 0
    private var hopsSinceOnset = 1000
    private var onsets = 0
    private var soundHops = 0

    /// `fullScalePower`: the total power a full-scale sine gives in the spectra this is fed.
    public init(fftSize: Int, sampleRate: Int, fullScalePower: Float, stride: Int = 8) {
        self.stride = stride
        binCount = fftSize / 2 + 1
        binHz = Float(sampleRate) / Float(fftSize)
        bands = BandMapper(bandCount: bandCount, minHz: 50, maxHz: min(10_000, Double(sampleRate) / 2), fftSize: fftSize, sampleRate: sampleRate)
        silencePower = fullScalePower * pow(10, Self.silenceDBFS / 10)
        pitchClass = (0..<(fftSize / 2 + 1)).map { bin in
            let hz = Double(bin) * Double(sampleRate) / Double(fftSize)
            guard hz >= 55, hz <= 5000 else { return -1 }
            let semitone = Int((12 * log2(hz / 440)).rounded())
            return ((semitone % 12) + 12 + 9) % 12   // 0 = C
        }
        octaveBins = (0..<Self.contrastOctaves).map { o in
            let lo = Int((62.5 * pow(2, Double(o)) / Double(sampleRate) * Double(fftSize)).rounded())
            let hi = Int((62.5 * pow(2, Double(o + 1)) / Double(sampleRate) * Double(fftSize)).rounded())
            return max(1, lo)..<min(fftSize / 2 + 1, max(hi, lo + 2))
        }
        bandPower = .allocate(capacity: bandCount)
        logBands = .allocate(capacity: bandCount)
        frameChroma = .allocate(capacity: 12)
        let classes = pitchClass
        let tonal = classes.indices.filter { classes[$0] >= 0 }
        tonalBins = (tonal.first ?? 0)..<((tonal.last ?? -1) + 1)
    }

    deinit {
        bandPower.deallocate()
        logBands.deallocate()
        frameChroma.deallocate()
    }

    /// One hop of the onset front end: its power spectrum and its onset flux (all regions summed).
    func observe(power: UnsafePointer<Float>, flux: Float) {
        countOnset(flux)
        hop += 1
        guard hop % stride == 0 else { return }
        var total: Float = 0, weighted: Float = 0
        for k in 1..<binCount {
            total += power[k]
            weighted += Float(k) * power[k]
        }
        guard total > silencePower else { return }
        soundHops += stride
        frames += 1
        let level = Double(10 * log10(total / silencePower))
        levelSum += level
        levelSquares += level * level

        // Timbre: a cepstrum of log band powers, level removed (coefficient 0 is left out).
        bands.map(power, into: bandPower)
        var logBandSum: Float = 0, bandSum: Float = 0
        for b in 0..<bandCount {
            logBands[b] = log10(bandPower[b] + total * 1e-9)
            logBandSum += logBands[b]
            bandSum += bandPower[b] + total * 1e-9
        }
        observer?.observe(timbreBands: UnsafeBufferPointer(start: logBands, count: bandCount))
        timbre.add(logBands: logBands)
        for k in 0..<Self.cepstrumCount {
            let c = timbre.cepstrum[k]
            cepstrumSum[k] += Double(c)
            cepstrumSquares[k] += Double(c * c)
        }
        // Shape: centroid and 85 % roll-off (octaves above 1 Hz), flatness of the bands, per-octave contrast.
        let centroid = Double(log2(max(binHz, weighted / total * binHz)))
        centroidSum += centroid
        centroidSquares += centroid * centroid
        var running: Float = 0
        var rolloffBin = binCount - 1
        for k in 1..<binCount {
            running += power[k]
            if running >= 0.85 * total { rolloffBin = k; break }
        }
        rolloffSum += Double(log2(Float(rolloffBin) * binHz))
        let flatness = Double(pow(10, logBandSum / Float(bandCount)) / (bandSum / Float(bandCount)))
        flatnessSum += flatness
        flatnessSquares += flatness * flatness
        for (o, range) in octaveBins.enumerated() {
            var peak: Float = 0, sum: Float = 0
            for k in range {
                peak = max(peak, power[k])
                sum += power[k]
            }
            let average = sum / Float(range.count)
            contrastSum[o] += Double(10 * log10((peak + total * 1e-9) / (average + total * 1e-9)))
        }
        // Tonal: the spectrum folded onto 12 pitch classes, each frame weighing the same.
        frameChroma.update(repeating: 0, count: 12)
        var tonalPower: Float = 0
        for k in tonalBins {
            frameChroma[pitchClass[k]] += power[k]
            tonalPower += power[k]
        }
        if tonalPower > 0 { for c in 0..<12 { chroma[c] += Double(frameChroma[c] / tonalPower) } }
    }

    private func countOnset(_ flux: Float) {
        // A peak of the flux (the hop before this one) well above its running mean, 50 ms apart at least.
        hopsSinceOnset += 1
        if fluxPrevious > fluxBeforePrevious, fluxPrevious >= flux, fluxPrevious > 1.5 * fluxMean + 1e-3, hopsSinceOnset >= 5 {
            onsets += 1
            hopsSinceOnset = 0
        }
        fluxMean += (flux - fluxMean) / 100     // about a second at 10 ms hops
        fluxBeforePrevious = fluxPrevious
        fluxPrevious = flux
    }

    /// The track's features, or nil when it had too little sound to describe (silence, a very short file).
    /// `hopSeconds` is the front end's hop; `tempo` and `loudnessRange` come from the other stages.
    public func finish(hopSeconds: Double, bpm: Double?, tempoConfidence: Double, loudnessRange: Double?) -> SonicFeatures? {
        guard frames >= Self.minimumFrames else { return nil }
        let n = Double(frames)
        func spread(_ sum: Double, _ squares: Double) -> Double { (max(0, squares / n - (sum / n) * (sum / n))).squareRoot() }
        var values: [Double] = []
        values += cepstrumSum.map { $0 / n }
        values += zip(cepstrumSum, cepstrumSquares).map { spread($0, $1) }
        values += [centroidSum / n, spread(centroidSum, centroidSquares), rolloffSum / n, flatnessSum / n, spread(flatnessSum, flatnessSquares)]
        values += contrastSum.map { $0 / n }
        values += Self.tonal(chroma.map { $0 / n })
        let soundSeconds = max(hopSeconds, Double(soundHops) * hopSeconds)
        values += [bpm.map { log2($0) } ?? 0, tempoConfidence, Double(onsets) / soundSeconds]
        values += [loudnessRange ?? 0, spread(levelSum, levelSquares)]
        values += timbre.values() ?? []
        let floats = values.map { Float($0.isFinite ? $0 : 0) }
        return SonicFeatures(values: floats)
    }

    /// Key clarity (the best correlation with the 24 Krumhansl–Kessler key profiles), mode (best
    /// major minus best minor correlation) and chroma entropy (bits / log2 12: 1 = flat).
    static func tonal(_ chroma: [Double]) -> [Double] {
        var bestMajor = -1.0, bestMinor = -1.0
        for shift in 0..<12 {
            bestMajor = max(bestMajor, KeyFeatures.correlation(chroma, KeyFeatures.krumhansl[.major]!, shift))
            bestMinor = max(bestMinor, KeyFeatures.correlation(chroma, KeyFeatures.krumhansl[.minor]!, shift))
        }
        let total = chroma.reduce(0, +)
        var entropy = 1.0
        if total > 0 {
            var bits = 0.0
            for value in chroma where value > 0 {
                let p = value / total
                bits -= p * log2(p)
            }
            entropy = bits / log2(12.0)
        }
        return [max(bestMajor, bestMinor), bestMajor - bestMinor, entropy]
    }
}
