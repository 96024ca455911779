import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NaviscanCore
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// The self-hoster's command line, through the real executable: settings and their sources, the
/// store's recorded parameters, exit statuses for cron, plain errors, status/show, progress.
@Suite("naviscan's command line (the executable)", .serialized)
struct CommandLineTests {
    /// A scratch folder with a copy of the demo library and an environment that sees no config of the machine's.
    struct Scratch {
        let root: String
        let library: String
        var environment: [String: String] { ["HOME": root + "/home", "XDG_CONFIG_HOME": root + "/xdg", "NAVISCAN_FFTW_WISDOM": ""] }

        init() throws {
            root = try FixturePaths.makeTemporaryDirectory()
            library = root + "/Music"
            try FileManager.default.copyItem(atPath: FixturePaths.fixture("demo"), toPath: library)
        }

        func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
            try NaviscanProcess.run(arguments, environment: environment.merging(extra) { _, new in new })
        }

        func json(_ text: String) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test("Settings: flags over NAVISCAN_* over the config file over the defaults; `naviscan config` names each source")
    func precedence() throws {
        let s = try Scratch()
        defer { s.remove() }
        let file = s.root + "/naviscan.json"
        try #"{"library": "/srv/music", "jobs": 3, "encoding": "f16", "fps": 60, "serve": {"port": 9001}}"#
            .write(toFile: file, atomically: false, encoding: .utf8)
        let run = try s.run(["config", "--config", file, "--json"], environment: ["NAVISCAN_ENCODING": "u8", "NAVISCAN_SERVE_HOST": "0.0.0.0"])
        #expect(run.status == 0, "\(run.stderr)")
        let config = try s.json(run.stdout)
        func entry(_ key: String) -> (value: String, source: String) {
            let e = config[key] as? [String: Any] ?? [:]
            return (e["value"].map { "\($0)" } ?? "nil", e["source"] as? String ?? "")
        }
        #expect(entry("jobs").value == "3" && entry("jobs").source == "config file \(file)")
        #expect(entry("encoding").value == "u8" && entry("encoding").source == "environment NAVISCAN_ENCODING")
        #expect(entry("serve.host").value == "0.0.0.0")
        #expect(entry("serve.port").value == "9001" && entry("serve.port").source.hasPrefix("config file"))
        #expect(entry("reference-lufs").value == "-18" && entry("reference-lufs").source == "default")

        // The default file is found under XDG_CONFIG_HOME; a flag beats it and the environment.
        try FileManager.default.createDirectory(atPath: s.root + "/xdg/naviscan", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: file, toPath: s.root + "/xdg/naviscan/config.json")
        let scan = try s.run(["scan", s.library, "--dj", "--no-vis", "-q", "--json", "-j", "1", "--fps", "30"],
                             environment: ["NAVISCAN_JOBS": "2"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let recorded = try #require(try LibraryStore(path: OutputLayout(root: s.library + "/.naviscan").databasePath).analysisParameters()).values
        #expect(recorded["fps"] == .int(30) && recorded["encoding"] == .string("f16") && recorded["vis"] == .bool(false), "\(recorded)")
    }

    @Test("A bad setting is named where it came from: unknown key, wrong type, missing --config file, bad value")
    func badSettings() throws {
        let s = try Scratch()
        defer { s.remove() }
        let file = s.root + "/bad.json"
        try #"{"jbos": 3}"#.write(toFile: file, atomically: false, encoding: .utf8)
        let unknown = try s.run(["config", "--config", file])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown setting 'jbos'"), "\(unknown.stderr)")
        try #"{"jobs": "three"}"#.write(toFile: file, atomically: false, encoding: .utf8)
        let wrongType = try s.run(["config", "--config", file])
        #expect(wrongType.status == 2 && wrongType.stderr.contains("jobs") && wrongType.stderr.contains("whole number"), "\(wrongType.stderr)")
        let missing = try s.run(["config", "--config", s.root + "/none.json"])
        #expect(missing.status == 2 && missing.stderr.contains("does not exist"))
        let badValue = try s.run(["scan", s.library, "-q"], environment: ["NAVISCAN_REFERENCE_LUFS": "12"])
        #expect(badValue.status == 2 && badValue.stderr.contains("NAVISCAN_REFERENCE_LUFS"), "\(badValue.stderr)")
        let badBits = try s.run(["scan", s.library, "-q", "--waveform-bits", "12"])
        #expect(badBits.status == 2 && badBits.stderr.contains("--waveform-bits must be 8 or 16"), "\(badBits.stderr)")
        let badPPS = try s.run(["scan", s.library, "-q"], environment: ["NAVISCAN_WAVEFORM_PPS": "0"])
        #expect(badPPS.status == 2 && badPPS.stderr.contains("NAVISCAN_WAVEFORM_PPS"), "\(badPPS.stderr)")
        // Ranges come from the settings table, whichever source gives the value.
        let jobsFlag = try s.run(["scan", s.library, "-q", "-j", "0"])
        #expect(jobsFlag.status == 2 && jobsFlag.stderr.contains("--jobs must be between 1 and 256, got 0"), "\(jobsFlag.stderr)")
        let jobsVariable = try s.run(["scan", s.library, "-q"], environment: ["NAVISCAN_JOBS": "999"])
        #expect(jobsVariable.status == 2 && jobsVariable.stderr.contains("NAVISCAN_JOBS (environment) must be between 1 and 256, got 999"),
                "\(jobsVariable.stderr)")
        try #"{"reference-lufs": 5, "serve": {"port": 70000}}"#.write(toFile: file, atomically: false, encoding: .utf8)
        let lufsFile = try s.run(["scan", s.library, "-q", "--config", file])
        #expect(lufsFile.status == 2 && lufsFile.stderr.contains("'reference-lufs' in \(file) must be between -70 and 0 LUFS, got 5"),
                "\(lufsFile.stderr)")
        let portFlag = try s.run(["serve", "--data", s.root + "/data", "--port", "70000"])
        #expect(portFlag.status == 2 && portFlag.stderr.contains("--port must be between 0 and 65535, got 70000"), "\(portFlag.stderr)")
        #expect(!FileManager.default.fileExists(atPath: OutputLayout(root: s.library + "/.naviscan").databasePath))
    }

    @Test("The store records its parameters: a plain re-scan reuses them; a change says how many tracks it re-analyses")
    func recordedParameters() throws {
        let s = try Scratch()
        defer { s.remove() }
        let first = try s.run([s.library, "--reference-lufs", "-14", "--silence-threshold", "-50", "--encoding", "f16", "-q"])
        #expect(first.status == 0, "\(first.stderr)")
        let plain = try s.run([s.library, "--json", "-q"])
        #expect(try s.json(plain.stdout)["analysed"] as? Int == 0, "a plain re-scan went back to the defaults")
        let db = OutputLayout(root: s.library + "/.naviscan").databasePath
        let tracks = try LibraryStore(path: db).allTracks()
        #expect(tracks.count == 3)
        for track in tracks {
            let (lufs, gain) = (try #require(track.lufs), try #require(track.gainDB))
            #expect(abs(gain - (-14 - lufs)) < 0.01)
            let header = try VisFrameBuffer(path: OutputLayout(root: s.library + "/.naviscan").visPath(key: track.key)).header
            #expect(header.encoding.name == "f16")
        }
        let changed = try s.run([s.library, "--encoding", "u8"])
        #expect(changed.status == 0)
        #expect(changed.stderr.contains("parameters changed (encoding f16 -> u8): 3 tracks will be analysed"), "\(changed.stderr)")
        #expect(changed.stderr.contains("3 analysed"))
    }

    @Test("A --dj scan's summary names the folders it made, not vis/")
    func summaryNamesWhatIsThere() throws {
        let s = try Scratch()
        defer { s.remove() }
        let run = try s.run([s.library, "--dj"])
        #expect(run.status == 0, "\(run.stderr)")
        let results = try #require(run.stderr.split(separator: "\n").first { $0.hasPrefix("Results: ") }, "\(run.stderr)")
        #expect(results.hasSuffix("(naviscan.db, profiles/, waveforms/)"), "\(results)")
    }

    @Test("Analysers are remembered one by one: --vis alone keeps the nightly re-scan's DJ profiles current; --no-dj turns them off")
    func analysersRememberedSeparately() throws {
        let s = try Scratch()
        defer { s.remove() }
        let db = OutputLayout(root: s.library + "/.naviscan").databasePath
        #expect(try s.run([s.library, "-q"]).status == 0)
        let more = try s.run([s.library, "--vis", "--fps", "60", "-q", "--json"])
        #expect(more.status == 0, "\(more.stderr)")
        #expect(try s.json(more.stdout)["analysed"] as? Int == 3)
        let recorded = try #require(try LibraryStore(path: db).analysisParameters()).values
        #expect(recorded["vis"] == .bool(true) && recorded["dj"] == .bool(true), "\(recorded)")

        // The nightly plain re-scan after a file changed: its DJ profile follows the new audio.
        let track = s.library + "/groove_120bpm.mp3"
        try FileManager.default.removeItem(atPath: track)
        try AudioFileWriter.write(.sine(frequency: 440, dBFS: -26, duration: 3), to: s.library + "/groove_120bpm.wav", format: .wav16)
        let nightly = try s.run([s.library, "-q", "--json"])
        #expect(nightly.status == 0, "\(nightly.stderr)")
        #expect(try s.json(nightly.stdout)["analysed"] as? Int == 1)
        let changed = try #require(try LibraryStore(path: db).allTracks().first { $0.relativePath == "groove_120bpm.wav" })
        #expect(changed.profileJSON != nil && changed.visFingerprint != nil)
        #expect(abs(try #require(changed.lufs) - (-26 - 3.01)) < 1.5, "the profile is not the new audio's")
        let status = try s.run(["status", s.library])
        #expect(status.stdout.contains("remembered:  vis on, dj on"), "\(status.stdout)")

        // Off is explicit and remembered; both off is refused with both sources named.
        #expect(try s.run([s.library, "--no-dj", "-q"]).status == 0)
        #expect(try s.run(["status", s.library]).stdout.contains("remembered:  vis on, dj off"))
        let none = try s.run([s.library, "--no-vis", "-q"])
        #expect(none.status == 2 && none.stderr.contains("nothing to write") && none.stderr.contains("recorded in"), "\(none.stderr)")

        // A new library with one analyser named writes only that one, and its re-scans stay so.
        let other = s.root + "/Other"
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("demo"), toPath: other)
        #expect(try s.run([other, "--dj", "-q"]).status == 0)
        #expect(try s.run([other, "-q"]).status == 0)
        let tracks = try LibraryStore(path: OutputLayout(root: other + "/.naviscan").databasePath).allTracks()
        #expect(tracks.count == 3 && tracks.allSatisfy { $0.profileJSON != nil && $0.visFingerprint == nil })
    }

    @Test("Without /proc (a bare chroot, some containers) the binary says what to mount instead of running with no arguments or trapping")
    func withoutProc() throws {
        // A private mount namespace (a user namespace too when not root) with /proc unmounted.
        let flags = getuid() == 0 ? "-m" : "-rm"
        let run = try NaviscanProcess.run([flags, "--propagation", "private", "/bin/sh", "-c", "umount -l /proc && exec \"$0\" --version",
                                           NaviscanExecutable.path], program: "/usr/bin/unshare")
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("/proc is not mounted") && run.stderr.contains("mount -t proc proc /proc"), "\(run.stderr)")
        #expect(!run.stdout.contains(NaviscanVersion.version) && !run.stderr.contains("which library"))
    }

    @Test("Exit status for cron: failures known from an earlier run keep 0 under --fail-on new, not under any")
    func failOn() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let env = ["HOME": scratch + "/home", "XDG_CONFIG_HOME": scratch + "/xdg"]
        let first = try NaviscanProcess.run([library.root, "-q", "--json"], environment: env)
        #expect(first.status == 1)
        let again = try NaviscanProcess.run([library.root, "-q", "--json"], environment: env)
        #expect(again.status == 0, "\(again.stdout)")
        // Quiet and nothing new: nothing to say (cron mails nothing).
        let quiet = try NaviscanProcess.run([library.root, "-q"], environment: env)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let failures = (try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])?["failures"] as? [[String: Any]] ?? []
        #expect(failures.count == library.bad.count && failures.allSatisfy { $0["known"] as? Bool == true })
        #expect(try NaviscanProcess.run([library.root, "-q", "--fail-on", "any"], environment: env).status == 1)
        #expect(try NaviscanProcess.run([library.root, "-q"], environment: env.merging(["NAVISCAN_FAIL_ON": "any"]) { _, b in b }).status == 1)
        // A file that fails for the first time is new again.
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("broken/empty.mp3"), toPath: library.root + "/Various/new empty.mp3")
        let fresh = try NaviscanProcess.run([library.root, "-q"], environment: env)
        #expect(fresh.status == 1 && fresh.stderr.contains("new empty.mp3"), "\(fresh.stderr)")
        #expect(try NaviscanProcess.run([library.root, "-q", "--fail-on", "never"], environment: env).status == 0)
        #expect(try NaviscanProcess.run([library.root, "-q", "--fail-on", "sometimes"], environment: env).status == 2)
    }

    @Test("A mistyped command is named with a suggestion, not scanned as a library; help has examples in ASCII")
    func mistypedCommandAndHelp() throws {
        let s = try Scratch()
        defer { s.remove() }
        let typo = try s.run(["scna", "~/Music"])
        #expect(typo.status == 2 && typo.stderr.contains("unknown command 'scna' — did you mean scan?"), "\(typo.stderr)")
        #expect(try s.run(["stat"]).stderr.contains("did you mean status?"))
        #expect(try s.run(["sevre"]).stderr.contains("did you mean serve?"))
        for command in ["scan", "serve", "status", "show", "config", "analyze"] {
            let help = try s.run(["help", command])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Examples:") && help.stdout.contains("naviscan \(command)"), "help \(command)")
            #expect(!help.stdout.contains("\u{2212}"), "help \(command) has a Unicode minus")
        }
    }

    @Test("status counts and lists failures, pending and disk; show finds a track by its path")
    func statusAndShow() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let library = try LibraryFixture.make(in: scratch)
        let out = scratch + "/results"
        let env = ["HOME": scratch + "/home", "XDG_CONFIG_HOME": scratch + "/xdg"]
        _ = try NaviscanProcess.run([library.root, "-o", out, "-q"], environment: env)
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: library.root + "/Artist A/new.wav", format: .wav16)
        // A moved track is carried over by the next scan, not analysed: it is not pending (the planner's rule).
        let moved = library.good[1], movedTo = (library.good[1] as NSString).deletingLastPathComponent + "/renamed." + (library.good[1] as NSString).pathExtension
        try FileManager.default.moveItem(atPath: library.root + "/" + moved, toPath: library.root + "/" + movedTo)
        let status = try NaviscanProcess.run(["status", "--data", out, "--json"], environment: env)
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(report["analysed"] as? Int == library.good.count)
        #expect(report["pending"] as? Int == 1, "only new.wav: \(status.stdout)")
        #expect(report["unsupported"] as? Int == library.unsupported.count)
        #expect(report["library"] as? String == library.root)
        let disk = report["disk_bytes"] as? [String: Int] ?? [:]
        #expect((disk["vis"] ?? 0) > 0 && (disk["profiles"] ?? 0) > 0 && (disk["database"] ?? 0) > 0)
        let failures = report["failures"] as? [[String: Any]] ?? []
        #expect(failures.contains { $0["relative_path"] as? String == "Various/empty.mp3" && !($0["reason"] as? String ?? "").isEmpty })
        #expect((report["last_scan"] as? [String: Any])?["analysed"] as? Int == library.good.count)

        let track = library.good[0]
        let byAbsolute = try NaviscanProcess.run(["show", library.root + "/" + track, "-o", out, "--json"], environment: env)
        #expect(byAbsolute.status == 0, "\(byAbsolute.stderr)")
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(byAbsolute.stdout.utf8)) as? [String: Any])
        #expect(shown["relative_path"] as? String == track)
        #expect((shown["profile"] as? [String: Any])?["relative_path"] as? String == track)
        #expect(try APISchema().problems(of: Data(byAbsolute.stdout.utf8), as: "track") == [], "\(byAbsolute.stdout)")
        let byRelative = try NaviscanProcess.run(["show", track, "-o", out], environment: env)
        #expect(byRelative.status == 0 && byRelative.stdout.contains("loudness:"), "\(byRelative.stderr)")
        #expect(try NaviscanProcess.run(["show", "Artist A/new.wav", "-o", out], environment: env).status == 1)
        // The scan agrees: one analysed, one relinked.
        let scan = try NaviscanProcess.run([library.root, "-o", out, "--json"], environment: env)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any])
        #expect(summary["analysed"] as? Int == 1 && summary["relinked"] as? Int == 1, "\(scan.stdout)")
    }

    @Test("A file name that is not UTF-8 (Latin-1 bytes) is scanned with its tags, found by `show` from its own bytes on the command line, and listed by `tag --dry-run`")
    func nonUTF8Names() throws {
        let s = try Scratch()
        defer { s.remove() }
        let library = s.root + "/Latin"
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        try AudioFileWriter.write(.sine(frequency: 440, dBFS: -14, duration: 2), to: library + "/tmp.flac", format: .flac16,
                                  tags: [.album: "Dangerously in Love", .artist: "Band", .title: "Crazy"])
        let name = Array((library + "/Beyonc").utf8) + [0xE9] + Array(".flac".utf8) + [0]
        let renamed = (library + "/tmp.flac").withCString { from in
            name.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { rename(from, $0.baseAddress!) } }
        }
        try #require(renamed == 0)
        let out = s.root + "/out"
        let scan = try s.run([library, "-o", out, "-q"])
        #expect(scan.status == 0, "\(scan.stderr)")
        // The shell passes the name's own bytes, as a user's tab completion does.
        let show = try NaviscanProcess.run(["-c", #"exec "$0" show "$1/Beyonc$(printf '\351').flac" -o "$2" --json"#, NaviscanProcess.executable, library, out],
                                           environment: s.environment, program: "/bin/bash")
        #expect(show.status == 0, "\(show.stderr)")
        let shown = try s.json(show.stdout)
        #expect(shown["relative_path"] as? String == "Beyonc\u{F7E9}.flac")
        #expect(((shown["profile"] as? [String: Any])?["tags"] as? [String: Any])?["album"] as? String == "Dangerously in Love", "\(shown)")
        let tag = try s.run(["tag", library, "-o", out, "--dry-run", "--json"])
        #expect(tag.status == 0, "\(tag.stderr)")
        #expect(tag.stdout.contains("Beyonc\u{F7E9}.flac"), "\(tag.stdout)")
    }

    @Test("Plain errors: a port in use, an output under a file, a mistyped library for serve; serve precomputes with the store's parameters; a clean Ctrl-C logs no error")
    func plainErrorsAndServe() throws {
        let s = try Scratch()
        defer { s.remove() }
        #expect(try s.run([s.library, "-q", "--encoding", "u8"]).status == 0)
        let blocker = try ListeningSocket()
        let busy = try s.run(["serve", "--library", s.library, "--port", "\(blocker.port)"])
        #expect(busy.status == 2)
        #expect(busy.stderr.contains("port \(blocker.port) on 127.0.0.1 is already in use"), "\(busy.stderr)")
        #expect(!busy.stderr.contains("bind(descriptor"))
        let port = blocker.port
        blocker.close()

        // A mistyped library is refused by serve as by scan, and not created.
        let typo = s.library + "-typo"
        let (refused, _, refusal) = try NaviscanProcess.start(["serve", "--library", typo, "--port", "0"], environment: s.environment)
        let deadline = Date().addingTimeInterval(30)
        while refused.isRunning, Date() < deadline { usleep(20_000) }
        if refused.isRunning { refused.terminate() }
        refused.waitUntilExit()
        let refusalText = String(decoding: refusal.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(refused.terminationStatus == 2 && refusalText.contains("cannot read the library \(typo): no such directory"), "\(refusalText)")
        #expect(!FileManager.default.fileExists(atPath: typo))

        let notDirectory = try s.run([s.library, "-o", s.library + "/groove_120bpm.mp3/out", "-q"])
        #expect(notDirectory.status == 2 && notDirectory.stderr.contains("cannot write the output directory"), "\(notDirectory.stderr)")
        #expect(!notDirectory.stderr.contains("Error Domain") && !notDirectory.stderr.contains("Code="))

        let (server, _, stderr) = try NaviscanProcess.start(["serve", "--library", s.library, "--port", "\(port)"], environment: s.environment)
        var up = false
        for _ in 0..<200 where !up {
            up = ListeningSocket.canConnect(port: port)
            if !up { usleep(50_000) }
        }
        #expect(up, "the server never listened")
        // A track precomputed by the server is analysed the way the store's scans analyse.
        try AudioFileWriter.write(.sine(frequency: 440, duration: 2), to: s.library + "/new.wav", format: .wav16)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/visualizer/precompute")!)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"relative_path": "new.wav"}"#.utf8)
        let answered = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var status = 0
        URLSession.shared.dataTask(with: request) { _, response, _ in
            status = (response as? HTTPURLResponse)?.statusCode ?? 0
            answered.signal()
        }.resume()
        answered.wait()
        #expect(status == 202)
        let store = try LibraryStore(path: OutputLayout(root: s.library + "/.naviscan").databasePath)
        var record: TrackRecord?
        for _ in 0..<200 where record == nil {
            record = try store.track(relativePath: "new.wav")
            if record == nil { usleep(50_000) }
        }
        let key = try #require(record).key
        #expect(try VisFrameBuffer(path: OutputLayout(root: s.library + "/.naviscan").visPath(key: key)).header.encoding.name == "u8")
        kill(server.processIdentifier, SIGINT)
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        server.waitUntilExit()
        #expect(server.terminationStatus == 0, "\(log)")
        #expect(!log.contains("Cancellation") && !log.contains("error") && !log.contains("warning"), "\(log)")
    }

    // util-linux `script` gives the scan a terminal (Linux; macOS's script takes other options).
    @Test("Progress on a terminal moves inside one long file, by audio duration, clipped to the width",
          .enabled(if: hasUtilLinuxScript))
    func progressInsideALongFile() throws {
        let s = try Scratch()
        defer { s.remove() }
        let long = s.root + "/Long"
        try FileManager.default.createDirectory(atPath: long, withIntermediateDirectories: true)
        // Long enough for the scan of it to last several of the line's quarter-second refreshes, in the
        // debug build and in the (many times faster) release build.
        #if DEBUG
        let signal = TestSignal.sine(frequency: 220, duration: 240, sampleRate: 22_050)
        #else
        let signal = TestSignal.sine(frequency: 220, duration: 3_600, sampleRate: 8_000)
        #endif
        try AudioFileWriter.write(signal, to: long + "/long.flac", format: .flac16)
        // `script` gives the scan a terminal of 40 columns; its transcript is what a user would see.
        let command = "stty cols 40; exec \(NaviscanProcess.executable) '\(long)' -o '\(s.root)/out' --dj -j 1"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qfec", command, "/dev/null"]
        process.environment = ProcessInfo.processInfo.environment.merging(s.environment) { _, b in b }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let transcript = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(transcript)")
        let lines = transcript.replacingOccurrences(of: "\u{1B}[K", with: "")
            .components(separatedBy: CharacterSet(charactersIn: "\r\n")).filter { $0.hasPrefix("naviscan: ") }
        #expect(lines.allSatisfy { $0.count <= 39 }, "\(lines.filter { $0.count > 39 })")
        // The only file is in flight until the scan ends: every percentage shown was measured inside it.
        let percents = lines.compactMap { line -> Int? in
            guard let r = line.range(of: #"^naviscan: \d+%"#, options: .regularExpression) else { return nil }
            return Int(line[r].dropFirst("naviscan: ".count).dropLast())
        }
        #expect(Set(percents).count >= 3 && (percents.max() ?? 0) >= 20 && (percents.max() ?? 100) < 100, "\(lines.suffix(5))")
        #expect(lines.contains { $0.contains("ETA") }, "\(lines.suffix(5))")
    }
}

#if os(Linux)
private let hasUtilLinuxScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")
#else
private let hasUtilLinuxScript = false
#endif

#if canImport(Glibc)
private let streamSocket = Int32(SOCK_STREAM.rawValue)
#else
private let streamSocket = SOCK_STREAM
#endif

private func closeDescriptor(_ fd: Int32) { _ = close(fd) }

/// A TCP socket listening on a free loopback port (to occupy it), and a connect check.
final class ListeningSocket {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, streamSocket, 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 1) == 0 else { throw POSIXError(.EADDRINUSE) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { closeDescriptor(fd) }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, streamSocket, 0)
        defer { closeDescriptor(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
