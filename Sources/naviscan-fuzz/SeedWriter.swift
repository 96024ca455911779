import Foundation
import Logging
import NaviscanCore
import NaviscanTestSupport

/// Small valid files of every kind the targets read, for the seed corpus (scripts/ci/fuzz/make-corpus.sh
/// adds the committed MP3 fixtures and the target bytes). Short and low-rate so each run is quick.
enum SeedWriter {
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tone = TestSignal.sine(frequency: 440, duration: 0.3, sampleRate: 8000)
        let stereo = TestSignal.sine(frequency: 440, duration: 0.3, sampleRate: 22_050, channels: 2)
        let formats: [(AudioFileWriter.Format, TestSignal)] = [
            (.wav16, tone), (.wav24, stereo), (.wavFloat, stereo), (.flac16, tone), (.flac24, stereo), (.aiff16, tone),
            (.oggVorbis, stereo), (.opus, .sine(frequency: 440, duration: 0.3, sampleRate: 48_000)),
        ]
        for (format, signal) in formats {
            try AudioFileWriter.write(signal, to: "\(directory)/seed-\(format).\(format.fileExtension)", format: format)
        }
        for encoding in VisSampleEncoding.allCases {
            var config = VisualizerConfig()
            config.encoding = encoding
            config.bandCount = 8
            let writer = try VisFrameWriter(path: "\(directory)/seed-\(encoding.name).vis", config: config)
            for i in 0..<9 {
                let frame = (0..<8).map { Float((i + $0) % 5) / 4 }
                try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) }
            }
            try writer.finish(duration: 0.3, sourceSampleRate: 8000, sourceChannels: 1)
        }
        let config = ProfileConfig()
        let analysis = try TrackAnalyzer(options: AnalysisOptions(profile: config), logger: Logger(label: "seeds"))
            .analyze(path: "\(directory)/seed-wav16.wav")
        try TrackProfile(relativePath: "seed.wav", analysis: analysis, config: config).jsonData()
            .write(to: URL(fileURLWithPath: "\(directory)/seed-profile.json"))
    }
}
