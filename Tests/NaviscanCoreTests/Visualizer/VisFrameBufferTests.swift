import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("VisFrameBuffer file")
struct VisFrameBufferTests {
    /// Deterministic pseudo-random frames in [0, 1], with exact 0 and 1 included.
    static func sampleFrames(count: Int, bands: Int) -> [[Float]] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<count).map { i in
            (0..<bands).map { b in
                if (i + b) % 17 == 0 { return 0 }
                if (i + b) % 19 == 0 { return 1 }
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Float(state >> 40) / Float(1 << 24)
            }
        }
    }

    func write(_ frames: [[Float]], config: VisualizerConfig, to path: String, duration: Double) throws {
        let writer = try VisFrameWriter(path: path, config: config)
        for frame in frames { try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) } }
        try writer.finish(duration: duration, sourceSampleRate: 48_000, sourceChannels: 2)
    }

    @Test("Writer → reader round trip", arguments: VisSampleEncoding.allCases)
    func roundTrip(encoding: VisSampleEncoding) throws {
        let scratch = try ScratchDirectory()
        var config = VisualizerConfig()
        config.encoding = encoding
        config.bandCount = 37
        config.fps = 25
        let frames = Self.sampleFrames(count: 1_001, bands: 37)
        let path = scratch.file("t.vis")
        try write(frames, config: config, to: path, duration: 40.02)

        let buffer = try VisFrameBuffer(path: path)
        #expect(buffer.frameCount == 1_001)
        #expect(buffer.bandCount == 37)
        #expect(buffer.fps == 25)
        #expect(buffer.duration == 40.02)
        #expect(buffer.header.sourceSampleRate == 48_000)
        #expect(buffer.header.encoding == encoding)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(size == 128 + 1_001 * 37 * encoding.bytesPerValue)

        let tolerance: Float = switch encoding {
        case .float32: 0
        case .float16: 1.0 / 2048        // 11-bit significand, values ≤ 1
        case .uint8: 0.5 / 255 + 1e-6
        }
        var out = [Float](repeating: -1, count: 37)
        for (i, frame) in frames.enumerated() {
            buffer.copyFrame(at: i, into: &out)
            for b in 0..<37 { #expect(abs(out[b] - frame[b]) <= tolerance) }
            // 0 and 1 are exact in every encoding.
            for b in 0..<37 where frame[b] == 0 || frame[b] == 1 { #expect(out[b] == frame[b]) }
        }
        // No temporary file is left beside the output.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["t.vis"])
    }

    @Test("frameIndex(at:) picks the frame centred nearest the time, clamped")
    func frameIndex() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("t.vis")
        try write(Self.sampleFrames(count: 300, bands: 64), config: VisualizerConfig(), to: path, duration: 10)
        let buffer = try VisFrameBuffer(path: path)
        #expect(buffer.frameIndex(at: 0) == 0)
        #expect(buffer.frameIndex(at: 1.0) == 30)
        #expect(buffer.frameIndex(at: 1.0 + 0.49 / 30) == 30)
        #expect(buffer.frameIndex(at: 1.0 + 0.51 / 30) == 31)
        #expect(buffer.frameIndex(at: -3) == 0)
        #expect(buffer.frameIndex(at: 999) == 299)
        #expect(buffer.frameIndex(at: .nan) == 0)
    }

    @Test("Bad files are rejected with a clear error")
    func rejectsBadFiles() throws {
        let scratch = try ScratchDirectory()
        let good = scratch.file("good.vis")
        try write(Self.sampleFrames(count: 10, bands: 64), config: VisualizerConfig(), to: good, duration: 0.333)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: good)))

        func variant(_ name: String, _ change: (inout [UInt8]) -> Void) throws -> String {
            var copy = bytes
            change(&copy)
            let path = scratch.file(name)
            try Data(copy).write(to: URL(fileURLWithPath: path))
            return path
        }
        let badMagic = try variant("magic.vis") { $0[0] = 0x58 }
        #expect(throws: VisFrameError.notAFrameFile) { try VisFrameBuffer(path: badMagic) }

        let future = try variant("future.vis") { $0[8] = 2 }
        #expect(throws: VisFrameError.unsupportedVersion(2)) { try VisFrameBuffer(path: future) }

        let flipped = try variant("flipped.vis") { $0[16] ^= 0x01 }   // fps byte changed, checksum not
        #expect(throws: VisFrameError.corruptHeader("header checksum mismatch")) { try VisFrameBuffer(path: flipped) }

        let short = try variant("short.vis") { $0.removeLast(100) }
        #expect(throws: VisFrameError.truncated(expectedBytes: bytes.count, actualBytes: bytes.count - 100)) {
            try VisFrameBuffer(path: short)
        }
        let headerOnly = try variant("header.vis") { $0.removeLast($0.count - 60) }
        #expect(throws: VisFrameError.truncated(expectedBytes: 128, actualBytes: 60)) { try VisFrameBuffer(path: headerOnly) }

        let empty = try variant("empty.vis") { $0.removeAll() }
        #expect(throws: VisFrameError.self) { try VisFrameBuffer(path: empty) }
        #expect(throws: VisFrameError.self) { try VisFrameBuffer(path: scratch.file("missing.vis")) }
    }

    @Test("A failed write leaves the previous file intact and no temporary behind")
    func atomicReplace() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("track.vis")
        try write(Self.sampleFrames(count: 5, bands: 64), config: VisualizerConfig(), to: path, duration: 0.16)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            // A writer dropped before finish() (an analysis that failed part-way).
            let writer = try VisFrameWriter(path: path, config: VisualizerConfig())
            let frame = [Float](repeating: 0.5, count: 64)
            try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["track.vis"])
    }
}
