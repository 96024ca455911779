import Foundation

/// The key stage's front end: a treble chroma from the onset stage's spectra and a bass chroma from
/// a stream decimated to 2.76 kHz, both as 36 bins per octave (a third of a semitone, bin 0 = C at
/// A = 440 Hz), summed into slots of 0.37 s so the decision can read where bars and phrases start.
///
/// - Bass and middle: three half-band stages take the 22.05 kHz stream to 2756.25 Hz; a 1024-point
///   spectrum (2.7 Hz bins, 0.37 s) every 512 samples. Each local maximum within 50 dB of the
///   frame's largest is placed by parabolic interpolation on its log power and adds its magnitude to
///   the bins within half a semitone of it (cos² window): peaks between 27.5 and 330 Hz to the bass
///   chroma, those between 330 Hz and 1 kHz to the treble chroma. (The onset stage's 21.5 Hz bins
///   are a semitone apart only above about 400 Hz: the middle octaves' notes smeared into their
///   neighbours there, and how much depended on the tuning.)
/// - Treble above 1 kHz: every `trebleStride`-th spectrum of the onset stage (1024 points at
///   22.05 kHz, every 80 ms), peaks between 1 and 5 kHz placed the same way. Frames whose onset flux
///   is above its running mean (drum hits) count less.
/// - Tuning: the circular mean of the middle's peaks' deviations from the tempered semitone,
///   weighted by their magnitude (a recording at A = 432 Hz sits 32 cents flat: the decision folds
///   the 36 bins to 12 around the tuned centres). The 2.7 Hz bins place those peaks to a few cents.
///
/// Cost: about 2 % of a scan (docs/performance.md); nothing is allocated per block.
///
/// Memory: the slots of the first `maxSlotSeconds` (30 minutes: 1.4 MB); later sound reaches only
/// the track's sums.
public final class KeyChroma {
    public static let bins = 36
    static let trebleStride = 8
    static let trebleLowHz: Float = 1000
    static let trebleHighHz: Float = 5000
    static let bassLowHz: Float = 27.5
    static let bassHighHz: Float = 330
    /// Peaks this far below the frame's largest are left out.
    static let peakFloorDB: Float = 50
    static let bassFFTSize = 1024
    static let bassHop = 512
    static let maxSlotSeconds = 1800.0
    /// Three half-band stages.
    static let decimation = 8

    /// Rate of the bass stream and the slot length (two bass hops).
    public let bassRate: Double
    public var slotSeconds: Double { Double(2 * Self.bassHop) / bassRate }
    private let hopSeconds: Double
    private let binHz: Float
    private let bassBinHz: Float
    private let trebleBins: Range<Int>
    /// The bass stream's bins up to 1 kHz; those below `bassHighHz` are the bass.
    private let bassBins: Range<Int>
    private let firstMiddleBin: Int
    /// A sine gives the same peak in both spectra (1024-point Hann): the middle's frames, fewer a
    /// second than the treble's, weigh as many treble frames as they last.
    private let middleWeight: Float
    private let silencePower: Float
    private let bassSpectrum: SpectrumAnalyzer
    private let bassPower: UnsafeMutablePointer<Float>
    private let bassQueue: SampleQueue
    private let stages: [HalfbandDecimator]
    private let maxSlots: Int

    /// Slot after slot: 36 treble values then 36 bass values.
    public private(set) var slots: [Float] = []
    private let sums: UnsafeMutablePointer<Double>
    /// The whole track's treble and bass chroma, 36 bins each.
    public var trebleSum: [Double] { Array(UnsafeBufferPointer(start: sums, count: Self.bins)) }
    public var bassSum: [Double] { Array(UnsafeBufferPointer(start: sums + Self.bins, count: Self.bins)) }
    /// Σ magnitude · e^{2πi·deviation} over the treble peaks.
    private var tuningCos = 0.0, tuningSin = 0.0
    private var hop = 0
    private var bassFrames = 0
    private var fluxMean: Float = 0
    /// One frame's bins: treble or bass, and the middle (raw buffers: no exclusivity checks per peak).
    private let frameBins: UnsafeMutablePointer<Float>
    private let middleBins: UnsafeMutablePointer<Float>
    /// cos² of the window at a distance of i / `windowSteps` bins, 0 ≤ distance < 1.5.
    private static let windowSteps: Float = 256
    private let window: UnsafeMutablePointer<Float>
    private let floorRatio = pow(10, -KeyChroma.peakFloorDB / 10)

    /// `fftSize`/`sampleRate`/`hopSeconds`: the onset stage's spectra; `fullScalePower` the total
    /// power a full-scale sine gives in them (frames 60 dB below are silence).
    public init(fftSize: Int, sampleRate: Int, hopSeconds: Double, fullScalePower: Float) {
        binHz = Float(sampleRate) / Float(fftSize)
        self.hopSeconds = hopSeconds
        trebleBins = max(1, Int((Self.trebleLowHz / binHz).rounded(.down)))..<min(fftSize / 2, Int((Self.trebleHighHz / binHz).rounded(.up)))
        bassRate = Double(sampleRate) / Double(Self.decimation)
        bassBinHz = Float(bassRate) / Float(Self.bassFFTSize)
        bassBins = max(1, Int((Self.bassLowHz / bassBinHz).rounded(.down)))..<Int((Self.trebleLowHz / bassBinHz).rounded(.up))
        firstMiddleBin = Int((Self.bassHighHz / bassBinHz).rounded(.up))
        middleWeight = Float(Double(Self.bassHop) / bassRate / (hopSeconds * Double(Self.trebleStride)))
        silencePower = fullScalePower * 1e-6
        bassSpectrum = SpectrumAnalyzer(size: Self.bassFFTSize)
        bassPower = .allocate(capacity: Self.bassFFTSize / 2 + 1)
        bassQueue = SampleQueue(capacity: Self.bassFFTSize + OnsetEnvelope.conversionChunk)
        // Half a window of zeros first, so bass frame i is centred on slot time i·hop.
        _ = bassQueue.appendZeros(Self.bassFFTSize / 2)
        stages = [OnsetEnvelope.conversionChunk, OnsetEnvelope.conversionChunk / 2, OnsetEnvelope.conversionChunk / 4]
            .map { HalfbandDecimator(maxInputFrames: $0 + 64) }
        maxSlots = Int(Self.maxSlotSeconds / (Double(2 * Self.bassHop) / bassRate))
        slots.reserveCapacity(2 * Self.bins * 1024)
        sums = .allocate(capacity: 2 * Self.bins)
        sums.initialize(repeating: 0, count: 2 * Self.bins)
        frameBins = .allocate(capacity: Self.bins)
        middleBins = .allocate(capacity: Self.bins)
        let steps = Int(1.5 * Self.windowSteps) + 2
        window = .allocate(capacity: steps)
        for i in 0..<steps {
            let w = cos(Float.pi / 3 * min(1.5, Float(i) / Self.windowSteps))
            window[i] = w * w
        }
    }

    deinit {
        bassPower.deallocate()
        sums.deallocate()
        frameBins.deallocate()
        middleBins.deallocate()
        window.deallocate()
    }

    /// The onset stage's stream at its own rate (22.05 kHz), in pieces of at most `conversionChunk`.
    func process(_ samples: UnsafeBufferPointer<Float>) {
        stages[0].process(samples) { half in
            stages[1].process(half) { quarter in
                stages[2].process(quarter) { eighth in bass(eighth) }
            }
        }
    }

    /// One hop of the onset front end: its power spectrum and onset flux.
    func observe(power: UnsafePointer<Float>, flux: Float) {
        defer {
            fluxMean += (flux - fluxMean) / 100
            hop += 1
        }
        guard hop % Self.trebleStride == 0 else { return }
        var total: Float = 0
        var largest: Float = 0
        for k in trebleBins {
            total += power[k]
            largest = max(largest, power[k])
        }
        guard total > silencePower else { return }
        // A drum hit (flux well above its running mean) counts for less.
        let weight = 1 / (1 + max(0, flux / max(fluxMean, 1e-9) - 1))
        frameBins.update(repeating: 0, count: Self.bins)
        let floor = largest * floorRatio
        for k in trebleBins where power[k] > floor && power[k] > power[k - 1] && power[k] >= power[k + 1] {
            let (hz, magnitude) = Self.peak(power, k, binHz)
            spread(semitones: 12 * log2(hz / 440), magnitude: magnitude, into: frameBins)
        }
        let time = Double(hop) * hopSeconds
        add(frameBins, weight: weight, at: time, offset: 0)
    }

    private func bass(_ samples: UnsafeBufferPointer<Float>) {
        bassQueue.windows(of: samples, size: Self.bassFFTSize, hop: Self.bassHop) { bassFrame($0) }
    }

    private func bassFrame(_ frame: UnsafePointer<Float>) {
        defer { bassFrames += 1 }
        bassSpectrum.powerSpectrum(of: frame, into: bassPower)
        var largest: Float = 0
        for k in bassBins { largest = max(largest, bassPower[k]) }
        guard largest > 0 else { return }
        frameBins.update(repeating: 0, count: Self.bins)
        middleBins.update(repeating: 0, count: Self.bins)
        let floor = largest * floorRatio
        var cosSum = 0.0, sinSum = 0.0
        for k in bassBins where bassPower[k] > floor && bassPower[k] > bassPower[k - 1] && bassPower[k] >= bassPower[k + 1] {
            let (hz, magnitude) = Self.peak(bassPower, k, bassBinHz)
            let semitones = 12 * log2(hz / 440)
            if k < firstMiddleBin {
                spread(semitones: semitones, magnitude: magnitude, into: frameBins)
            } else {
                let deviation = semitones - semitones.rounded()
                cosSum += Double(magnitude * cos(2 * .pi * deviation))
                sinSum += Double(magnitude * sin(2 * .pi * deviation))
                spread(semitones: semitones, magnitude: magnitude, into: middleBins)
            }
        }
        tuningCos += cosSum
        tuningSin += sinSum
        let time = Double(bassFrames * Self.bassHop) / bassRate
        add(frameBins, weight: 1, at: time, offset: Self.bins)
        add(middleBins, weight: middleWeight, at: time, offset: 0)
    }

    /// Adds one frame's bins to the slot holding `time` (treble at `offset` 0, bass at 36) and to the sums.
    private func add(_ frame: UnsafeMutablePointer<Float>, weight: Float, at time: Double, offset: Int) {
        for b in 0..<Self.bins { sums[offset + b] += Double(frame[b] * weight) }
        let slot = Int(time / slotSeconds)
        guard slot < maxSlots else { return }
        let needed = (slot + 1) * 2 * Self.bins
        if slots.count < needed { slots.append(contentsOf: repeatElement(0, count: needed - slots.count)) }
        let base = slot * 2 * Self.bins + offset
        slots.withUnsafeMutableBufferPointer { s in
            for b in 0..<Self.bins { s[base + b] += frame[b] * weight }
        }
    }

    /// A spectral peak at bin `k`, placed by a parabola through the log powers of its neighbours:
    /// its frequency and magnitude.
    static func peak(_ power: UnsafePointer<Float>, _ k: Int, _ binHz: Float) -> (hz: Float, magnitude: Float) {
        let a = log(power[k - 1] + 1e-30), b = log(power[k] + 1e-30), c = log(power[k + 1] + 1e-30)
        let denominator = a - 2 * b + c
        let delta = denominator < 0 ? min(0.5, max(-0.5, 0.5 * (a - c) / denominator)) : 0
        let logPower = b - 0.25 * (a - c) * delta
        return ((Float(k) + delta) * binHz, exp(0.5 * logPower))
    }

    /// Spreads a peak `semitones` from A 440 over the bins within half a semitone of it (cos², from
    /// the table).
    private func spread(semitones: Float, magnitude: Float, into bins: UnsafeMutablePointer<Float>) {
        // Bin position from C, in thirds of a semitone.
        let position = (semitones + 9) * 3
        let centre = Int(position.rounded(.down))
        for b in (centre - 1)...(centre + 2) {
            let distance = abs(Float(b) - position)
            guard distance < 1.5 else { continue }
            let index = ((b % Self.bins) + Self.bins) % Self.bins
            bins[index] += magnitude * window[Int(distance * Self.windowSteps)]
        }
    }

    /// The tuning, in semitones from A = 440 Hz (−0.5 ..< 0.5): −0.32 for A = 432 Hz.
    public var tuning: Double {
        guard tuningCos != 0 || tuningSin != 0 else { return 0 }
        return atan2(tuningSin, tuningCos) / (2 * .pi)
    }

    /// How many slots hold data.
    public var slotCount: Int { slots.count / (2 * Self.bins) }
}
