import Foundation

/// Deterministic test signals with known ground truth. Samples are interleaved Float32 in [-1, 1].
public struct TestSignal {
    public var sampleRate: Int
    public var channels: Int
    /// Interleaved samples.
    public var samples: [Float]

    public var frameCount: Int { samples.count / channels }
    public var duration: Double { Double(frameCount) / Double(sampleRate) }

    public init(sampleRate: Int, channels: Int, samples: [Float]) {
        precondition(samples.count % channels == 0)
        self.sampleRate = sampleRate
        self.channels = channels
        self.samples = samples
    }

    /// dBFS → linear amplitude.
    public static func amplitude(dBFS: Double) -> Double { pow(10, dBFS / 20) }

    /// The same mono signal on every channel.
    static func fromMono(_ mono: [Float], sampleRate: Int, channels: Int) -> TestSignal {
        guard channels > 1 else { return TestSignal(sampleRate: sampleRate, channels: 1, samples: mono) }
        var out = [Float](repeating: 0, count: mono.count * channels)
        for i in 0..<mono.count { for c in 0..<channels { out[i * channels + c] = mono[i] } }
        return TestSignal(sampleRate: sampleRate, channels: channels, samples: out)
    }

    /// A sine of `frequency` Hz, `dBFS` peak level.
    public static func sine(frequency: Double, dBFS: Double = -6, duration: Double, sampleRate: Int = 44_100,
                            channels: Int = 1, phase: Double = 0) -> TestSignal {
        let n = Int((duration * Double(sampleRate)).rounded())
        let a = amplitude(dBFS: dBFS)
        let w = 2 * Double.pi * frequency / Double(sampleRate)
        let mono = (0..<n).map { Float(a * sin(w * Double($0) + phase)) }
        return fromMono(mono, sampleRate: sampleRate, channels: channels)
    }

    /// Digital silence: exact zeros.
    public static func silence(duration: Double, sampleRate: Int = 44_100, channels: Int = 1) -> TestSignal {
        let n = Int((duration * Double(sampleRate)).rounded())
        return TestSignal(sampleRate: sampleRate, channels: channels, samples: [Float](repeating: 0, count: n * channels))
    }

    /// Exponential sine sweep from `from` to `to` Hz.
    public static func sweep(from f0: Double, to f1: Double, dBFS: Double = -6, duration: Double,
                             sampleRate: Int = 44_100, channels: Int = 1) -> TestSignal {
        let n = Int((duration * Double(sampleRate)).rounded())
        let a = amplitude(dBFS: dBFS)
        let k = log(f1 / f0)
        let mono = (0..<n).map { i -> Float in
            let t = Double(i) / Double(sampleRate)
            let phase = 2 * Double.pi * f0 * duration / k * (exp(t / duration * k) - 1)
            return Float(a * sin(phase))
        }
        return fromMono(mono, sampleRate: sampleRate, channels: channels)
    }

    /// Clicks (short decaying noise-free tone bursts) at `bpm`, the first at `firstBeat` seconds.
    public static func clicks(bpm: Double, duration: Double, firstBeat: Double = 0, dBFS: Double = -6,
                              sampleRate: Int = 44_100, channels: Int = 1) -> TestSignal {
        let n = Int((duration * Double(sampleRate)).rounded())
        var mono = [Float](repeating: 0, count: n)
        let a = amplitude(dBFS: dBFS)
        let period = 60 / bpm
        let clickLength = Int(0.03 * Double(sampleRate))
        var beat = firstBeat
        while beat < duration {
            let start = Int((beat * Double(sampleRate)).rounded())
            for j in 0..<clickLength where start + j < n {
                let t = Double(j) / Double(sampleRate)
                mono[start + j] = Float(a * exp(-t * 150) * sin(2 * Double.pi * 1500 * t))
            }
            beat += period
        }
        return fromMono(mono, sampleRate: sampleRate, channels: channels)
    }

    /// This signal followed by `other` (same rate and channels).
    public func appending(_ other: TestSignal) -> TestSignal {
        precondition(other.sampleRate == sampleRate && other.channels == channels)
        return TestSignal(sampleRate: sampleRate, channels: channels, samples: samples + other.samples)
    }
}

/// A mono mix of short events at given times, with a seeded noise source (a linear congruential
/// generator, the same numbers on every platform); the grooves below are written with it.
final class EventMix {
    fileprivate var samples: [Float]
    private let sampleRate: Int
    private var noiseState: UInt32

    init(duration: Double, sampleRate: Int, seed: UInt32) {
        samples = [Float](repeating: 0, count: Int((duration * Double(sampleRate)).rounded()))
        self.sampleRate = sampleRate
        noiseState = seed
    }

    /// The next noise value, in [−1, 1].
    func noise() -> Double {
        noiseState = noiseState &* 1_664_525 &+ 1_013_904_223
        return Double(Int32(bitPattern: noiseState)) / Double(Int32.max)
    }

    /// Adds `sample(s)`, s seconds into the event, from `time` for `length` seconds (cut at the ends).
    func add(at time: Double, length: Double, _ sample: (Double) -> Double) {
        let start = Int((time * Double(sampleRate)).rounded())
        for j in 0..<Int(length * Double(sampleRate)) where start + j < samples.count && start + j >= 0 {
            samples[start + j] += Float(sample(Double(j) / Double(sampleRate)))
        }
    }

    /// The mix scaled to peak at `dBFS`.
    func signal(dBFS: Double) -> TestSignal {
        let peak = samples.map { abs($0) }.max() ?? 1
        let gain = Float(TestSignal.amplitude(dBFS: dBFS)) / max(peak, 1e-9)
        return TestSignal(sampleRate: sampleRate, channels: 1, samples: samples.map { $0 * gain })
    }
}

extension TestSignal {
    /// A deterministic rock groove at `bpm`: kick on beats 1 and 3, snare on 2 and 4, hi-hat on every
    /// eighth, with a bass note on each beat. The first downbeat is at `firstBeat` seconds.
    public static func drumGroove(bpm: Double, duration: Double, firstBeat: Double = 0.5, dBFS: Double = -10,
                                  sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x1234_5678)
        let beat = 60 / bpm
        var k = 0
        while firstBeat + Double(k) * beat < duration {
            let t = firstBeat + Double(k) * beat
            if k % 2 == 0 {
                mix.add(at: t, length: 0.3) { s in sin(2 * .pi * (50 + 90 * exp(-s * 30)) * s) * exp(-s * 12) }
            } else {
                mix.add(at: t, length: 0.2) { s in (0.5 * mix.noise() + 0.3 * sin(2 * .pi * 190 * s)) * exp(-s * 25) }
            }
            for half in 0..<2 {
                mix.add(at: t + Double(half) * beat / 2, length: 0.05) { s in 0.15 * mix.noise() * exp(-s * 90) }
            }
            mix.add(at: t, length: beat) { s in 0.2 * sin(2 * .pi * 55 * s) * exp(-s * 3) }
            k += 1
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A groove on the given beat times (seconds, increasing), with bars of `beatsPerBar` beats from
    /// the first: on each bar line a kick, a crash and a new bass note (the bar's chord changes), on
    /// the other beats a snare, a closed hat on every beat and halfway to the next. The signal lasts
    /// `duration` seconds; beats past it are left out.
    public static func barGroove(beats: [Double], beatsPerBar: Int, duration: Double, dBFS: Double = -10,
                                 sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x2468_ACE1)
        let roots = [55.0, 73.4, 61.7, 82.4]
        for (k, t) in beats.enumerated() where t < duration {
            let next = k + 1 < beats.count ? beats[k + 1] : t + (k > 0 ? t - beats[k - 1] : 0.5)
            let gap = next - t
            if k % beatsPerBar == 0 {
                let root = roots[(k / beatsPerBar) % roots.count]
                mix.add(at: t, length: 0.3) { s in sin(2 * .pi * (50 + 90 * exp(-s * 30)) * s) * exp(-s * 12) }
                mix.add(at: t, length: 0.6) { s in 0.25 * mix.noise() * exp(-s * 6) }
                mix.add(at: t, length: gap * Double(beatsPerBar)) { s in 0.3 * sin(2 * .pi * root * s) * exp(-s * 1.5) }
            } else {
                mix.add(at: t, length: 0.2) { s in (0.35 * mix.noise() + 0.2 * sin(2 * .pi * 190 * s)) * exp(-s * 25) }
            }
            mix.add(at: t, length: 0.05) { s in 0.12 * mix.noise() * exp(-s * 90) }
            mix.add(at: t + gap / 2, length: 0.05) { s in 0.08 * mix.noise() * exp(-s * 90) }
        }
        return mix.signal(dBFS: dBFS)
    }

    /// An off-beat groove at `bpm` from `first`: on each beat a closed hi-hat and a short chord
    /// stab; between the beats a loud, plucked bass note with a kick (reggae's and funk's bass on the
    /// "and"), so the strongest onsets of the full band fall between the beats and only the hi-hats
    /// and stabs mark the beat itself.
    public static func offbeatGroove(bpm: Double, first: Double = 0.5, duration: Double, dBFS: Double = -10,
                                     sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x1357_9BDF)
        let period = 60 / bpm
        let bass = [55.0, 55.0, 73.4, 65.4]
        var k = 0
        var t = first
        while t < duration {
            // Hi-hat: noise differenced twice (energy above a few kHz), and a stab of three partials.
            var previous = 0.0, beforePrevious = 0.0
            mix.add(at: t, length: 0.06) { s in
                let x = mix.noise(), y = x - 2 * previous + beforePrevious
                beforePrevious = previous; previous = x
                return 0.05 * y * exp(-s * 70)
            }
            mix.add(at: t, length: 0.12) { s in
                0.06 * (sin(2 * .pi * 523 * s) + sin(2 * .pi * 659 * s) + sin(2 * .pi * 784 * s)) * exp(-s * 30)
            }
            let off = t + period / 2
            mix.add(at: off, length: 0.25) { s in sin(2 * .pi * (45 + 70 * exp(-s * 40)) * s) * exp(-s * 14) }
            mix.add(at: off, length: period * 0.45) { s in 0.6 * sin(2 * .pi * bass[k % bass.count] * s) * exp(-s * 5) }
            k += 1
            t += period
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A four-on-the-floor groove at `bpm` from `first`: the same kick on every beat and the same
    /// hi-hat on every eighth, so nothing in the drums marks the one; a soft-attack chord pad
    /// (three partials in 170–400 Hz) changes chord on every bar line of `beatsPerBar` beats, the
    /// only sign of where the bars start.
    public static func chordChangeGroove(bpm: Double, first: Double = 0.5, beatsPerBar: Int = 4, duration: Double,
                                         dBFS: Double = -10, sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x4C0C_A1D5)
        let chords: [[Double]] = [[261.6, 329.6, 392.0], [220.0, 261.6, 329.6], [174.6, 220.0, 261.6], [196.0, 246.9, 293.7]]
        let period = 60 / bpm
        var k = 0
        var t = first
        while t < duration {
            mix.add(at: t, length: 0.3) { s in sin(2 * .pi * (50 + 90 * exp(-s * 30)) * s) * exp(-s * 12) }
            for half in 0..<2 {
                mix.add(at: t + Double(half) * period / 2, length: 0.05) { s in 0.15 * mix.noise() * exp(-s * 90) }
            }
            if k % beatsPerBar == 0 {
                let chord = chords[(k / beatsPerBar) % chords.count]
                let length = period * Double(beatsPerBar)
                mix.add(at: t, length: length) { s in
                    let envelope = min(1, s / 0.03) * min(1, (length - s) / 0.03)
                    return envelope * 0.12 * chord.reduce(0) { $0 + sin(2 * .pi * $1 * s) }
                }
            }
            k += 1
            t += period
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A house loop at `bpm` from `first`: a kick with a short click on every beat, an open hi-hat
    /// between the beats and a clap on beats 2 and 4; no bass, no chords, so nothing marks the one
    /// but the start of the sound.
    public static func houseLoop(bpm: Double, first: Double = 0.5, duration: Double, dBFS: Double = -10,
                                 sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x0C1A_9124)
        let period = 60 / bpm
        var k = 0
        var t = first
        while t < duration {
            mix.add(at: t, length: 0.3) { s in sin(2 * .pi * (50 + 90 * exp(-s * 30)) * s) * exp(-s * 12) }
            mix.add(at: t, length: 0.004) { s in 0.3 * mix.noise() * exp(-s * 800) }
            var previous = 0.0
            mix.add(at: t + period / 2, length: 0.25) { s in
                let x = mix.noise(), y = x - previous
                previous = x
                return 0.25 * y * exp(-s * 12)
            }
            if k % 2 == 1 { mix.add(at: t, length: 0.15) { s in 0.4 * mix.noise() * exp(-s * 30) } }
            k += 1
            t += period
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A soft ballad at `bpm` from `first`: on every beat a three-partial piano-like note with a 25 ms
    /// attack (the melody walks a scale), on every fourth a bass note under it; no drums, so its onsets
    /// are soft and its flux small for its level.
    public static func softBallad(bpm: Double, first: Double = 0.5, duration: Double, attack: Double = 0.025, dBFS: Double = -10,
                                  sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x0BA1_1AD5)
        let scale = [261.6, 293.7, 329.6, 349.2, 392.0, 440.0, 392.0, 329.6]
        let period = 60 / bpm
        var k = 0
        var t = first
        while t < duration {
            let f = scale[k % scale.count]
            mix.add(at: t, length: period * 1.5) { s in
                min(1, s / attack) * exp(-s * 2.5) * 0.3 * (sin(2 * .pi * f * s) + 0.4 * sin(4 * .pi * f * s) + 0.2 * sin(6 * .pi * f * s))
            }
            if k % 4 == 0 {
                mix.add(at: t, length: period * 4) { s in min(1, s / 0.04) * exp(-s * 1.2) * 0.3 * sin(2 * .pi * 65.4 * s) }
            }
            k += 1
            t += period
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A drumless shuffle at `bpm` from `first`: on every beat a plucked four-partial note (the melody
    /// walks a scale), a softer one two thirds of the way to the next beat (the swung eighth), every
    /// other beat's note softer still, and a bass note on every other beat: accents every two beats that
    /// pull towards half the tempo. Its beat is split in three, so at half its tempo the beat would be
    /// split in six.
    public static func shuffle(bpm: Double, first: Double = 0.5, duration: Double, dBFS: Double = -10,
                               sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x5B0F_F1E5)
        let scale = [440.0, 493.9, 554.4, 587.3, 659.3, 740.0, 830.6, 880.0]
        let bass = [55.0, 69.3, 82.4, 92.5]
        let period = 60 / bpm
        func note(_ f: Double, _ gain: Double, decay: Double) -> (Double) -> Double {
            { s in gain * exp(-s * decay) * (1...4).reduce(0.0) { $0 + sin(2 * .pi * f * Double($1) * s) / Double($1) } }
        }
        var k = 0
        var t = first
        while t < duration {
            let f = scale[(k * 5 + k / 3) % scale.count]
            mix.add(at: t, length: 0.4, note(f, k % 2 == 0 ? 0.5 : 0.175, decay: 8))
            mix.add(at: t + 2 * period / 3, length: 0.3, note(scale[(k * 3 + 2) % scale.count], 0.25, decay: 10))
            if k % 2 == 0 {
                mix.add(at: t, length: period * 2, note(bass[(k / 2) % bass.count], 0.6, decay: 3))
            }
            k += 1
            t += period
        }
        return mix.signal(dBFS: dBFS)
    }

    /// A string section playing a legato melody at `bpm`: a new note on every beat, each rising over
    /// `attack` seconds and held into the next one, five voices detuned by up to ±8 cents, in a hall
    /// (a Schroeder reverb of 1.5 s, `wet` of the mix). No note starts sharply: the beat is in the
    /// rises, not in any click.
    public static func stringSection(bpm: Double, first: Double = 0.5, duration: Double, attack: Double = 0.15,
                                     wet: Double = 0.9, dBFS: Double = -10, sampleRate: Int = 44_100) -> TestSignal {
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x5721_4E65)
        let scale = [261.6, 293.7, 329.6, 349.2, 392.0, 440.0, 392.0, 329.6]
        let period = 60 / bpm, length = period * 1.3
        var k = 0
        var t = first
        while t < duration {
            for _ in 0..<5 {
                let f = scale[k % scale.count] * pow(2, 8 * mix.noise() / 1200)
                let phase = Double.pi * (1 + mix.noise())
                mix.add(at: t, length: length) { s in
                    let envelope = min(1, s / attack) * min(1, max(0, length - s) / 0.2)
                    let p = 2 * .pi * f * s + phase
                    return 0.06 * envelope * (sin(p) + sin(2 * p) / 2 + sin(3 * p) / 3 + sin(4 * p) / 4)
                }
            }
            k += 1
            t += period
        }
        let dry = mix.samples.map(Double.init)
        var reverb = [Double](repeating: 0, count: dry.count)
        for delay in [29.7, 37.1, 41.1, 43.7] {   // parallel feedback combs
            let d = Int(delay * Double(sampleRate) / 1000), g = pow(10, -3 * delay / 1000 / 1.5)
            var y = [Double](repeating: 0, count: dry.count)
            for i in dry.indices { y[i] = dry[i] + (i >= d ? g * y[i - d] : 0) }
            for i in dry.indices { reverb[i] += y[i] / 4 }
        }
        for delay in [5.0, 1.7] {                 // series allpasses
            let d = Int(delay * Double(sampleRate) / 1000), g = 0.7
            var y = [Double](repeating: 0, count: reverb.count)
            for i in reverb.indices { y[i] = -g * reverb[i] + (i >= d ? reverb[i - d] + g * y[i - d] : 0) }
            reverb = y
        }
        let dryPeak = dry.map(abs).max() ?? 1, wetPeak = max(reverb.map(abs).max() ?? 1, 1e-12)
        for i in mix.samples.indices { mix.samples[i] = Float((1 - wet) * dry[i] + wet * reverb[i] * dryPeak / wetPeak) }
        return mix.signal(dBFS: dBFS)
    }

    /// Beat times from `first` at a tempo moving linearly from `fromBPM` to `toBPM` over `duration`.
    public static func rampBeats(first: Double, fromBPM: Double, toBPM: Double, duration: Double) -> [Double] {
        var beats: [Double] = []
        var t = first
        while t < duration {
            beats.append(t)
            t += 60 / (fromBPM + (toBPM - fromBPM) * t / duration)
        }
        return beats
    }

    /// A beatless pad: three detuned sines whose levels drift slowly and independently.
    public static func ambientPad(duration: Double, dBFS: Double = -12, sampleRate: Int = 44_100) -> TestSignal {
        let n = Int((duration * Double(sampleRate)).rounded())
        let a = amplitude(dBFS: dBFS) / 3
        let voices: [(Double, Double, Double)] = [(110, 0.071, 0.0), (164.8, 0.113, 1.3), (220.7, 0.053, 2.9)]
        let mono = (0..<n).map { i -> Float in
            let t = Double(i) / Double(sampleRate)
            var s = 0.0
            for (f, rate, phase) in voices { s += (0.6 + 0.4 * sin(2 * .pi * rate * t + phase)) * sin(2 * .pi * f * t) }
            return Float(a * s)
        }
        return TestSignal(sampleRate: sampleRate, channels: 1, samples: mono)
    }

    /// A sustained chord (root, fifth, octave) breathing slowly.
    public static func pad(root: Double, duration: Double) -> TestSignal {
        let rate = 44_100
        let samples = (0..<Int(duration * Double(rate))).map { i -> Float in
            let t = Double(i) / Double(rate)
            let swell = 0.7 + 0.3 * sin(2 * .pi * 0.2 * t)
            return Float(0.1 * swell * (sin(2 * .pi * root * t) + 0.7 * sin(2 * .pi * 1.5 * root * t) + 0.5 * sin(2 * .pi * 2 * root * t)))
        }
        return TestSignal(sampleRate: rate, channels: 1, samples: samples)
    }

    /// A bright square-wave melody: four notes a second, odd harmonics up to 8 kHz.
    public static func buzz(note: Double, duration: Double) -> TestSignal {
        let rate = 44_100
        let steps = [1.0, 1.25, 1.5, 1.125]
        var phase = 0.0
        let samples = (0..<Int(duration * Double(rate))).map { i -> Float in
            let t = Double(i) / Double(rate)
            let f = note * steps[Int(t * 4) % steps.count]
            phase += 2 * .pi * f / Double(rate)
            var s = 0.0
            var h = 1.0
            while h * f < 8000 { s += sin(h * phase) / h; h += 2 }
            return Float(0.2 * s)
        }
        return TestSignal(sampleRate: rate, channels: 1, samples: samples)
    }
}

extension TestSignal {
    /// A chord in a loop: its root's pitch class (0 = C) and whether it is minor.
    public struct Chord: Sendable {
        public var root: Int
        public var minor: Bool
        public init(_ root: Int, minor: Bool) {
            self.root = root
            self.minor = minor
        }
    }

    /// A band playing `chords` (none: the drums alone), one a bar (4 beats at `bpm`), for `bars` bars, looping: a bass note on
    /// the root at each beat (octave 2), the triad held over the bar (octave 4, five harmonics each),
    /// a melody of chord tones on the eighths, and, with `drums`, kick, snare and hats. Pitches are
    /// tuned to `concertA` Hz (440: standard; 432: 32 cents flat).
    public static func chordLoop(_ chords: [Chord], bpm: Double = 110, bars: Int = 16, concertA: Double = 440,
                                 drums: Bool = true, start: Double = 0.5, dBFS: Double = -10, sampleRate: Int = 44_100) -> TestSignal {
        let beat = 60 / bpm
        let duration = start + Double(bars * 4) * beat + 1
        let mix = EventMix(duration: duration, sampleRate: sampleRate, seed: 0x4B45_5921)
        func hz(_ midi: Int) -> Double { concertA * pow(2, Double(midi - 69) / 12) }
        func tone(_ f: Double, harmonics: Int, decay: Double, level: Double) -> (Double) -> Double {
            { s in
                var v = 0.0
                for h in 1...harmonics where Double(h) * f < 0.45 * Double(sampleRate) { v += sin(2 * .pi * Double(h) * f * s) / Double(h) }
                return level * v * exp(-s * decay) * min(1, s / 0.01)
            }
        }
        for bar in 0..<bars {
            let t0 = start + Double(bar * 4) * beat
            addDrums(bar: t0)
            guard !chords.isEmpty else { continue }
            let chord = chords[bar % chords.count]
            let notes = [0, chord.minor ? 3 : 4, 7].map { chord.root + $0 }
            for note in notes { mix.add(at: t0, length: 4 * beat) { tone(hz(60 + note), harmonics: 5, decay: 0.4, level: 0.12)($0) } }
            for b in 0..<4 {
                mix.add(at: t0 + Double(b) * beat, length: beat) { tone(hz(36 + chord.root), harmonics: 4, decay: 2, level: 0.35)($0) }
            }
            for e in 0..<8 {
                let note = notes[(e * 5 + bar) % 3] + 12
                mix.add(at: t0 + Double(e) * beat / 2, length: beat / 2) { tone(hz(60 + note), harmonics: 3, decay: 6, level: 0.08)($0) }
            }
        }
        return mix.signal(dBFS: dBFS)

        func addDrums(bar t0: Double) {
            guard drums else { return }
            for b in 0..<4 {
                let t = t0 + Double(b) * beat
                if b % 2 == 0 {
                    mix.add(at: t, length: 0.3) { s in 0.6 * sin(2 * .pi * (50 + 90 * exp(-s * 30)) * s) * exp(-s * 12) }
                } else {
                    mix.add(at: t, length: 0.2) { s in 0.4 * (0.5 * mix.noise() + 0.3 * sin(2 * .pi * 190 * s)) * exp(-s * 25) }
                }
                for half in 0..<2 { mix.add(at: t + Double(half) * beat / 2, length: 0.05) { s in 0.1 * mix.noise() * exp(-s * 90) } }
            }
        }
    }
}
