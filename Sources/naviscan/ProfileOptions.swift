import ArgumentParser
import NaviscanCore

/// The DJ-profile parameters a user can set, shared by the commands that compute profiles.
struct ProfileOptions: ParsableArguments {
    @Option(name: .customLong("reference-lufs"), help: "Loudness the gain targets: gain_db = reference − lufs (ReplayGain 2.0: −18).")
    var referenceLUFS: Double = -18

    @Option(name: .customLong("silence-threshold"), help: "Silence threshold in dBFS (sample peak across channels).")
    var silenceThreshold: Double = -60

    @Option(name: .customLong("bpm-range"), help: "Range reported tempi lie in, as MIN-MAX BPM.")
    var bpmRange: String = "60-200"

    @Flag(name: .customLong("true-peak"), help: "Also measure the true peak (dBTP); slower.")
    var truePeak = false

    func makeConfig() throws -> ProfileConfig {
        var config = ProfileConfig()
        guard referenceLUFS.isFinite, (-70...0).contains(referenceLUFS) else {
            throw ValidationError("--reference-lufs must be between -70 and 0, got \(referenceLUFS)")
        }
        config.referenceLUFS = referenceLUFS
        guard silenceThreshold.isFinite, (-120 ... -10).contains(silenceThreshold) else {
            throw ValidationError("--silence-threshold must be between -120 and -10 dBFS, got \(silenceThreshold)")
        }
        config.silence.thresholdDB = silenceThreshold
        let parts = bpmRange.split(separator: "-").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, parts[0] >= 20, parts[1] <= 400, parts[1] >= parts[0] * 2 else {
            throw ValidationError("--bpm-range must be MIN-MAX with 20 ≤ MIN, MAX ≤ 400 and MAX ≥ 2 × MIN (one full octave), got '\(bpmRange)'")
        }
        config.tempo.minBPM = parts[0]
        config.tempo.maxBPM = parts[1]
        config.loudness.truePeak = truePeak
        return config
    }

    func validate() throws { _ = try makeConfig() }
}
