import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport

let libraryTestLogger = Logger(label: "naviscan-library-tests")

/// A generated library: nested folders, Unicode and space-laden names, a symlink loop, a dangling
/// link, every bad-file kind, mixed formats and rates.
struct LibraryFixture {
    let root: String
    let good: [String]
    let bad: [String]
    let unsupported: [String]

    static func make(in directory: String, trackSeconds: Double = 3, extraTracks: Int = 0) throws -> LibraryFixture {
        let fm = FileManager.default
        let root = directory + "/Music"
        for dir in ["Artist A/Album 1", "Ártist Ø/Ålbum 2 (Live)", "Various/Disc 1/CD1", ".hidden"] {
            try fm.createDirectory(atPath: root + "/" + dir, withIntermediateDirectories: true)
        }
        let groove = TestSignal.silence(duration: 0.5, channels: 2).appending(
            TestSignal(sampleRate: 44_100, channels: 2, samples: TestSignal.drumGroove(bpm: 110, duration: trackSeconds).samples.flatMap { [$0, $0] }))
        var good: [String] = []
        func write(_ relative: String, _ signal: TestSignal, _ format: AudioFileWriter.Format) throws {
            try AudioFileWriter.write(signal, to: root + "/" + relative, format: format)
            good.append(relative)
        }
        try write("Artist A/Album 1/01 First Song.flac", groove, .flac16)
        try write("Artist A/Album 1/02 Ünïcödé 曲.wav", .sine(frequency: 440, dBFS: -12, duration: trackSeconds, sampleRate: 48_000, channels: 2), .wav24)
        try write("Ártist Ø/Ålbum 2 (Live)/track 3.ogg", .sweep(from: 100, to: 8000, duration: trackSeconds, channels: 2), .oggVorbis)
        try write("Ártist Ø/Ålbum 2 (Live)/track 4.opus", .sine(frequency: 220, duration: trackSeconds, sampleRate: 48_000), .opus)
        try write("Various/Disc 1/CD1/mono 8k.aiff", .sine(frequency: 300, duration: trackSeconds, sampleRate: 8000), .aiff16)
        try fm.copyItem(atPath: FixturePaths.fixture("mp3/sine_440_660_2s.mp3"), toPath: root + "/Various/Disc 1/gapless.mp3")
        good.append("Various/Disc 1/gapless.mp3")
        // The formats libavformat/libavcodec decode (tagged, see Fixtures/make-formats.sh).
        try fm.createDirectory(atPath: root + "/Other Formats", withIntermediateDirectories: true)
        for name in ["aac_itunsmpb.m4a", "alac.m4a", "wma.wma", "monkeys.ape", "wavpack.wv", "tta.tta", "opus.mka"] {
            try fm.copyItem(atPath: FixturePaths.fixture("formats/" + name), toPath: root + "/Other Formats/" + name)
            good.append("Other Formats/" + name)
        }
        for i in 0..<extraTracks {
            try write("Various/extra \(i).flac", groove, .flac16)
        }
        // Bad files: zero bytes, truncated, random bytes, unsupported codec, a dangling symlink.
        var bad: [String] = []
        for (name, fixture) in [("Various/empty.mp3", "broken/empty.mp3"), ("Various/cut off.mp3", "broken/truncated.mp3"),
                                ("Various/noise.flac", "broken/random_bytes.flac")] {
            try fm.copyItem(atPath: FixturePaths.fixture(fixture), toPath: root + "/" + name)
            bad.append(name)
        }
        try Data([0, 0, 0, 0x20] + Array("ftypM4A ".utf8) + [UInt8](repeating: 0, count: 64))
            .write(to: URL(fileURLWithPath: root + "/Various/disguised.mp3"))
        bad.append("Various/disguised.mp3")
        try fm.createSymbolicLink(atPath: root + "/Various/gone.flac", withDestinationPath: root + "/nowhere.flac")
        bad.append("Various/gone.flac")
        // Not audio naviscan decodes: counted as unsupported. Hidden folders and other files: ignored.
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/Artist A/Album 1/bonus.dsf"))
        try Data("cover".utf8).write(to: URL(fileURLWithPath: root + "/Artist A/Album 1/cover.jpg"))
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: root + "/.hidden/secret.wav", format: .wav16)
        // A symlink loop: Various/Disc 1/loop → Various.
        try fm.createSymbolicLink(atPath: root + "/Various/Disc 1/loop", withDestinationPath: root + "/Various")
        return LibraryFixture(root: root, good: good, bad: bad, unsupported: ["Artist A/Album 1/bonus.dsf"])
    }

    func scan(out: String? = nil, vis: VisualizerConfig? = VisualizerConfig(), profile: ProfileConfig? = ProfileConfig(),
              jobs: Int = 2, force: Bool = false) throws -> ScanSummary {
        let options = ScanOptions(library: root, output: out ?? root + "/.naviscan", visualizer: vis, profile: profile, jobs: jobs, force: force)
        return try LibraryScanner(options: options, logger: libraryTestLogger).run()
    }
}

/// Checks the output directory is complete and consistent: every ok row has its readable files, no
/// file without a row, no temporary files. Returns problems found.
/// `pendingProfiles`: after a run that stopped before its album pass, rows may hold a profile
/// whose file is still to write (no profile stamp); the profile must then be in the row.
func consistencyProblems(out: String, pendingProfiles: Bool = false) throws -> [String] {
    let layout = OutputLayout(root: out)
    let store = try LibraryStore(path: layout.databasePath)
    var problems: [String] = []
    var expected: Set<String> = []
    for record in try store.allTracks() where record.status == .ok {
        let vis = layout.visPath(key: record.key), profile = layout.profilePath(key: record.key)
        if record.visFingerprint != nil {
            expected.insert(vis)
            do { _ = try VisFrameBuffer(path: vis) } catch { problems.append("\(record.relativePath): vis \(error)") }
        }
        if record.profileFingerprint != nil {
            expected.insert(profile)
            let dat = layout.waveformPath(key: record.key), rms = layout.waveformRMSPath(key: record.key)
            expected.formUnion([dat, rms])
            do { _ = try WaveformFile.read(datPath: dat, rmsPath: rms) } catch { problems.append("\(record.relativePath): waveform \(error)") }
            if record.profileStamp == nil {
                if !pendingProfiles { problems.append("\(record.relativePath): profile file not written") }
                let json = try record.profileJSON.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                if json?["relative_path"] as? String != record.relativePath { problems.append("\(record.relativePath): no stored profile") }
                continue
            }
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: profile))
                let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                if json?["relative_path"] as? String != record.relativePath { problems.append("\(record.relativePath): profile names another track") }
            } catch { problems.append("\(record.relativePath): profile \(error)") }
        }
    }
    for top in Set(OutputLayout.trackOutputs.map { layout.root + "/" + $0.directory }) {
        let files = FileManager.default.enumerator(atPath: top)?.compactMap { $0 as? String } ?? []
        for file in files where [".vis", ".json", ".dat", ".rms"].contains(where: file.hasSuffix) || file.contains(".tmp-") {
            let path = top + "/" + file
            if file.contains(".tmp-") { problems.append("temporary file left: \(file)") }
            else if !expected.contains(path) { problems.append("file without a row: \(file)") }
        }
    }
    return problems
}
