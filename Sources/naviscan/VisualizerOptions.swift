import ArgumentParser
import NaviscanCore

/// The visualizer parameters a user can set, shared by the commands that write frames.
struct VisualizerOptions: ParsableArguments {
    @Option(help: "Frames per second of audio.")
    var fps: Double = 30

    @Option(help: "Number of log-spaced frequency bands.")
    var bands: Int = 64

    @Option(name: .customLong("min-hz"), help: "Lower edge of the lowest band, in Hz.")
    var minHz: Double = 40

    @Option(name: .customLong("max-hz"), help: "Upper edge of the highest band, in Hz.")
    var maxHz: Double = 16_000

    @Option(help: "Stored value type: f32, f16 or u8.")
    var encoding: String = "f32"

    func makeConfig() throws -> VisualizerConfig {
        var config = VisualizerConfig()
        config.fps = fps
        config.bandCount = bands
        config.minHz = minHz
        config.maxHz = maxHz
        guard let enc = VisSampleEncoding(name: encoding) else {
            throw ValidationError("--encoding must be f32, f16 or u8, not '\(encoding)'")
        }
        config.encoding = enc
        do { try config.validate() } catch { throw ValidationError("\(error)") }
        return config
    }

    func validate() throws { _ = try makeConfig() }
}
