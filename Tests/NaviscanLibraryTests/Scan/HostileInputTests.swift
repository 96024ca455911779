import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanTestSupport
import Testing

@Suite("The executable on damaged and hostile input", .serialized)
struct HostileInputTests {
    func validVis(in directory: String) throws -> String {
        let path = directory + "/t.vis"
        let writer = try VisFrameWriter(path: path, config: VisualizerConfig())
        let frame = (0..<64).map { Float($0) / 63 }
        for _ in 0..<60 { try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) } }
        try writer.finish(duration: 2, sourceSampleRate: 44_100, sourceChannels: 2)
        return path
    }

    @Test("inspect on the minimised crashing headers and payloads: exit 1 with a message, never a trap")
    func inspectHostileFiles() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-inspect")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var cases: [(String, (String) throws -> Void)] = VisFileSurgery.hostileHeaders.map { hostile in
            (hostile.name, { try VisFileSurgery.setHeaderBytes($0, offset: hostile.offset, hostile.bytes) })
        }
        for value in [Float.nan, .infinity, -1, 1e20] {
            cases.append(("payload \(value)", { try VisFileSurgery.setPayloadFloat($0, index: 64 * 30 + 5, value) }))
        }
        for (name, damage) in cases {
            let path = try validVis(in: scratch)
            try damage(path)
            let result = try NaviscanProcess.run(["inspect", path])
            #expect(result.status == 1, "\(name): exit \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(path) && result.stderr.contains("re-run the analysis"), "\(name): \(result.stderr)")
        }
        let healthy = try validVis(in: scratch)
        #expect(try NaviscanProcess.run(["inspect", healthy]).status == 0)
    }

    @Test("analyze and inspect on a FIFO return at once with a message naming it")
    func fifo() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-fifo")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let fifo = scratch + "/song.mp3"
        #expect(mkfifo(fifo, 0o600) == 0)
        for arguments in [["analyze", fifo], ["analyze", fifo, "--dj"], ["inspect", fifo]] {
            let (process, _, err) = try NaviscanProcess.start(arguments)
            // A watchdog, not a timing assertion: without it a blocked open would hang the suite.
            let watchdog = DispatchWorkItem { if process.isRunning { process.interrupt() } }
            DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            watchdog.cancel()
            #expect(process.terminationReason == .exit && process.terminationStatus == 1, "\(arguments): \(stderr)")
            #expect(stderr.contains(fifo) && stderr.contains("FIFO"), "\(stderr)")
        }
    }

    @Test("analyze --dj: a 3,000 Hz mono WAV gets a sane loudness, a float WAV with NaN or Inf is refused naming the file")
    func hostileAudio() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-hostile-audio")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let low = scratch + "/m.wav"
        try AudioFileWriter.write(.sine(frequency: 300, dBFS: -12, duration: 5, sampleRate: 3000), to: low, format: .wav16)
        let result = try NaviscanProcess.run(["analyze", low, "--dj", "--true-peak"])
        #expect(result.status == 0, "\(result.stderr)")
        let profile = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let lufs = try #require(profile["lufs"] as? Double)
        #expect(lufs < 0 && lufs > -20, "\(lufs)")
        #expect((profile["gain_db"] as? Double ?? -999) > -60)
        #expect(profile["loudness_note"] is String)
        for value in [Float.nan, .infinity] {
            var signal = TestSignal.sine(frequency: 440, dBFS: -12, duration: 3)
            signal.samples[1000] = value
            let path = scratch + "/float \(value).wav"
            try AudioFileWriter.write(signal, to: path, format: .wavFloat)
            let vis = scratch + "/out.vis"
            let refused = try NaviscanProcess.run(["analyze", path, "--dj", "--true-peak", "--vis", vis])
            #expect(refused.status == 1)
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr.contains(path) && refused.stderr.contains("sample 1000"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: vis))
        }
    }

    @Test("Every number in every JSON a scan writes is finite and every profile is plausible")
    func scanOutputsAreFinite() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-json-walk")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = scratch + "/lib"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        try AudioFileWriter.write(.sine(frequency: 300, duration: 4, sampleRate: 2000), to: library + "/low.wav", format: .wav16)
        try AudioFileWriter.write(.sine(frequency: 440, dBFS: 12, duration: 4), to: library + "/hot.wav", format: .wavFloat)
        try AudioFileWriter.write(.silence(duration: 2), to: library + "/silent.wav", format: .wav16)
        try AudioFileWriter.write(.sine(frequency: 440, duration: 0.2), to: library + "/short.wav", format: .wav16)
        var broken = TestSignal.sine(frequency: 440, duration: 2)
        broken.samples[10] = .infinity
        try AudioFileWriter.write(broken, to: library + "/inf.wav", format: .wavFloat)
        let result = try NaviscanProcess.run([library, "--out", scratch + "/out", "--json", "--quiet"])
        #expect(result.status == 1)   // inf.wav failed, and says so
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)))
        #expect(JSONNumbers.nonFinite(in: summary).isEmpty)
        #expect(result.stdout.contains("inf.wav"))
        let profiles = FileManager.default.enumerator(atPath: scratch + "/out/profiles")!.compactMap { $0 as? String }.filter { $0.hasSuffix(".json") }
        #expect(profiles.count == 4)
        for name in profiles {
            let data = try Data(contentsOf: URL(fileURLWithPath: scratch + "/out/profiles/" + name))
            #expect(JSONNumbers.nonFinite(in: try JSONSerialization.jsonObject(with: data)).isEmpty)
            let profile = try StoredProfile.read(data)
            if let lufs = profile.lufs, lufs > 0 { #expect(profile.loudnessNote != nil) }
        }
    }

    @Test("A folder symlink to /proc/self or outside the library is not followed (listed, not walked); --follow-external-links follows the outside one")
    func symlinksStayInside() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-links")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = scratch + "/lib", elsewhere = scratch + "/elsewhere"
        for dir in [library + "/Album", elsewhere] { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: library + "/Album/a.wav", format: .wav16)
        try AudioFileWriter.write(.sine(frequency: 550, duration: 1), to: elsewhere + "/b.wav", format: .wav16)
        try FileManager.default.createSymbolicLink(atPath: library + "/proc", withDestinationPath: "/proc/self")
        try FileManager.default.createSymbolicLink(atPath: library + "/Elsewhere", withDestinationPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: library + "/Same Album", withDestinationPath: library + "/Album")
        let started = Date()
        let run = try NaviscanProcess.run([library, "--out", scratch + "/out", "--json", "--quiet", "--dj"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 60)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["total"] as? Int == 1)
        #expect(Set(summary["external_links"] as? [String] ?? []) == ["proc", "Elsewhere"])
        #expect(summary["symlink_loops"] as? Int == 1)
        let text = try NaviscanProcess.run([library, "--out", scratch + "/out2", "--dj"])
        #expect(text.stdout.contains("--follow-external-links") || text.stderr.contains("--follow-external-links"), "\(text.stdout)\(text.stderr)")

        try FileManager.default.removeItem(atPath: library + "/proc")
        let followed = try NaviscanProcess.run([library, "--out", scratch + "/out", "--json", "--quiet", "--dj", "--follow-external-links"])
        let second = try #require(try JSONSerialization.jsonObject(with: Data(followed.stdout.utf8)) as? [String: Any])
        #expect(second["total"] as? Int == 2 && second["analysed"] as? Int == 1, "\(followed.stdout)")
        #expect((second["external_links"] as? [String])?.isEmpty == true)
    }

    @Test("analyze and a library scan over float files of 1e17/1e30/NaN/Inf and 0–2 Hz headers: clear errors, no signal, the good file analysed")
    func hostileFilesThroughTheExecutable() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-hostile-files")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let hostile = FixturePaths.hostile("float-") + FixturePaths.hostile("rate-")
        #expect(hostile.count >= 15)
        for file in FixturePaths.hostile("float-") {
            let vis = scratch + "/out.vis"
            let run = try NaviscanProcess.run(["analyze", file, "--dj", "--vis", vis])
            #expect(run.status == 1, "\(file): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(file), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: vis))
        }
        let library = scratch + "/lib"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        for file in hostile { try FileManager.default.copyItem(atPath: file, toPath: library + "/" + URL(fileURLWithPath: file).lastPathComponent) }
        try AudioFileWriter.write(.sine(frequency: 440, duration: 2), to: library + "/good.wav", format: .wav16)
        let started = Date()
        let run = try NaviscanProcess.run([library, "--out", scratch + "/out", "--json", "--quiet"])
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(run.status == 1, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(JSONNumbers.nonFinite(in: summary).isEmpty)
        let analysable = hostile.filter { !$0.hasSuffix(".caf") }.count + 1   // CAF is not a library extension
        #expect(summary["total"] as? Int == analysable)
        #expect(summary["analysed"] as? Int == 1 && summary["failed"] as? Int == analysable - 1, "\(run.stdout)")
    }
}
