import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("Frame file readers reject damaged files with a typed error")
struct VisFrameValidationTests {
    func validFile(in scratch: ScratchDirectory, encoding: VisSampleEncoding = .float32) throws -> String {
        var config = VisualizerConfig()
        config.encoding = encoding
        config.bandCount = 8
        let path = scratch.file("t.vis")
        let writer = try VisFrameWriter(path: path, config: config)
        let frame = [Float](repeating: 0.5, count: 8)
        for _ in 0..<30 { try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) } }
        try writer.finish(duration: 1, sourceSampleRate: 44_100, sourceChannels: 2)
        return path
    }

    @Test("Header fields with a valid checksum but impossible values", arguments: VisFileSurgery.hostileHeaders.map(\.name))
    func hostileHeader(name: String) throws {
        let scratch = try ScratchDirectory()
        let path = try validFile(in: scratch)
        let (_, offset, bytes) = VisFileSurgery.hostileHeaders.first { $0.name == name }!
        try VisFileSurgery.setHeaderBytes(path, offset: offset, bytes)
        for open in [{ _ = try VisFrameBuffer(path: path) }, { _ = try VisFrameFile(path: path) }] {
            #expect(throws: VisFrameError.self, "\(name)") { try open() }
        }
    }

    @Test("Stored values outside [0, 1] are found by both readers, with frame and band",
          arguments: [Float.nan, .infinity, -.infinity, -0.5, 1.0001, 1e20])
    func payloadValue(value: Float) throws {
        let scratch = try ScratchDirectory()
        let path = try validFile(in: scratch)
        try VisFileSurgery.setPayloadFloat(path, index: 8 * 17 + 3, value)
        #expect {
            _ = try VisFrameBuffer(path: path)
        } throws: { error in
            guard case .corruptPayload(let frame, let band, _)? = error as? VisFrameError else { return false }
            return frame == 17 && band == 3
        }
        let file = try VisFrameFile(path: path, chunkBytes: 64)   // several chunks
        #expect {
            try file.validatePayload()
        } throws: { error in
            guard case .corruptPayload(let frame, let band, _)? = error as? VisFrameError else { return false }
            return frame == 17 && band == 3
        }
    }

    @Test("−0, exact 0 and 1 are valid; float16 and uint8 files validate")
    func edgesAreValid() throws {
        let scratch = try ScratchDirectory()
        let path = try validFile(in: scratch)
        try VisFileSurgery.setPayloadFloat(path, index: 0, -0.0)
        try VisFileSurgery.setPayloadFloat(path, index: 1, 1)
        try VisFileSurgery.setPayloadFloat(path, index: 2, 0)
        _ = try VisFrameBuffer(path: path)
        try VisFrameFile(path: path).validatePayload()
        for encoding in [VisSampleEncoding.float16, .uint8] {
            let other = try ScratchDirectory()
            let file = try validFile(in: other, encoding: encoding)
            _ = try VisFrameBuffer(path: file)
            try VisFrameFile(path: file).validatePayload()
        }
    }

    @Test("A folder or a FIFO in place of a frame file is refused at once")
    func notARegularFile() throws {
        let scratch = try ScratchDirectory()
        let folder = scratch.file("folder.vis")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let fifo = scratch.file("fifo.vis")
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [folder, fifo] {
            #expect(throws: VisFrameError.notARegularFile(path: path)) { _ = try VisFrameBuffer(path: path) }
            #expect(throws: VisFrameError.notARegularFile(path: path)) { _ = try VisFrameFile(path: path) }
        }
    }

    @Test("The chunked reader gives the mapped reader's values, chunk boundaries included")
    func chunkedMatchesMapped() throws {
        let scratch = try ScratchDirectory()
        var config = VisualizerConfig()
        config.bandCount = 5
        let path = scratch.file("c.vis")
        let writer = try VisFrameWriter(path: path, config: config)
        for i in 0..<301 {
            let frame = (0..<5).map { Float((i * 5 + $0) % 97) / 96 }
            try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) }
        }
        try writer.finish(duration: 10.02, sourceSampleRate: 44_100, sourceChannels: 1)
        let mapped = try VisFrameBuffer(path: path)
        let chunked = try VisFrameFile(path: path, chunkBytes: 7 * 20)
        #expect(chunked.framesPerChunk == 7)
        var index = 0
        var expected = [Float](repeating: 0, count: 5)
        while index < chunked.frameCount {
            let read = try chunked.readFrames(from: index) { values in
                mapped.copyFrame(at: index, into: &expected)
                #expect(Array(values) == expected)
                index += 1
            }
            #expect(read > 0)
        }
        #expect(index == 301)
    }
}
