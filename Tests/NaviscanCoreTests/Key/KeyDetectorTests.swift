import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

/// The key stage on signals whose key is known by construction: chord loops played by bass, pads
/// and a melody through the real decoder and the whole profile pass, and the edges (silence, drums
/// alone, a song that modulates, a band tuned to A = 432 Hz).
@Suite("Key detection")
struct KeyDetectorTests {
    typealias Chord = TestSignal.Chord
    /// i–VI–III–VII in A minor: Am F C G, the loop whose notes are also C major's I–V–vi–IV.
    static let aMinorLoop = [Chord(9, minor: true), Chord(5, minor: false), Chord(0, minor: false), Chord(7, minor: false)]
    /// I–V–vi–IV in C major: the same four chords from C.
    static let cMajorLoop = [Chord(0, minor: false), Chord(7, minor: false), Chord(9, minor: true), Chord(5, minor: false)]

    func analyse(_ signal: TestSignal) throws -> TrackAnalysis {
        let scratch = try ScratchDirectory()
        let path = scratch.file("song.wav")
        try AudioFileWriter.write(signal, to: path, format: .wav16)
        return try TrackAnalyzer(options: AnalysisOptions(profile: ProfileConfig()), logger: testLogger).analyze(path: path)
    }

    @Test("the minor loop reads as its minor key, its relative major's loop as the major key")
    func relativeKeysApart() throws {
        let minor = try analyse(TestSignal.chordLoop(Self.aMinorLoop))
        #expect(minor.key?.key == MusicalKey(tonic: 9, mode: .minor), "A minor loop read as \(String(describing: minor.key))")
        let major = try analyse(TestSignal.chordLoop(Self.cMajorLoop))
        #expect(major.key?.key == MusicalKey(tonic: 0, mode: .major), "C major loop read as \(String(describing: major.key))")
    }

    @Test("a band tuned to A = 432 Hz: the same key as at 440 Hz, the tuning measured")
    func detunedBand() throws {
        // i–iv–V–i in A minor (Am Dm E Am). The relative loop above is left out here: its two readings
        // score within a few percent of each other, and any change of sound may tip it.
        let loop = [Chord(9, minor: true), Chord(2, minor: true), Chord(4, minor: false), Chord(9, minor: true)]
        let standard = try #require(try analyse(TestSignal.chordLoop(loop)).key)
        #expect(standard.key == MusicalKey(tonic: 9, mode: .minor), "read at 440 Hz as \(String(describing: standard.key))")
        #expect(abs(standard.tuning) < 0.05, "tuning \(standard.tuning) semitones at 440 Hz")
        let result = try #require(try analyse(TestSignal.chordLoop(loop, concertA: 432)).key)
        #expect(result.key == MusicalKey(tonic: 9, mode: .minor), "read at 432 Hz as \(String(describing: result.key))")
        // 1200·log2(432/440) = −31.8 cents.
        #expect(abs(result.tuning - -0.318) < 0.05, "tuning \(result.tuning) semitones")
    }

    @Test("silence and drums alone have no key")
    func noKey() throws {
        let silence = try analyse(TestSignal.silence(duration: 20))
        #expect(silence.key?.key == nil)
        let drums = try analyse(TestSignal.chordLoop([], bpm: 120))
        #expect(drums.key?.key == nil, "drums read as \(String(describing: drums.key))")
        #expect(drums.key?.confidence ?? 0 == 0)
    }

    @Test("a song that modulates reads as a key that mixes with one of its two, less surely than a song in one key")
    func modulation() throws {
        // 16 bars of D major (I–IV–V–I: D G A D), then 16 of F major (F Bb C F).
        let d = [Chord(2, minor: false), Chord(7, minor: false), Chord(9, minor: false), Chord(2, minor: false)]
        let f = [Chord(5, minor: false), Chord(10, minor: false), Chord(0, minor: false), Chord(5, minor: false)]
        let first = TestSignal.chordLoop(d, bars: 16), second = TestSignal.chordLoop(f, bars: 16, start: 0)
        let song = TestSignal(sampleRate: first.sampleRate, channels: 1, samples: first.samples + second.samples)
        let result = try #require(try analyse(song).key)
        // One global key cannot be both: D minor, F major's relative on D's tonic, is as fair as either.
        let keys = [MusicalKey(tonic: 2, mode: .major), MusicalKey(tonic: 5, mode: .major)]
        #expect(result.key.map { key in keys.contains { $0.isHarmonicNeighbour(of: key) } } == true, "read \(String(describing: result.key))")
        // Neither key holds the whole song: the model is less sure than of a song in one key.
        let steady = try #require(try analyse(TestSignal.chordLoop(d, bars: 32)).key)
        #expect(result.confidence < steady.confidence, "modulating \(result.confidence), steady \(steady.confidence)")
    }

    @Test("the profile carries the key in every spelling")
    func profileFields() throws {
        let analysis = try analyse(TestSignal.chordLoop(Self.aMinorLoop))
        let profile = TrackProfile(relativePath: "a.wav", analysis: analysis, config: ProfileConfig())
        let key = try #require(profile.key)
        #expect(key.tonic == "A" && key.mode == .minor && key.camelot == "8A" && key.openKey == "1m")
        #expect((0...1).contains(key.confidence))
        let json = try JSONSerialization.jsonObject(with: try profile.jsonData()) as? [String: Any]
        let object = try #require(json?["key"] as? [String: Any])
        #expect(object["camelot"] as? String == "8A" && object["tonic"] as? String == "A")
        #expect(try StoredProfile.read(try profile.jsonData()).key == profile.key)
    }
}
