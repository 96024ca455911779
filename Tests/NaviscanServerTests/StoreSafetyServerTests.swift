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

/// Connects a /ws/push client that logs every event; returns once the server counts it.
func connectPushClient(_ client: LiveClient, log: EventLog, query: String = "") async throws -> Task<Void, Error> {
    let port = try #require(client.port)
    let before = try await client.execute(uri: "/health", method: .get) { try json($0.body)["connected_clients"] as? Int } ?? 0
    let socket = Task {
        for try await text in PushSocket.messages(port: port, path: "/ws/push" + query) { await log.append(text) }
    }
    for _ in 0..<100 {
        let connected = try await client.execute(uri: "/health", method: .get) { try json($0.body)["connected_clients"] as? Int }
        if connected == before + 1 { break }
        try await Task.sleep(for: .milliseconds(50))
    }
    // The first message (hello or resync) is sent on connecting.
    for _ in 0..<100 where await log.messages.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
    return socket
}

func waitFor(_ log: EventLog, _ paths: [String], seconds: Int = 30) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        var all = true
        for path in paths where !(await log.contains(path)) { all = false }
        if all { return }
        try await Task.sleep(for: .milliseconds(50))
    }
}

func post(_ client: LiveClient, _ path: String) async throws -> (HTTPResponse.Status, [String: Any]) {
    let body = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["relative_path": path]))
    return try await client.execute(uri: "/visualizer/precompute", method: .post, body: body) { ($0.status, try json($0.body)) }
}

@Suite("naviscan serve beside a scan: ordered events, one writer, odd names", .serialized)
struct StoreSafetyServerTests {
    @Test("Rows committed out of time order both reach a WebSocket client (the watcher follows the change sequence)")
    func outOfOrderCommits() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let store = try LibraryStore(path: OutputLayout(root: served.data).databasePath)
        try await served.app().test(.live) { client in
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            defer { socket.cancel() }
            // Two workers: the long track started first (an earlier time) but commits second.
            var late = try #require(try await store.track(relativePath: served.tracks[0]))
            var early = try #require(try await store.track(relativePath: served.tracks[1]))
            early.changedAt = Date().timeIntervalSince1970
            try store.commitTracks([.save(early)])
            try await waitFor(log, [served.tracks[1]])
            late.changedAt = Date().timeIntervalSince1970 - 600
            try store.commitTracks([.save(late)])
            try await waitFor(log, [served.tracks[0]])
            let events = await log.messages
            #expect(events.contains { $0.contains(served.tracks[1]) } && events.contains { $0.contains(served.tracks[0]) }, "\(events)")
        }
    }

    @Test("/ws/push: one event per change with its seq (an album's new gain once, a deleted file once); a client reconnecting with after= is sent what it missed; an unknown number asks it to reload")
    func pushOncePerChangeAndReplay() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let album = (1...3).map { "New Album/0\($0).flac" }
        try FileManager.default.createDirectory(atPath: served.library + "/New Album", withIntermediateDirectories: true)
        for (i, path) in album.enumerated() {
            try AudioFileWriter.write(.sine(frequency: 300 + Double(i * 50), dBFS: -10 - Double(i * 4), duration: 1), to: served.library + "/" + path,
                                      format: .flac16, tags: [.album: "New Album", .artist: "Band", .trackNumber: "\(i + 1)"])
        }
        let removed = served.tracks[2]
        try FileManager.default.removeItem(atPath: served.library + "/" + removed)
        @Sendable func decoded(_ messages: [String]) -> [[String: Any]] {
            messages.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        try await served.app().test(.live) { client in
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            let hello = try #require(decoded(await log.messages).first)
            #expect(hello["event"] as? String == "hello")
            let start = try #require(hello["seq"] as? Int)
            let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 2)
            _ = try await Task.detached { try LibraryScanner(options: options, logger: Logger(label: "scan")).run() }.value
            try await waitFor(log, album + [removed, "album_updated"])
            try await Task.sleep(for: .milliseconds(600))   // several polls: nothing more may come
            socket.cancel()
            let events = Array(decoded(await log.messages).dropFirst())
            for path in album {
                #expect(events.filter { $0["relative_path"] as? String == path }.map { $0["event"] as? String } == ["track_analyzed"], "\(path): \(events)")
            }
            #expect(events.filter { $0["relative_path"] as? String == removed }.map { $0["event"] as? String } == ["track_removed"], "\(events)")
            let albums = events.filter { ($0["relative_paths"] as? [String])?.contains(album[0]) == true }
            #expect(albums.count == 1 && Set(albums.first?["relative_paths"] as? [String] ?? []) == Set(album), "\(events)")
            let seqs = events.compactMap { $0["seq"] as? Int }
            #expect(seqs.count == events.count && seqs == seqs.sorted() && Set(seqs).count == seqs.count && (seqs.first ?? 0) > start, "\(seqs)")

            // Reconnecting with the last number seen before the scan: the same events, in order.
            let replay = EventLog()
            let again = try await connectPushClient(client, log: replay, query: "?after=\(start)")
            try await waitFor(replay, album + [removed, "album_updated"])
            again.cancel()
            let replayed = Array(decoded(await replay.messages).dropFirst())
            #expect(replayed.compactMap { $0["seq"] as? Int } == seqs)
            #expect(replayed.compactMap { $0["event"] as? String } == events.compactMap { $0["event"] as? String })

            // A number this store never gave: reload.
            let stale = EventLog()
            let third = try await connectPushClient(client, log: stale, query: "?after=\((seqs.last ?? 0) + 1000)")
            try await waitFor(stale, ["resync"])
            third.cancel()
            #expect(decoded(await stale.messages).first?["event"] as? String == "resync")
        }
    }

    @Test("A scan with two jobs beside a live server: every track's event is pushed")
    func scanBesideServer() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let added = (0..<12).map { "New/\($0).flac" }
        try FileManager.default.createDirectory(atPath: served.library + "/New", withIntermediateDirectories: true)
        for (i, path) in added.enumerated() {
            try AudioFileWriter.write(.sine(frequency: 300 + Double(i * 40), duration: i % 3 == 0 ? 20 : 1), to: served.library + "/" + path, format: .flac16)
        }
        try await served.app().test(.live) { client in
            let log = EventLog()
            let socket = try await connectPushClient(client, log: log)
            defer { socket.cancel() }
            let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 2)
            let summary = try await Task.detached { try LibraryScanner(options: options, logger: Logger(label: "scan")).run() }.value
            #expect(summary.analysed == added.count)
            try await waitFor(log, added)
            for path in added { #expect(await log.contains(path), "\(path)") }
        }
    }

    @Test("A name that is not UTF-8 is scanned with its tags and served under its escaped path or its own bytes: profile, frames, stream, track page, library page")
    func nonUTF8Served() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: served.library + "/Other/tmp.flac", format: .flac16,
                                  tags: [.album: "Dangerously in Love", .artist: "Beyonc\u{E9}", .title: "Crazy"])
        let fileBytes = try Data(contentsOf: URL(fileURLWithPath: served.library + "/Other/tmp.flac"))
        let bytes = Array((served.library + "/Other/Beyonc").utf8) + [0xE9] + Array(".flac".utf8) + [0]
        let renamed = (served.library + "/Other/tmp.flac").withCString { from in
            bytes.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { rename(from, $0.baseAddress!) } }
        }
        try #require(renamed == 0)
        let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "scan")).run().analysed == 1)
        let path = "Other/Beyonc\u{F7E9}.flac"
        // Its tags were read (they decide its album and album gain).
        let store = try LibraryStore(path: OutputLayout(root: served.data).databasePath)
        #expect(try store.tags(relativePath: path)?.album == "Dangerously in Love")
        #expect(try store.tags(relativePath: path)?.artist == "Beyonc\u{E9}")
        try await served.app().test(.live) { client in
            // The escape as naviscan answers it (U+F7E9, percent-encoded as UTF-8) and the name's own byte (%E9).
            for sent in [query(path), "Other/Beyonc%E9.flac", "Other/Beyonc%e9.flac"] {
                try await client.execute(uri: "/smart-dj/profile?relative_path=" + sent, method: .get) { response in
                    #expect(response.status == .ok, "\(sent)")
                    let body = try json(response.body)
                    #expect(body["relative_path"] as? String == path)
                }
                try await client.execute(uri: "/visualizer/frames?format=binary&relative_path=" + sent, method: .get) { response in
                    #expect(response.status == .ok, "\(sent)")
                }
                try await client.execute(uri: "/stream?relative_path=" + sent, method: .get) { response in
                    #expect(response.status == .ok, "\(sent)")
                    #expect(Data(buffer: response.body) == fileBytes)
                }
                try await client.execute(uri: "/track?relative_path=" + sent, method: .get) { response in
                    #expect(response.status == .ok, "\(sent)")
                }
            }
            let bulk = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["paths": [path]]))
            try await client.execute(uri: "/smart-dj/bulk-profiles", method: .post, body: bulk) { response in
                let body = try json(response.body)
                #expect((body["profiles"] as? [String: Any])?[path] != nil)
            }
            try await client.execute(uri: "/", method: .get) { response in
                #expect(String(buffer: response.body).contains("Beyonc\u{F7E9}.flac"))
            }
        }
    }

    @Test("Precompute: hidden paths, symlinks leaving the library, FIFOs refused; unchanged tracks not redone; a scan's lock is respected; the queue is bounded")
    func precomputeRules() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let fm = FileManager.default
        try fm.createDirectory(atPath: served.scratch + "/outside", withIntermediateDirectories: true)
        try AudioFileWriter.write(.sine(frequency: 440, duration: 1), to: served.scratch + "/outside/secret.flac", format: .flac16)
        try fm.createSymbolicLink(atPath: served.library + "/escape", withDestinationPath: served.scratch + "/outside")
        try fm.createSymbolicLink(atPath: served.library + "/etc", withDestinationPath: "/etc")
        try fm.createSymbolicLink(atPath: served.library + "/Other/link.flac", withDestinationPath: served.library + "/" + served.tracks[0])
        #expect(mkfifo(served.library + "/Other/pipe.flac", 0o644) == 0)
        for i in 0..<3 {
            try AudioFileWriter.write(.sine(frequency: 500 + Double(i), duration: 1), to: served.library + "/Other/queued \(i).flac", format: .flac16)
        }
        let store = try LibraryStore(path: OutputLayout(root: served.data).databasePath)
        let before = try #require(try await store.track(relativePath: served.tracks[2]))
        var configuration = ServerConfiguration(dataDirectory: served.data, port: 0)
        configuration.pollInterval = .milliseconds(100)
        configuration.precomputeQueueCapacity = 1
        let app = try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server"))
        try await app.test(.live) { client in
            #expect(try await post(client, ".naviscan/naviscan.db").0 == .badRequest)
            #expect(try await post(client, "escape/secret.flac").0 == .forbidden)
            #expect(try await post(client, "etc/passwd").0 != .accepted)
            #expect(try await post(client, "Other/pipe.flac").0 == .badRequest)
            let unchanged = try await post(client, served.tracks[2])
            #expect(unchanged.0 == .accepted && unchanged.1["status"] as? String == "unchanged")

            // While a scan holds the output directory, precomputes wait; the queue holds one more.
            var scanLock: ScanLock? = try ScanLock(path: served.data + "/naviscan.lock", outputDirectory: served.data, owner: .scan)
            #expect(try await post(client, "Other/link.flac").0 == .accepted)           // a symlink inside the library
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await post(client, "Other/queued 0.flac").1["status"] as? String == "queued")
            #expect(try await post(client, "Other/queued 1.flac").0 == .serviceUnavailable)
            let running = try await client.execute(uri: "/visualizer/precompute?relative_path=" + query("Other/link.flac"), method: .get) { try json($0.body)["status"] as? String }
            #expect(running == "running")
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await store.track(relativePath: "Other/link.flac") == nil)   // nothing written under the scan's lock
            withExtendedLifetime(scanLock) {}
            scanLock = nil
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, try await store.track(relativePath: "Other/queued 0.flac") == nil {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await store.track(relativePath: "Other/link.flac")?.status == .ok)
            #expect(try await store.track(relativePath: "Other/queued 0.flac")?.status == .ok)
            let done = try await client.execute(uri: "/visualizer/precompute?relative_path=" + query("Other/link.flac"), method: .get) { try json($0.body)["status"] as? String }
            #expect(done == "done")
        }
        // The unchanged track was not analysed again.
        #expect(try await store.track(relativePath: served.tracks[2])?.seq == before.seq)
    }
}
