import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Seek-bar waveform (audiowaveform .dat v2 and its RMS sidecar)")
struct WaveformTests {
    /// Every decoded sample of `path`, interleaved, by an independent read of the file.
    static func decodeAll(_ path: String) throws -> (samples: [Float], channels: Int, rate: Int) {
        let decoder = try AudioDecoderFactory.open(path: path)
        let channels = decoder.info.channels
        var all: [Float] = []
        let block = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * channels)
        defer { block.deallocate() }
        while true {
            let n = try decoder.read(into: block, maxFrames: 4096)
            if n == 0 { break }
            all.append(contentsOf: UnsafeBufferPointer(start: block, count: n * channels))
        }
        return (all, channels, decoder.info.sampleRate)
    }

    /// The reference definition: for each slot of `spp` frames, min and max of the channels' mean,
    /// each stored as round(x × 127).
    static func referenceDat8(_ samples: [Float], channels: Int, spp: Int) -> [UInt8] {
        let frames = samples.count / channels
        var out: [UInt8] = []
        for start in stride(from: 0, to: frames, by: spp) {
            var low = Float.infinity, high = -Float.infinity
            for f in start..<min(frames, start + spp) {
                var sum: Float = 0
                for c in 0..<channels { sum += samples[f * channels + c] }
                let v = sum / Float(channels)
                low = min(low, v)
                high = max(high, v)
            }
            out.append(UInt8(bitPattern: Int8(max(-128, min(127, Int((low * 127).rounded()))))))
            out.append(UInt8(bitPattern: Int8(max(-128, min(127, Int((high * 127).rounded()))))))
        }
        return out
    }

    static func analyse(_ path: String, _ waveform: WaveformConfig = WaveformConfig()) throws -> WaveformData {
        var config = ProfileConfig()
        config.waveform = waveform
        return try #require(try TrackAnalyzer(options: AnalysisOptions(profile: config), logger: testLogger).analyze(path: path).waveform)
    }

    @Test("The default .dat (50 points/s, 8-bit, mono mix) equals min/max computed directly from the decoded samples", arguments: ["flac", "mp3"])
    func matchesReference(kind: String) throws {
        let scratch = try ScratchDirectory()
        let path: String
        if kind == "flac" {
            path = scratch.file("sweep.flac")
            var signal = TestSignal.sweep(from: 60, to: 6000, dBFS: -3, duration: 7.3, channels: 2)
            for k in stride(from: 1, to: signal.samples.count, by: 2) { signal.samples[k] *= 0.3 }   // channels differ
            try AudioFileWriter.write(signal, to: path, format: .flac16)
        } else {
            path = FixturePaths.fixture("mp3/sine_440_660_2s.mp3")   // gapless-trimmed by the decoder
        }
        let decoded = try Self.decodeAll(path)
        let waveform = try Self.analyse(path)
        let spp = decoded.rate / 50
        #expect(waveform.samplesPerPoint == spp && waveform.lanes == 1)
        let bytes = WaveformFile.datBytes(waveform, bits: 8)
        let header = bytes.prefix(24).withUnsafeBytes { raw in (0..<6).map { raw.loadUnaligned(fromByteOffset: 4 * $0, as: Int32.self).littleEndian } }
        let frames = decoded.samples.count / decoded.channels
        #expect(header == [2, 1, Int32(decoded.rate), Int32(spp), Int32((frames + spp - 1) / spp), 1])
        #expect(Array(bytes.dropFirst(24)) == Self.referenceDat8(decoded.samples, channels: decoded.channels, spp: spp))
    }

    @Test("Per channel at 16 bits: each lane's own peaks, and the RMS of a sine is its amplitude over √2")
    func perChannel16() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("two.wav")
        var signal = TestSignal.sine(frequency: 441, dBFS: -6, duration: 3, sampleRate: 44_100, channels: 2)
        for k in stride(from: 1, to: signal.samples.count, by: 2) { signal.samples[k] *= 0.25 }
        try AudioFileWriter.write(signal, to: path, format: .wavFloat)
        var config = WaveformConfig()
        config.perChannel = true
        config.bits = 16
        config.pointsPerSecond = 20
        let waveform = try Self.analyse(path, config)
        #expect(waveform.lanes == 2 && waveform.pointCount == 60)
        let dat = scratch.file("two.dat"), rms = scratch.file("two.rms")
        try WaveformFile.write(waveform, bits: 16, datPath: dat, rmsPath: rms, durability: .immediate)
        let back = try WaveformFile.read(datPath: dat, rmsPath: rms)
        let amplitude = Float(TestSignal.amplitude(dBFS: -6)), sineRMS = amplitude / Float(2).squareRoot()
        for point in 0..<back.pointCount {
            let left = 2 * point, right = 2 * point + 1
            let leftMax: Float = back.maxima[left], leftMin: Float = back.minima[left], rightMax: Float = back.maxima[right]
            #expect(abs(leftMax - amplitude) < 0.002 && abs(leftMin + amplitude) < 0.002)
            #expect(abs(rightMax - amplitude / 4) < 0.002)
            #expect(abs(back.rms[left] - sineRMS) < 0.002)
        }
    }

    @Test("Resampled to N bins: a loud first half and a silent second half")
    func resampled() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("half.flac")
        try AudioFileWriter.write(TestSignal.sine(frequency: 500, dBFS: -6, duration: 4).appending(.silence(duration: 4)), to: path, format: .flac16)
        let waveform = try Self.analyse(path)
        for bins in [8, 400, 4096] {
            let (peak, rms) = waveform.resampled(bins: bins)
            #expect(peak.count == bins && rms.count == bins)
            #expect(peak.allSatisfy { (0...1).contains($0) } && rms.allSatisfy { (0...1).contains($0) })
            #expect(abs(peak[0] - 0.5) < 0.01 && peak[bins - 1] == 0)
            #expect(abs(rms[0] - 0.5 / 2.squareRoot()) < 0.01 && rms[bins - 1] == 0)
        }
    }

    @Test("Readers reject another version, a short file, and a sidecar that does not match")
    func rejects() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("t.wav")
        try AudioFileWriter.write(.sine(frequency: 300, duration: 1), to: path, format: .wav16)
        let waveform = try Self.analyse(path)
        var dat = WaveformFile.datBytes(waveform, bits: 8)
        let file = scratch.file("t.dat")
        func reads(_ bytes: [UInt8], rms: String? = nil) -> Bool {
            (try? Data(bytes).write(to: URL(fileURLWithPath: file))) != nil && (try? WaveformFile.read(datPath: file, rmsPath: rms)) != nil
        }
        #expect(reads(dat))
        #expect(!reads(Array(dat.dropLast())))
        dat[0] = 3
        #expect(!reads(dat))
        dat[0] = 2
        var other = waveform
        other.samplesPerPoint += 1
        let rms = scratch.file("t.rms")
        try Data(WaveformFile.rmsBytes(other, bits: 8)).write(to: URL(fileURLWithPath: rms))
        #expect(!reads(dat, rms: rms))
    }
}
