import ArgumentParser
import Foundation
import NaviscanCore

/// `naviscan inspect OUT.vis`: the header of a frame file and a text rendering of its frames.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a VisFrameBuffer file's header and draw its frames as text."
    )

    @Argument(help: "A .vis file written by naviscan.")
    var file: String

    @Option(help: "Rows of the text spectrogram (0 for none); each row is one moment of the track.")
    var rows: Int = 16

    func run() throws {
        let buffer: VisFrameBuffer
        do { buffer = try VisFrameBuffer(path: file) } catch {
            FileHandle.standardError.write(Data("naviscan: \(file): \(error)\n".utf8))
            throw ExitCode(1)
        }
        let h = buffer.header
        print("\(file): VisFrameBuffer v\(h.version), \(h.frameCount) frames × \(h.bandCount) bands (\(h.encoding.name)), "
            + "\(h.fps) fps, \(formatDuration(h.duration)), bands \(Int(h.minHz))–\(Int(h.maxHz)) Hz log, "
            + "FFT \(h.fftSize) at \(h.analysisRate) Hz, source \(h.sourceSampleRate) Hz × \(h.sourceChannels) ch")
        guard rows > 0, buffer.frameCount > 0 else { return }
        // Each row: one frame, low bands on the left; the glyph ramp shows the value.
        let ramp = Array(" .:-=+*#%@")
        var frame = [Float](repeating: 0, count: buffer.bandCount)
        let step = max(1, buffer.frameCount / rows)
        for row in 0..<min(rows, buffer.frameCount) {
            let index = min(row * step, buffer.frameCount - 1)
            buffer.copyFrame(at: index, into: &frame)
            let text = String(frame.map { ramp[min(ramp.count - 1, Int($0 * Float(ramp.count - 1) + 0.5))] })
            print(String(format: "%8.2fs |", Double(index) / buffer.fps) + text + "|")
        }
    }
}
