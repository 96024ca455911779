import Foundation

/// The key decision, from the front end's chroma slots and the beat grid.
///
/// A whole-track chroma correlated with key profiles finds the key signature but not its tonic: the
/// minor loops i–VI–III–VII and their relative major's I–V–vi–IV hold the same notes. So each of the
/// 24 keys is scored on features that also read *where* notes fall (`KeyFeatures`): the bass under
/// every downbeat, under the first downbeat of each phrase (every fourth bar from the first), in
/// the first and last bars, and the triad that starts phrases. A
/// conditional logit over the 24 keys (`KeyModel`, weights fitted in folds by source) turns the scores
/// into probabilities; the most probable key is the answer and its probability the confidence. A
/// track whose chroma fits no key profile well (drums, noise, atonal sound) has no key.
public enum KeyDetector {
    /// Bumped whenever the front end, the features or the model change: keys of another version are
    /// computed again (and only they).
    public static let version = 1

    public struct Result: Sendable, Equatable {
        /// nil: no key (too little tonal sound, or no key profile fits).
        public var key: MusicalKey?
        /// The chosen key's probability; 0 without a key.
        public var confidence: Double
        /// Semitones from A = 440 Hz.
        public var tuning: Double
    }

    /// Decides from `chroma`, read between `soundStart` and `soundEnd` (seconds), with the track's
    /// beat grid where it has one; also what the decision read. nil without tonal sound to read.
    public static func decide(_ chroma: KeyChroma, grid: BeatGrid?, soundStart: Double, soundEnd: Double?,
                              model: KeyModel = .shipped) -> (result: Result, features: KeyFeatures)? {
        guard let features = KeyFeatures(chroma, grid: grid, soundStart: soundStart, soundEnd: soundEnd) else { return nil }
        return (model.decide(features, tuning: chroma.tuning), features)
    }
}

/// What the decision reads: named features for each of the 24 keys, and the track's key clarity.
public struct KeyFeatures: Sendable, Equatable {
    /// In the order of `MusicalKey.all`; each holds one value per name in `names`.
    public var values: [[Double]]
    /// The best correlation of the whole track's treble chroma with a Krumhansl–Kessler profile.
    public var clarity: Double
    /// How many pitch classes hold at least 5 % of the track's chroma (treble and bass weighing the
    /// same): a lone note or a drone on root and fifth names no key.
    public var pitchClasses: Int
    /// The track's treble and bass sums, 36 bins each, before tuning (for scripts/key-model).
    public var chroma36: [Double] = []

    /// The feature names, in the order of each key's values.
    public static let names = [
        "treble.krumhansl", "treble.edma", "treble.triad",
        "bass.tonic", "bass.fifth", "bass.downbeat.tonic", "bass.phrase.tonic", "bass.first.tonic", "bass.last.tonic",
        "phrase.triad", "mode.minor",
    ] + profileNames("treble") + profileNames("bass")

    /// A learned profile: the share of each pitch class, counted from the key's tonic, times 12,
    /// one weight per mode (`treble.major.7`: the treble's share on the fifth, for major keys).
    static func profileNames(_ part: String) -> [String] {
        MusicalKey.Mode.allCases.flatMap { mode in (0..<12).map { "\(part).\(mode.rawValue).\($0)" } }
    }

    public init(values: [[Double]], clarity: Double, pitchClasses: Int = 12) {
        self.values = values
        self.clarity = clarity
        self.pitchClasses = pitchClasses
    }

    static let krumhansl: [MusicalKey.Mode: [Double]] = [
        .major: [6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88],
        .minor: [6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17],
    ]
    /// Faraldo et al., ECIR 2016 (electronic dance music), as essentia ships it.
    static let edma: [MusicalKey.Mode: [Double]] = [
        .major: [1, 0.29, 0.50, 0.40, 0.60, 0.56, 0.32, 0.80, 0.31, 0.45, 0.42, 0.39],
        .minor: [1, 0.31, 0.44, 0.58, 0.33, 0.49, 0.29, 0.78, 0.43, 0.29, 0.53, 0.32],
    ]
    /// Pseudo-bars for a track without a beat grid.
    static let barSecondsWithoutGrid = 2.0
    static let phraseBars = 4

    /// nil when the track has no treble chroma (silence, or too short to hold a slot).
    init?(_ chroma: KeyChroma, grid: BeatGrid?, soundStart: Double, soundEnd: Double?) {
        let bins = KeyChroma.bins
        let slotCount = chroma.slotCount
        let treble = Self.fold(chroma.trebleSum.map { Float($0) }, tuning: chroma.tuning)
        guard slotCount > 0, treble.reduce(0, +) > 0 else { return nil }
        let bass = Self.fold(chroma.bassSum.map { Float($0) }, tuning: chroma.tuning)
        let slotSeconds = chroma.slotSeconds
        // Each slot folded to 12 pitch classes, treble then bass: 24 values a slot, in one array
        // (an array per slot or per bar cost thousands of allocations a track).
        var folded = [Double](repeating: 0, count: slotCount * 24)
        let shift = Self.foldShift(chroma.tuning)
        chroma.slots.withUnsafeBufferPointer { s in
            folded.withUnsafeMutableBufferPointer { out in
                for i in 0..<slotCount {
                    for part in 0..<2 {
                        let base = i * 2 * bins + part * bins
                        for c in 0..<12 { out[i * 24 + part * 12 + c] = Double(Self.pitchClass(c, shift: shift) { s[base + $0] }) }
                    }
                }
            }
        }
        func slotRange(_ from: Double, _ to: Double) -> Range<Int> {
            let lo = max(0, min(slotCount, Int(from / slotSeconds)))
            let hi = max(lo + 1, min(slotCount, Int((to / slotSeconds).rounded(.up))))
            return lo..<min(hi, max(lo, slotCount))
        }
        func add(_ range: Range<Int>, bassPart: Bool, into sum: inout [Double]) {
            for i in range { for c in 0..<12 { sum[c] += folded[i * 24 + (bassPart ? 12 : 0) + c] } }
        }
        // Bars: the grid's downbeats, else groups of four beats, else fixed pseudo-bars.
        let end = min(soundEnd ?? Double(slotCount) * slotSeconds, Double(slotCount) * slotSeconds)
        var starts: [Double]
        var beat: Double
        if let grid, grid.beatCount >= 8 {
            let beats = grid.beats
            beat = (beats.last! - beats.first!) / Double(beats.count - 1)
            let downbeats = grid.downbeats
            starts = downbeats.count >= 2 ? downbeats : stride(from: 0, to: beats.count, by: 4).map { beats[$0] }
        } else {
            beat = Self.barSecondsWithoutGrid / 4
            starts = Array(stride(from: soundStart, to: end, by: Self.barSecondsWithoutGrid))
        }
        starts = starts.filter { $0 >= soundStart - beat && $0 < end }
        if starts.isEmpty { starts = [soundStart] }
        // Under each bar's first beat. Phrases start with the music: bars 0, 4, 8, … from the first
        // (a loop read from any other bar is the same loop, so nothing in the middle of a song tells
        // where its phrases start).
        var downbeatBass = [Double](repeating: 0, count: 12)
        var phraseBass = downbeatBass, phraseTreble = downbeatBass, firstBass = downbeatBass, lastBass = downbeatBass
        for (i, start) in starts.enumerated() {
            let first = slotRange(start, start + beat)
            add(first, bassPart: true, into: &downbeatBass)
            if i % Self.phraseBars == 0 {
                add(first, bassPart: true, into: &phraseBass)
                add(first, bassPart: false, into: &phraseTreble)
            }
            if i == 0 { add(first, bassPart: true, into: &firstBass) }
            if i == starts.count - 1 { add(first, bassPart: true, into: &lastBass) }
        }
        let trebleD = treble.map(Double.init), bassD = bass.map(Double.init)
        let shares = [trebleD, bassD, downbeatBass, phraseBass, firstBass, lastBass, phraseTreble].map(Self.shares)
        let (t, b, d, p, first, last, q) = (shares[0], shares[1], shares[2], shares[3], shares[4], shares[5], shares[6])
        var clarity = -1.0
        values = MusicalKey.all.map { key in
            let k = key.tonic
            let third = key.mode == .minor ? 3 : 4
            let krumhansl = Self.correlation(t, Self.krumhansl[key.mode]!, k)
            clarity = max(clarity, krumhansl)
            // One array a key, filled in place (a few hundred allocations a track fewer).
            var row = [Double]()
            row.reserveCapacity(Self.names.count)
            row.append(krumhansl)
            row.append(Self.correlation(t, Self.edma[key.mode]!, k))
            row.append(t[k] + t[(k + third) % 12] + t[(k + 7) % 12])
            row.append(b[k]); row.append(b[(k + 7) % 12]); row.append(d[k]); row.append(p[k]); row.append(first[k]); row.append(last[k])
            row.append(q[k] + q[(k + third) % 12] + q[(k + 7) % 12])
            row.append(key.mode == .minor ? 1 : 0)
            Self.appendProfile(t, key, to: &row)
            Self.appendProfile(b, key, to: &row)
            return row
        }
        self.clarity = clarity
        pitchClasses = (0..<12).filter { (t[$0] + b[$0]) / 2 >= 0.05 }.count
        chroma36 = chroma.trebleSum + chroma.bassSum
    }

    /// The learned-profile features of `key`: the shares read from its tonic, ×12, in its mode's
    /// slots (the other mode's are 0).
    static func appendProfile(_ shares: [Double], _ key: MusicalKey, to row: inout [Double]) {
        for mode in MusicalKey.Mode.allCases {
            for i in 0..<12 { row.append(mode == key.mode ? 12 * shares[(key.tonic + i) % 12] : 0) }
        }
    }

    /// Where pitch class 0's centre sits among the 36 bins, in bins, for `tuning` semitones.
    static func foldShift(_ tuning: Double) -> Int { Int((3 * tuning).rounded()) }

    /// 36 bins to 12 pitch classes around the tuned centres.
    static func fold(_ bins36: [Float], tuning: Double) -> [Float] {
        let shift = foldShift(tuning)
        return (0..<12).map { c in pitchClass(c, shift: shift) { bins36[$0] } }
    }

    /// Pitch class `c` from 36 bins read by `bin`: its tuned centre bin and half of each neighbour.
    @inline(__always)
    static func pitchClass(_ c: Int, shift: Int, _ bin: (Int) -> Float) -> Float {
        let centre = 3 * c + shift
        func at(_ j: Int) -> Float { bin(((j % 36) + 36) % 36) }
        return 0.5 * at(centre - 1) + at(centre) + 0.5 * at(centre + 1)
    }

    static func shares(_ v: [Double]) -> [Double] {
        let total = v.reduce(0, +)
        return total > 0 ? v.map { $0 / total } : v
    }

    static func cosine(_ a: [Double], _ b: [Double]) -> Double {
        var ab = 0.0, aa = 0.0, bb = 0.0
        for i in a.indices {
            ab += a[i] * b[i]
            aa += a[i] * a[i]
            bb += b[i] * b[i]
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 1
    }

    /// Pearson correlation of `chroma` read from `tonic` on with `profile`.
    static func correlation(_ chroma: [Double], _ profile: [Double], _ tonic: Int) -> Double {
        let ma = chroma.reduce(0, +) / 12, mb = profile.reduce(0, +) / 12
        var num = 0.0, da = 0.0, db = 0.0
        for i in 0..<12 {
            let x = chroma[(i + tonic) % 12] - ma, y = profile[i] - mb
            num += x * y
            da += x * x
            db += y * y
        }
        return da > 0 && db > 0 ? num / (da * db).squareRoot() : 0
    }
}
