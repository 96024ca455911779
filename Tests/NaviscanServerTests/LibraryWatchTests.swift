import Foundation
import Hummingbird
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanStore
import NaviscanTestSupport
import NIOCore
import Testing

extension ServedLibrary {
    /// A server that keeps the library analysed, with a short settle time.
    func maintainingApp(settle: Duration = .milliseconds(500)) throws -> some ApplicationProtocol {
        var configuration = ServerConfiguration(dataDirectory: data, library: library, port: 0)
        configuration.pollInterval = .milliseconds(100)
        var maintenance = Maintenance()
        maintenance.settle = settle
        maintenance.jobs = 2
        configuration.maintenance = maintenance
        return try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server"))
    }

    func health(_ client: LiveClient) async throws -> [String: Any] {
        try await client.execute(uri: "/health", method: .get) { try json($0.body) }
    }

    func profileStatus(_ client: LiveClient, _ path: String) async throws -> HTTPResponse.Status {
        try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(path), method: .get) { $0.status }
    }

    /// Waits until the background scan is idle (at most `seconds`).
    func waitIdle(_ client: LiveClient, seconds: Int = 30) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await health(client)["scan_state"] as? String == "idle" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

@Suite("naviscan serve keeps the library analysed", .serialized)
struct LibraryWatchTests {
    @Test("an album copied into the served library is analysed and pushed without a scan")
    func copiedAlbum() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        // The album is made outside the library, then copied in as a folder (a new folder: watched as it appears).
        let staging = served.scratch + "/staging/New Album"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try AudioFileWriter.write(.sine(frequency: 330, duration: 2, channels: 2), to: staging + "/01 first.flac", format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 550, duration: 3), to: staging + "/02 second.wav", format: .wav16)
        let added = ["New Album/01 first.flac", "New Album/02 second.wav"]
        try await served.maintainingApp().test(.live) { client in
            try await served.waitIdle(client)
            let health = try await served.health(client)
            #expect(health["watching"] as? Bool == true)
            #expect(health["last_scan"] is String)
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            defer { socket.cancel() }
            try FileManager.default.copyItem(atPath: staging, toPath: served.library + "/New Album")
            try await waitFor(log, added)
            for path in added {
                #expect(await log.messages.contains { $0.contains("\"event\":\"track_analyzed\"") && $0.contains(path) }, "\(path)")
                #expect(try await served.profileStatus(client, path) == .ok)
            }
            // A file added later to the new folder is seen too (the folder is watched now).
            try AudioFileWriter.write(.sine(frequency: 770, duration: 2), to: served.scratch + "/03.flac", format: .flac16)
            try FileManager.default.moveItem(atPath: served.scratch + "/03.flac", toPath: served.library + "/New Album/03 third.flac")
            try await waitFor(log, ["New Album/03 third.flac"])
            #expect(try await served.profileStatus(client, "New Album/03 third.flac") == .ok)
        }
    }

    @Test("a half-written file is not analysed before its writer closes it")
    func halfWritten() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let source = served.scratch + "/whole.wav"
        try AudioFileWriter.write(.sine(frequency: 440, duration: 4, sampleRate: 44_100), to: source, format: .wav16)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let path = "Other/slow copy.wav"
        try await served.maintainingApp().test(.live) { client in
            try await served.waitIdle(client)
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            defer { socket.cancel() }
            #expect(FileManager.default.createFile(atPath: served.library + "/" + path, contents: nil))
            let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: served.library + "/" + path))
            try writer.write(contentsOf: bytes.prefix(bytes.count / 2))
            // Four settle times with the file open: no scan may pick it up.
            try await Task.sleep(for: .seconds(2))
            #expect(try await served.profileStatus(client, path) == .notFound)
            #expect(!(await log.contains(path)))
            #expect(try await served.health(client)["scan_state"] as? String == "waiting")
            try writer.write(contentsOf: bytes.suffix(from: bytes.count / 2))
            try writer.close()
            try await waitFor(log, [path])
            #expect(await log.messages.contains { $0.contains("\"event\":\"track_analyzed\"") && $0.contains(path) })
            // The whole file was analysed: the profile covers its full four seconds.
            let profile = try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(path), method: .get) { try json($0.body) }
            let duration = try #require(profile["duration"] as? Double)
            #expect(abs(duration - 4) < 0.05, "\(profile)")
        }
    }

    @Test("a deleted file is pruned; a mass deletion is held back by the prune guard")
    func deletions() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        // Seven more tracks, analysed by the server's first background scan: ten in all.
        let extra = (1...7).map { "Extra/track \($0).flac" }
        try FileManager.default.createDirectory(atPath: served.library + "/Extra", withIntermediateDirectories: true)
        for (i, path) in extra.enumerated() {
            try AudioFileWriter.write(.sine(frequency: 200 + 50 * Double(i), duration: 1), to: served.library + "/" + path, format: .flac16)
        }
        try await served.maintainingApp().test(.live) { client in
            try await served.waitIdle(client)
            #expect(try await served.health(client)["profile_count"] as? Int == 10)
            // One in ten is under the guard's 20 %: pruned.
            try FileManager.default.removeItem(atPath: served.library + "/" + served.tracks[0])
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, try await served.profileStatus(client, served.tracks[0]) == .ok {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await served.profileStatus(client, served.tracks[0]) == .notFound)
            let store = try LibraryStore(path: OutputLayout(root: served.data).databasePath)
            #expect(try await store.track(relativePath: served.tracks[0]) == nil)

            // The whole Extra folder at once (7 of 9) is over it: kept, still served.
            try FileManager.default.removeItem(atPath: served.library + "/Extra")
            try await Task.sleep(for: .seconds(1))
            try await served.waitIdle(client)
            #expect(try await store.track(relativePath: extra[0]) != nil)
            #expect(try await served.profileStatus(client, extra[0]) == .ok)
            #expect(try await served.health(client)["profile_count"] as? Int == 9)
        }
    }

    @Test("a precompute request goes ahead of a running background scan, which resumes after it")
    func precomputeFirst() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        // Sixteen unanalysed tracks for the server's first background scan (one worker).
        let extra = (1...16).map { String(format: "Backlog/%02d.flac", $0) }
        try FileManager.default.createDirectory(atPath: served.library + "/Backlog", withIntermediateDirectories: true)
        // Each long enough that the scan is still early when the request comes, in the debug build and
        // in the (many times faster) release build.
        for (i, path) in extra.enumerated() {
            #if DEBUG
            let signal = TestSignal.sine(frequency: 300 + 40 * Double(i), duration: 6, channels: 2)
            #else
            let signal = TestSignal.sine(frequency: 300 + 40 * Double(i), duration: 360, sampleRate: 8_000)
            #endif
            try AudioFileWriter.write(signal, to: served.library + "/" + path, format: .flac16)
        }
        var configuration = ServerConfiguration(dataDirectory: served.data, library: served.library, port: 0)
        configuration.pollInterval = .milliseconds(100)
        var maintenance = Maintenance()
        maintenance.settle = .milliseconds(200)
        maintenance.jobs = 1
        configuration.maintenance = maintenance
        try await NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server")).test(.live) { client in
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            defer { socket.cancel() }
            // Once the scan has analysed its first track, ask for one it has not reached.
            try await waitFor(log, ["Backlog/"])
            var wanted = extra[0]
            for path in extra.reversed() where !(await log.contains(path)) { wanted = path; break }
            // However far the scan got before the request (the machine's load decides), the request is
            // served next: at most the track in hand, one handed out meanwhile and one whose event was still on its way come before it.
            let done = await log.messages.filter { $0.contains("Backlog/") }.count
            #expect(done < extra.count - 4, "the scan ran too far before the request for the test to mean anything: \(done) tracks")
            let (status, _) = try await post(client, wanted)
            #expect(status == .accepted)
            try await waitFor(log, [wanted])
            let events = await log.messages
            let before = events.prefix { !$0.contains(wanted) }.filter { $0.contains("Backlog/") }.count
            #expect(before <= done + 3 && before < extra.count - 2, "the precompute waited for the scan: \(before) tracks before it, \(done) when asked")
            // The scan resumes and finishes the rest.
            try await waitFor(log, extra, seconds: 120)
            for path in extra { #expect(await log.contains(path), "\(path)") }
        }
    }
}
