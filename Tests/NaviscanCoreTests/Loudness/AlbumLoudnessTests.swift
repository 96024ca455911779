import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Album loudness from stored gating histograms")
struct AlbumLoudnessTests {
    static func histogram(_ signal: TestSignal) throws -> LoudnessHistogram {
        let result = try LoudnessMeterTests.measure(signal)
        return try #require(result.histogram)
    }

    @Test("Tracks at −20 and −10 LUFS, at 48 and 44.1 kHz: libebur128's global-multiple loudness within 0.01 LU")
    func twoLevels() throws {
        let quiet = LoudnessMeterTests.tone([(30, -20)], rate: 48_000)
        let loud = LoudnessMeterTests.tone([(20, -10)], rate: 44_100)
        let quietHistogram = try Self.histogram(quiet), loudHistogram = try Self.histogram(loud)
        let quietLUFS = try #require(LoudnessHistogram.integratedLoudness(of: [quietHistogram]))
        let loudLUFS = try #require(LoudnessHistogram.integratedLoudness(of: [loudHistogram]))
        #expect(abs(quietLUFS - -20) < 0.05 && abs(loudLUFS - -10) < 0.05, "\(quietLUFS), \(loudLUFS) LUFS")
        let album = try #require(LoudnessHistogram.integratedLoudness(of: [quietHistogram, loudHistogram]))
        let reference = try LoudnessReference.albumLoudness([quiet, loud])
        #expect(abs(album - reference) < 0.01, "album \(album) LUFS, libebur128 \(reference) LUFS")
        // Not an average of the two tracks: the loud one's blocks dominate the energy mean.
        #expect(album > -14)
    }

    @Test("Grooves whose levels step across the relative gate agree with libebur128 within 0.01 LU")
    func dynamicMembers() throws {
        let a = LoudnessMeterTests.dynamicGroove(rate: 48_000)
        var b = LoudnessMeterTests.dynamicGroove(rate: 44_100)
        b.samples = b.samples.map { $0 * 0.2 }   // −14 dB
        let quietTail = LoudnessMeterTests.tone([(25, -38)], rate: 32_000)
        let album = try #require(LoudnessHistogram.integratedLoudness(of: [a, b, quietTail].map(Self.histogram)))
        let reference = try LoudnessReference.albumLoudness([a, b, quietTail])
        #expect(abs(album - reference) < 0.01, "album \(album) LUFS, libebur128 \(reference) LUFS")
    }

    @Test("One track's histogram gives its own integrated loudness")
    func singleTrack() throws {
        let groove = LoudnessMeterTests.dynamicGroove(rate: 44_100)
        let result = try LoudnessMeterTests.measure(groove)
        let histogram = try #require(result.histogram)
        let own = try #require(LoudnessHistogram.integratedLoudness(of: [histogram]))
        #expect(abs(own - result.integratedLUFS!) < 0.01)
    }

    @Test("Silence has no histogram, and an album of none has no loudness")
    func silence() throws {
        #expect(try LoudnessMeterTests.measure(.silence(duration: 3, channels: 2)).histogram == nil)
        #expect(LoudnessHistogram.integratedLoudness(of: []) == nil)
    }

    @Test("The stored form reads back equal; another version or a damaged one is rejected")
    func storedForm() throws {
        let histogram = try Self.histogram(LoudnessMeterTests.dynamicGroove(rate: 48_000))
        let data = histogram.encoded()
        #expect(try LoudnessHistogram(encoded: data) == histogram)
        #expect(data.count == 3 + 14 * histogram.bins.count && data.count < 14_003)
        var future = data
        future[0] = 2
        #expect(throws: LoudnessHistogramError.unknownVersion(2)) { try LoudnessHistogram(encoded: future) }
        #expect(throws: LoudnessHistogramError.damaged) { try LoudnessHistogram(encoded: data.dropLast()) }
        #expect(throws: LoudnessHistogramError.unknownVersion(nil)) { try LoudnessHistogram(encoded: Data()) }
    }
}
