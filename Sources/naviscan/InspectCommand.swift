import ArgumentParser
import Foundation
import NaviscanCore

/// `naviscan inspect OUT.vis` / `OUT.dat`: the header of a frame or waveform file and a text
/// rendering of its contents.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a VisFrameBuffer (.vis) or waveform (.dat) file's header and draw it as text."
    )

    @Argument(help: "A .vis or .dat file written by naviscan (a .dat's .rms sidecar is read when beside it).")
    var file: String

    @Option(help: "Rows of the text spectrogram (0 for none); each row is one moment of the track.")
    var rows: Int = 16

    func run() throws {
        if file.hasSuffix(".dat") { return try drawWaveform() }
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

    /// One row per stretch of the track: the peak as a bar, the RMS inside it as `=`.
    private func drawWaveform() throws {
        let sidecar = String(file.dropLast(4)) + ".rms"
        let waveform: WaveformData
        do {
            waveform = try WaveformFile.read(datPath: file, rmsPath: FileManager.default.fileExists(atPath: sidecar) ? sidecar : nil)
        } catch {
            FileHandle.standardError.write(Data("naviscan: \(file): \(error)\n".utf8))
            throw ExitCode(1)
        }
        print("\(file): audiowaveform .dat v2, \(waveform.pointCount) points × \(waveform.lanes) lane(s), "
            + "\(waveform.samplesPerPoint) samples per point at \(waveform.sampleRate) Hz, \(formatDuration(waveform.duration))"
            + (waveform.rms.isEmpty ? ", no RMS sidecar" : ", RMS from \(sidecar)"))
        guard rows > 0, waveform.pointCount > 0 else { return }
        let width = 60
        let (peak, rms) = waveform.resampled(bins: min(rows, waveform.pointCount))
        for (row, value) in peak.enumerated() {
            let bar = Int((value * Double(width)).rounded())
            let inner = waveform.rms.isEmpty ? 0 : min(bar, Int((rms[row] * Double(width)).rounded()))
            let text = String(repeating: "=", count: inner) + String(repeating: "#", count: bar - inner)
                + String(repeating: " ", count: width - bar)
            let seconds = waveform.duration * Double(row) / Double(peak.count)
            print(String(format: "%8.2fs |", seconds) + text + String(format: "| %.2f", value))
        }
    }
}
