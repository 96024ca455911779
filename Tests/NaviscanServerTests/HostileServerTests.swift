import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanStore
import NaviscanTestSupport
import NIOCore
import Testing

@Suite("naviscan serve under damaged data and hostile clients", .serialized)
struct HostileServerTests {
    @Test("A NaN in a stored frame file: JSON and binary answer 500, the server lives, the next scan repairs it")
    func nanInFrames() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let layout = OutputLayout(root: served.data)
        let track = served.tracks[0], binaryTrack = served.tracks[2]
        for damaged in [track, binaryTrack] {
            try VisFileSurgery.setPayloadFloat(layout.visPath(key: OutputLayout.key(forRelativePath: damaged)), index: 64 * 40 + 7, .nan)
        }
        try await served.app().test(.live) { client in
            let requests: [(String, HTTPFields)] = [(track, HTTPFields()), (binaryTrack, [.accept: "application/octet-stream"])]
            for (path, headers) in requests {
                try await client.execute(uri: "/visualizer/frames?relative_path=" + query(path), method: .get, headers: headers) { response in
                    #expect(response.status == .internalServerError)
                    let message = try #require(try json(response.body)["error"] as? String)
                    #expect(message.contains(path) && message.contains("re-analysis"))
                }
            }
            try await client.execute(uri: "/health", method: .get) { #expect($0.status == .ok) }
            // Marked: nothing serves it until a scan has analysed it again.
            try await client.execute(uri: "/visualizer/frames?relative_path=" + query(track), method: .get) { #expect($0.status == .notFound) }
        }
        let store = try LibraryStore(path: layout.databasePath)
        #expect(try await store.track(relativePath: track)?.visFingerprint == nil)
        let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(summary.analysed == 2 && summary.unchanged == 1)
        try await served.app().test(.live) { client in
            try await client.execute(uri: "/visualizer/frames?relative_path=" + query(track), method: .get) { response in
                #expect(response.status == .ok)
                let body = try json(response.body)
                #expect(JSONNumbers.nonFinite(in: body).isEmpty)
                #expect((body["frames"] as? [[Double]])?.count == 90)
            }
        }
    }

    @Test("A folder, random bytes or a truncated file in place of a frame file: a plain error, never 200")
    func replacedFrameFiles() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let layout = OutputLayout(root: served.data)
        let files = served.tracks.map { layout.visPath(key: OutputLayout.key(forRelativePath: $0)) }
        try FileManager.default.removeItem(atPath: files[0])
        try FileManager.default.createDirectory(atPath: files[0], withIntermediateDirectories: false)
        var random = SeededGenerator(seed: 41)
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: URL(fileURLWithPath: files[1]))
        let whole = try Data(contentsOf: URL(fileURLWithPath: files[2]))
        try whole.prefix(whole.count - 100).write(to: URL(fileURLWithPath: files[2]))
        try await served.app().test(.live) { client in
            for (track, format) in zip(served.tracks, ["", "&format=binary", "&format=binary"]) {
                try await client.execute(uri: "/visualizer/frames?relative_path=" + query(track) + format, method: .get) { response in
                    #expect(response.status == .internalServerError, "\(track) \(format)")
                    let body = try json(response.body)
                    #expect(body["error"] is String)
                }
                // Then marked for re-analysis: not served any more.
                try await client.execute(uri: "/visualizer/frames?relative_path=" + query(track) + format, method: .get) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }

    @Test("A stored profile that is not JSON: the bulk answer stays JSON and lists it missing; the single answer is 500")
    func brokenStoredProfile() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let store = try LibraryStore(path: OutputLayout(root: served.data).databasePath)
        var record = try #require(try await store.track(relativePath: served.tracks[1]))
        record.profileJSON = "{\"relative_path\": \"x\", oops"
        try store.commitTracks([.save(record)])
        var other = try #require(try await store.track(relativePath: served.tracks[2]))
        other.profileJSON = other.profileJSON!.replacingOccurrences(of: "\"lufs\" : ", with: "\"lufs\" : 2722.0, \"x\" : ")
        try store.commitTracks([.save(other)])
        try await served.app().test(.live) { client in
            let uri = "/smart-dj/bulk-profiles?paths=" + served.tracks.map(query).joined(separator: ",")
            try await client.execute(uri: uri, method: .get) { response in
                #expect(response.status == .ok)
                let body = try json(response.body)
                #expect(Set((body["profiles"] as? [String: Any] ?? [:]).keys) == [served.tracks[0]])
                #expect(Set(body["missing"] as? [String] ?? []) == [served.tracks[1], served.tracks[2]])
            }
            try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(served.tracks[0]), method: .get) { #expect($0.status == .ok) }
        }
        #expect(try await store.track(relativePath: served.tracks[1])?.profileFingerprint == nil)
        #expect(try await store.track(relativePath: served.tracks[2])?.profileFingerprint == nil)
    }

    @Test("413 for a body over the limit, 405 with Allow for a wrong method, HEAD with the GET's headers")
    func methodsAndLimits() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app().test(.live) { client in
            let big = ByteBuffer(repeating: UInt8(ascii: " "), count: 20 << 20)
            try await client.execute(uri: "/smart-dj/bulk-profiles", method: .post, body: big) { response in
                #expect(response.status == .contentTooLarge)
                let body = try json(response.body)
                #expect(body["error"] is String)
            }
            // The Allow header lists what the controllers registered for the path.
            for (method, uri, allow) in [(HTTPRequest.Method.delete, "/health", "GET, HEAD"), (.post, "/visualizer/frames", "GET, HEAD"),
                                         (.put, "/smart-dj/profile", "GET, HEAD"), (.delete, "/visualizer/precompute", "GET, HEAD, POST"),
                                         (.put, "/smart-dj/bulk-profiles", "GET, HEAD, POST"), (.post, "/stream", "GET, HEAD"),
                                         (.delete, "/track", "GET, HEAD"), (.post, "/ws/push", "GET, HEAD")] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                }
            }
            let frames = "/visualizer/frames?format=binary&relative_path=" + query(served.tracks[0])
            for uri in ["/health", "/smart-dj/profile?relative_path=" + query(served.tracks[0]), frames] {
                let get = try await client.execute(uri: uri, method: .get) { $0 }
                try await client.execute(uri: uri, method: .head) { response in
                    #expect(response.status == .ok, "\(uri)")
                    #expect(response.body.readableBytes == 0)
                    #expect(response.headers[.contentType] == get.headers[.contentType])
                    #expect(response.headers[.contentLength] == get.headers[.contentLength], "\(uri)")
                    #expect(response.headers[.eTag] == get.headers[.eTag])
                }
            }
            let etag = try await client.execute(uri: frames, method: .get) { $0.headers[.eTag] }
            try await client.execute(uri: frames, method: .get, headers: [.ifNoneMatch: etag!]) { #expect($0.status == .notModified) }
        }
    }

    @Test("A client that never finishes its request head is closed (slowloris)")
    func slowloris() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        var configuration = ServerConfiguration(dataDirectory: served.data, port: 0)
        configuration.limits.requestHeadTimeout = .seconds(2)
        configuration.limits.idleTimeout = .seconds(2)
        let app = try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "slowloris"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // Generous read timeouts: on a loaded machine the server may be slow, never silent for a minute.
            let silent = try RawSocket(port: port, timeout: 60)
            let trickle = try RawSocket(port: port, timeout: 60)
            try trickle.send("GET /health HTTP/1.1\r\nHost: x\r\n")
            let keptAlive = try RawSocket(port: port, timeout: 60)
            #expect(try keptAlive.request("GET", "/health").status == 200)
            #expect(silent.closedByServer())
            #expect(trickle.closedByServer())
            #expect(keptAlive.closedByServer())
            // (The test client's own kept-alive connection is closed too: a fresh one is served.)
            #expect(try RawSocket(port: port, timeout: 60).request("GET", "/health").status == 200)
        }
    }

    @Test("1,100 idle connections under a 1,024-descriptor limit do not stop /health")
    func idleCrowd() throws {
        raiseOwnDescriptorLimit()
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let server = try ServerProcess(data: served.data, descriptorLimit: 1024)
        var crowd: [RawSocket] = []
        for _ in 0..<1100 { crowd.append(try RawSocket(port: server.port)) }
        let health = try RawSocket(port: server.port).request("GET", "/health")
        #expect(health.status == 200)
        #expect(String(decoding: health.body, as: UTF8.self).contains("\"status\":\"ok\""))
        #expect(server.isRunning)
        crowd.removeAll()
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
    }

    // The server's memory while it streams this answer, and under the 400 stalled clients below, is
    // measured by the benchmarks server.frames-3h-json and server.400-stalled-binary-readers.
    @Test("A 3-hour track's JSON frames stream whole: every frame, the closing bracket, over 40 MB")
    func longTrackStreams() throws {
        // A scanned track whose frame file is replaced by a 3-hour one (generated, not decoded).
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let track = served.tracks[0]
        let frameCount = try Self.writeThreeHourFrames(served, track: track)

        let server = try ServerProcess(data: served.data)
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
        var brackets = 0
        var tail: [UInt8] = []
        let response = try RawSocket(port: server.port, timeout: 120).request("GET", "/visualizer/frames?relative_path=" + query(track), keep: 256) { bytes in
            brackets += bytes.lazy.filter { $0 == UInt8(ascii: "[") }.count
            tail = Array((tail + bytes).suffix(8))
        }
        #expect(response.status == 200)
        #expect(frameCount == 324_000 && brackets == frameCount + 1)
        #expect(String(decoding: tail, as: UTF8.self).hasSuffix("1]]}"))
        #expect(response.bodyLength > 40_000_000)
        #expect(server.isRunning)
    }

    @Test("A deleted frame file answers 404 without a disk path and is re-analysed; a garbage waveform leaves the profile served")
    func missingAndDamagedSidecars() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let layout = OutputLayout(root: served.data)
        let (framesTrack, waveformTrack) = (served.tracks[0], served.tracks[2])
        try FileManager.default.removeItem(atPath: layout.visPath(key: OutputLayout.key(forRelativePath: framesTrack)))
        try Data(repeating: 0x5A, count: 999).write(to: URL(fileURLWithPath: layout.waveformPath(key: OutputLayout.key(forRelativePath: waveformTrack))))
        try await served.app().test(.live) { client in
            for format in ["", "&format=binary"] {
                try await client.execute(uri: "/visualizer/frames?relative_path=" + query(framesTrack) + format, method: .get) { response in
                    #expect(response.status == .notFound, "\(format)")
                    let body = String(buffer: response.body)
                    #expect(!body.contains(served.scratch) && !body.contains("/vis/"), "\(body)")
                }
            }
            try await client.execute(uri: "/waveform?relative_path=" + query(waveformTrack), method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = String(buffer: response.body)
                #expect(body.contains(waveformTrack) && !body.contains(served.scratch), "\(body)")
            }
            // The profile beside the garbage waveform is still served.
            try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(waveformTrack), method: .get) { response in
                #expect(response.status == .ok)
            }
        }
        let store = try LibraryStore(path: layout.databasePath)
        #expect(try await store.track(relativePath: waveformTrack)?.profileFingerprint != nil)
        let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 1)
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        #expect(summary.analysed == 2 && summary.unchanged == 1)
        _ = try WaveformFile.read(datPath: layout.waveformPath(key: OutputLayout.key(forRelativePath: waveformTrack)))
        #expect(FileManager.default.fileExists(atPath: layout.visPath(key: OutputLayout.key(forRelativePath: framesTrack))))
    }

    @Test("Oversized or garbage request heads and a malformed chunked body are answered 431/400 and closed at once")
    func requestLimits() throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let server = try ServerProcess(data: served.data)
        let cases: [(String, String, Int)] = [
            ("80 kB head", "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 80_000) + "\r\n\r\n", 431),
            ("random bytes", "\u{16}\u{03}\u{01}\u{02}\u{00}garbage bytes\r\n\r\n", 400),
            ("a header line without a name", "GET /health HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n", 400),
            ("a control byte in a header", "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\u{01}b\r\n\r\n", 400),
            ("a bad chunk size", "POST /smart-dj/bulk-profiles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400),
        ]
        for (name, request, status) in cases {
            // "At once": the answer and the close come before this socket's 5 s timeout, so from the
            // parser, not from the server's 10 s head timeout (which would close without an answer).
            let socket = try RawSocket(port: server.port, timeout: 5)
            try socket.send(request)
            var answer: [UInt8] = []
            var closed = false
            while true {
                let bytes: [UInt8]
                do { bytes = try socket.receive() } catch {
                    // A reset closes too (the server closed with our unread head in its buffer);
                    // only the socket's own timeout means the server kept the connection.
                    closed = !((error as? RawSocketError)?.timedOut ?? true)
                    break
                }
                if bytes.isEmpty { closed = true; break }
                answer += bytes
            }
            #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 \(status)"), "\(name): \(String(decoding: answer.prefix(80), as: UTF8.self))")
            #expect(closed, "\(name): the connection was not closed after the answer")
        }
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
        #expect(server.isRunning)
    }

    @Test("A newline in a requested path or a file name is one escaped log line, never a forged one")
    func logLinesCannotBeForged() throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let server = try ServerProcess(data: served.data)
        let forged = "FORGED 2026-01-01T00:00:00+0000 error naviscan.serve: owned"
        let response = try RawSocket(port: server.port).request("GET", "/smart-dj/profile?relative_path=x.flac%0A" + forged.replacingOccurrences(of: " ", with: "%20"))
        #expect(response.status == 404)
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
        server.stop()
        let lines = server.output.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("FORGED") }, "\(server.output)")
        #expect(lines.contains { $0.contains("x.flac\\nFORGED") }, "\(server.output)")
    }

    @Test("serve keeping a library of float files of 1e17/1e30/NaN/Inf and 0–2 Hz headers analysed: it lives, lists them failed, serves the good track")
    func hostileFilesUnderServe() throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let hostile = (FixturePaths.hostile("float-") + FixturePaths.hostile("rate-")).filter { !$0.hasSuffix(".caf") }
        #expect(hostile.count >= 10)
        try FileManager.default.createDirectory(atPath: served.library + "/Hostile", withIntermediateDirectories: true)
        for file in hostile {
            try FileManager.default.copyItem(atPath: file, toPath: served.library + "/Hostile/" + URL(fileURLWithPath: file).lastPathComponent)
        }
        let server = try ServerProcess(arguments: ["--library", served.library, "--out", served.data])
        var health: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            let answer = try RawSocket(port: server.port).request("GET", "/health")
            health = (try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]) ?? [:]
            if health["failed"] as? Int == hostile.count, health["scan_state"] as? String == "idle" { break }
            usleep(300_000)
        }
        #expect(server.isRunning, "\(server.output)")
        #expect(health["failed"] as? Int == hostile.count, "\(health)")
        #expect(try RawSocket(port: server.port).request("GET", "/smart-dj/profile?relative_path=" + query(served.tracks[0])).status == 200)
    }

    /// Replaces `track`'s frame file by a generated 3-hour one (uint8, 324,000 frames, 20.7 MB).
    static func writeThreeHourFrames(_ served: ServedLibrary, track: String) throws -> Int {
        let file = OutputLayout(root: served.data).visPath(key: OutputLayout.key(forRelativePath: track))
        var config = VisualizerConfig()
        config.encoding = .uint8
        let seconds = 3 * 3600.0
        let writer = try VisFrameWriter(path: file, config: config)
        let frame = (0..<64).map { Float($0 % 2) }
        let frameCount = VisFrameAnalyzer.frameCount(duration: seconds, fps: config.fps)
        for _ in 0..<frameCount { try frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) } }
        try writer.finish(duration: seconds, sourceSampleRate: 44_100, sourceChannels: 2)
        return frameCount
    }

    @Test("400 clients that never read a 3-hour track's binary frames: each has its answer's head, /health answers meanwhile and after they close")
    func nonReadingClients() throws {
        raiseOwnDescriptorLimit()
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let track = served.tracks[0]
        _ = try Self.writeThreeHourFrames(served, track: track)
        let server = try ServerProcess(data: served.data)
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
        var crowd: [RawSocket] = []
        for _ in 0..<400 {
            let socket = try RawSocket(port: server.port, receiveBuffer: 16 << 10)
            try socket.send("GET /visualizer/frames?format=binary&relative_path=\(query(track)) HTTP/1.1\r\nHost: x\r\n\r\n")
            crowd.append(socket)
        }
        // Each client has the head of its 20.7 MB answer: the server is writing to all 400 when /health is asked.
        for socket in crowd.prefix(20) {
            let head = String(decoding: try socket.receive().prefix(512), as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200") && head.lowercased().contains("content-length: 20736128"), "\(head)")
        }
        let health = try RawSocket(port: server.port, timeout: 30).request("GET", "/health")
        #expect(health.status == 200)
        crowd.removeAll()
        #expect(try RawSocket(port: server.port).request("GET", "/health").status == 200)
        #expect(server.isRunning)
    }
}
