import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanTestSupport
import NIOCore
import Testing

/// A scanned three-track library and a server over it (scanned once per test process, copied per test).
struct ServedLibrary {
    let scratch: String
    let library: String
    let data: String
    let tracks = ServedLibrary.trackPaths

    static let trackPaths = ["Artist/One.flac", "Artist/Twö & Three.wav", "Other/four.flac"]

    private static let template = ScannedTemplate(prefix: "naviscan-serve-template") { root in
        let library = root + "/Music"
        for dir in ["Artist", "Other"] { try FileManager.default.createDirectory(atPath: library + "/" + dir, withIntermediateDirectories: true) }
        try AudioFileWriter.write(.sine(frequency: 440, dBFS: -12, duration: 3, channels: 2), to: library + "/" + trackPaths[0], format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 1000, dBFS: -20, duration: 2, sampleRate: 48_000), to: library + "/" + trackPaths[1], format: .wav16)
        try AudioFileWriter.write(.sweep(from: 100, to: 5000, duration: 2), to: library + "/" + trackPaths[2], format: .flac16)
        let options = ScanOptions(library: library, output: root + "/data", visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 2)
        let summary = try LibraryScanner(options: options, logger: Logger(label: "test")).run()
        guard summary.analysed == 3 else { throw ScannedTemplate.Failure(description: "the scan analysed \(summary.analysed) of 3 tracks") }
    }

    init() throws {
        scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-serve")
        library = scratch + "/Music"
        data = scratch + "/data"
        try Self.template.copy(into: scratch)
    }

    func app(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> some ApplicationProtocol {
        var configuration = ServerConfiguration(dataDirectory: data, port: 0)
        configuration.pollInterval = .milliseconds(100)
        configure(&configuration)
        return try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server"))
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: scratch) }
}

func json(_ buffer: ByteBuffer) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(buffer: buffer)) as? [String: Any])
}

func query(_ path: String) -> String {
    path.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~/")))!
}

@Suite("naviscan serve, over real HTTP on loopback", .serialized)
struct ServerTests {
    @Test("The server's own answers name the config file's settings, never a command-line flag (naviscan serve words them)")
    func answersNameSettings() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app { $0.access.token = String(repeating: "k", count: 32) }.test(.live) { client in
            for (uri, setting) in [("/stream?relative_path=Other/four.flac", "serve.token"),
                                   ("/smart-dj/profile?relative_path=/music/Other/four.flac", "serve.navidrome-music-folder"),
                                   ("/smart-dj/profile?id=0123abcd", "serve.navidrome-db")] {
                try await client.execute(uri: uri, method: .get) { response in
                    let message = try json(response.body)["error"] as? String ?? ""
                    #expect(message.contains(setting) && !message.contains("--"), "\(uri): \(message)")
                }
            }
        }
    }

    @Test("health, profile, 404s, traversal attempts")
    func profilesAndErrors() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app().test(.live) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                let body = try json(response.body)
                #expect(body["status"] as? String == "ok")
                #expect(body["profile_count"] as? Int == 3 && body["vis_count"] as? Int == 3)
                #expect((body["vis_cache_size"] as? Int ?? 0) > 3 * 128)
                #expect(body["connected_clients"] as? Int == 0)
                #expect(body["analyzer"] as? String == "naviscan \(NaviscanVersion.version)")
                #expect(body["library"] as? String == served.library)
            }
            let stored = try String(contentsOfFile: OutputLayout(root: served.data).profilePath(key: OutputLayout.key(forRelativePath: served.tracks[1])), encoding: .utf8)
            try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(served.tracks[1]), method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                #expect(String(buffer: response.body) == stored)   // the same JSON as profiles/…/<key>.json
            }
            // ReplayGain in OpenSubsonic's shape; the two tracks of the folder "Artist" share an album gain.
            var albumGains: [Double] = []
            for track in served.tracks.prefix(2) {
                try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(track), method: .get) { response in
                    let body = try json(response.body)
                    let gain = try #require(body["replay_gain"] as? [String: Any])
                    #expect(Set(gain.keys) == ["trackGain", "trackPeak", "albumGain", "albumPeak", "baseGain", "fallbackGain"])
                    let album = try #require(body["album"] as? [String: Any])
                    #expect(album["key"] as? String == "folder: Artist" && album["tracks"] as? Int == 2)
                    albumGains.append(try #require(gain["albumGain"] as? Double))
                    #expect(gain["trackGain"] as? Double != gain["albumGain"] as? Double)
                }
            }
            #expect(albumGains.count == 2 && albumGains[0] == albumGains[1])
            try await client.execute(uri: "/smart-dj/profile?relative_path=Artist/missing.flac", method: .get) { response in
                #expect(response.status == .notFound)
                let errorBody = try json(response.body)
                #expect(errorBody["error"] is String)
            }
            for attempt in ["../etc/passwd", "/etc/passwd", "Artist/../../etc/passwd", "Artist//One.flac", "./Artist/One.flac", ""] {
                try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(attempt), method: .get) { response in
                    #expect(response.status == .badRequest, "\(attempt)")
                    let errorBody = try json(response.body)
                #expect(errorBody["error"] is String)
                }
            }
            try await client.execute(uri: "/no/such/route", method: .get) { response in
                #expect(response.status == .notFound)
                let errorBody = try json(response.body)
                #expect(errorBody["error"] != nil)
            }
        }
    }

    @Test("beats: the profile's grid written out, a window of it, an empty grid for a tone, bad bounds refused")
    func beats() async throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-beats")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let bpm = 120.0
        let truth = stride(from: 0.5, to: 24, by: 60 / bpm).map { $0 }
        try FileManager.default.createDirectory(atPath: scratch + "/Music", withIntermediateDirectories: true)
        try AudioFileWriter.write(.barGroove(beats: truth, beatsPerBar: 4, duration: 24), to: scratch + "/Music/groove.flac", format: .flac16)
        try AudioFileWriter.write(.sine(frequency: 440, dBFS: -12, duration: 10), to: scratch + "/Music/tone.wav", format: .wav16)
        let options = ScanOptions(library: scratch + "/Music", output: scratch + "/data", visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 2)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 2)
        let app = try NaviscanAPI.makeApplication(configuration: ServerConfiguration(dataDirectory: scratch + "/data", port: 0),
                                                  logger: Logger(label: "naviscan-test-server"))
        try await app.test(.live) { client in
            var profileGrid: [String: Any] = [:]
            try await client.execute(uri: "/smart-dj/profile?relative_path=groove.flac", method: .get) { response in
                profileGrid = try json(response.body)["beat_grid"] as? [String: Any] ?? [:]
            }
            try await client.execute(uri: "/smart-dj/beats?relative_path=groove.flac", method: .get) { response in
                #expect(response.status == .ok)
                let body = try json(response.body)
                let beats = body["beats"] as? [Double] ?? []
                #expect(beats.count == profileGrid["beat_count"] as? Int)
                #expect(zip(beats, beats.dropFirst()).allSatisfy { $1 > $0 })
                #expect(beats.filter { t in truth.contains { abs($0 - t) <= 0.07 } }.count >= beats.count * 9 / 10)
                #expect(body["meter"] as? Int == 4 && (body["downbeats"] as? [Double])?.count == (beats.count + 3) / 4)
                #expect(abs((body["interval"] as? Double ?? 0) - 0.5) < 0.003)
            }
            try await client.execute(uri: "/smart-dj/beats?relative_path=groove.flac&from=10&to=12", method: .get) { response in
                let beats = try json(response.body)["beats"] as? [Double] ?? []
                #expect(beats.count >= 4 && beats.count <= 5 && beats.allSatisfy { $0 >= 10 && $0 <= 12 }, "\(beats)")
            }
            try await client.execute(uri: "/smart-dj/beats?relative_path=tone.wav", method: .get) { response in
                let body = try json(response.body)
                #expect((body["beats"] as? [Double])?.isEmpty == true && body["first_beat"] is NSNull)
            }
            try await client.execute(uri: "/track?relative_path=groove.flac", method: .get) { response in
                let html = String(buffer: response.body)
                #expect(html.contains("beats (steady), 4 beats to the bar"), "the track page names the grid")
            }
            try await client.execute(uri: "/smart-dj/beats?relative_path=groove.flac&from=-1", method: .get) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/smart-dj/beats?relative_path=nothing.flac", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test("waveform: N bins of peak and RMS in [0, 1], the .dat file with ETag, bad bins refused")
    func waveform() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let track = served.tracks[0]   // a −12 dBFS sine, 3 s
        let dat = OutputLayout(root: served.data).waveformPath(key: OutputLayout.key(forRelativePath: track))
        try await served.app().test(.live) { client in
            for bins in [8, 150, 4096] {
                try await client.execute(uri: "/waveform?relative_path=\(query(track))&bins=\(bins)", method: .get) { response in
                    #expect(response.status == .ok)
                    let body = try json(response.body)
                    #expect(Set(body.keys) == ["relative_path", "duration", "bins", "peak", "rms"])
                    #expect(body["relative_path"] as? String == track && body["bins"] as? Int == bins)
                    #expect(abs((body["duration"] as? Double ?? 0) - 3) < 0.01)
                    let peak = try #require(body["peak"] as? [Double]), rms = try #require(body["rms"] as? [Double])
                    #expect(peak.count == bins && rms.count == bins)
                    let amplitude = TestSignal.amplitude(dBFS: -12)
                    #expect(peak.allSatisfy { abs($0 - amplitude) < 0.01 }, "\(peak.prefix(8))")
                    #expect(rms.allSatisfy { abs($0 - amplitude / 2.squareRoot()) < 0.01 }, "\(rms.prefix(8))")
                }
            }
            for bad in ["7", "4097", "many"] {
                try await client.execute(uri: "/waveform?relative_path=\(query(track))&bins=\(bad)", method: .get) { response in
                    #expect(response.status == .badRequest)
                    let errorBody = try json(response.body)
                    #expect(errorBody["error"] is String)
                }
            }
            try await client.execute(uri: "/waveform?relative_path=Artist/missing.flac&bins=20", method: .get) { response in
                #expect(response.status == .notFound)
            }
            var etag = ""
            try await client.execute(uri: "/waveform?relative_path=\(query(track))&format=dat", method: .get) { response in
                #expect(response.status == .ok)
                let file = try Data(contentsOf: URL(fileURLWithPath: dat))
                #expect(Data(buffer: response.body) == file)
                etag = try #require(response.headers[.eTag])
            }
            try await client.execute(uri: "/waveform?relative_path=\(query(track))&format=dat", method: .get, headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
            }
        }
    }

    @Test("bulk profiles: comma list, repeated parameters, a POSTed array of 1,000 paths")
    func bulk() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app().test(.live) { client in
            // One paths= is the companion API's comma list; repeated paths= are one path each, never split.
            let list = "/smart-dj/bulk-profiles?paths=" + query(served.tracks[0]) + "," + query("Nope/x.mp3") + "," + query(served.tracks[2])
            let repeated = "/smart-dj/bulk-profiles?paths=" + query(served.tracks[0]) + "&paths=" + query("Nope/x.mp3") + "&paths=" + query(served.tracks[2])
            for uri in [list, repeated] {
                try await client.execute(uri: uri, method: .get) { response in
                    let body = try json(response.body)
                    #expect(Set((body["profiles"] as? [String: Any] ?? [:]).keys) == [served.tracks[0], served.tracks[2]])
                    #expect(body["missing"] as? [String] == ["Nope/x.mp3"])
                }
            }
            var paths = (0..<997).map { "Somewhere/track \($0).mp3" }
            paths += served.tracks
            let payload = ByteBuffer(data: try JSONSerialization.data(withJSONObject: paths))
            try await client.execute(uri: "/smart-dj/bulk-profiles", method: .post, body: payload) { response in
                #expect(response.status == .ok)
                let body = try json(response.body)
                let profiles = try #require(body["profiles"] as? [String: [String: Any]])
                #expect(Set(profiles.keys) == Set(served.tracks))
                #expect(profiles[served.tracks[0]]?["relative_path"] as? String == served.tracks[0])
                #expect((body["missing"] as? [String])?.count == 997)
            }
            let traversal = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["paths": ["ok.mp3", "../secret"]]))
            try await client.execute(uri: "/smart-dj/bulk-profiles", method: .post, body: traversal) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    @Test("visualizer frames as JSON, and as the raw file: byte for byte, Content-Length, ETag")
    func frames() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let file = OutputLayout(root: served.data).visPath(key: OutputLayout.key(forRelativePath: served.tracks[0]))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        try await served.app().test(.live) { client in
            try await client.execute(uri: "/visualizer/frames?relative_path=" + query(served.tracks[0]), method: .get) { response in
                let body = try json(response.body)
                #expect(body["relative_path"] as? String == served.tracks[0])
                #expect(body["fps"] as? Double == 30 && body["band_count"] as? Int == 64)
                #expect(body["frame_count"] as? Int == 90 && body["duration"] as? Double == 3)
                let frames = try #require(body["frames"] as? [[Double]])
                #expect(frames.count == 90 && frames.allSatisfy { $0.count == 64 && $0.allSatisfy { $0 >= 0 && $0 <= 1 } })
                // The same values as the mapped file, to the 4 decimals the JSON carries.
                let buffer = try VisFrameBuffer(path: file)
                var frame = [Float](repeating: 0, count: 64)
                buffer.copyFrame(at: 45, into: &frame)
                #expect(zip(frames[45], frame).allSatisfy { abs($0 - Double($1)) <= 0.00005 })
            }
            var etag = ""
            try await client.execute(uri: "/visualizer/frames?relative_path=" + query(served.tracks[0]), method: .get,
                                     headers: [.accept: "application/octet-stream"]) { response in
                #expect(response.status == .ok)
                #expect(Data(buffer: response.body) == bytes)
                #expect(response.headers[.contentLength] == "\(bytes.count)")
                etag = try #require(response.headers[.eTag])
            }
            try await client.execute(uri: "/visualizer/frames?format=binary&relative_path=" + query(served.tracks[0]), method: .get,
                                     headers: [.ifNoneMatch: etag]) { response in
                #expect(response.status == .notModified)
            }
            try await client.execute(uri: "/visualizer/frames?relative_path=Artist/none.flac", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test("precompute answers 202, analyses in the background, and /ws/push announces it")
    func precomputeAndPush() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        // A track added after the scan.
        let added = "Other/new track.flac"
        try AudioFileWriter.write(.sine(frequency: 660, duration: 2, channels: 2), to: served.library + "/" + added, format: .flac16)
        try await served.app().test(.live) { client in
            let port = try #require(client.port)
            let received = EventLog()
            let socket = Task {
                for try await text in PushSocket.messages(port: port, path: "/ws/push") {
                    await received.append(text)
                    if await received.contains(added) { return }
                }
            }
            // Wait until the client is connected.
            for _ in 0..<100 {
                let connected = try await client.execute(uri: "/health", method: .get) { try json($0.body)["connected_clients"] as? Int }
                if connected == 1 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(added), method: .get) { #expect($0.status == .notFound) }
            let body = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["relative_path": added]))
            try await client.execute(uri: "/visualizer/precompute", method: .post, body: body) { response in
                #expect(response.status == .accepted)
            }
            for attempt in ["../x.flac", "/abs.flac"] {
                let bad = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["relative_path": attempt]))
                try await client.execute(uri: "/visualizer/precompute", method: .post, body: bad) { #expect($0.status == .badRequest) }
            }
            let missing = ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["relative_path": "Other/ghost.flac"]))
            try await client.execute(uri: "/visualizer/precompute", method: .post, body: missing) { #expect($0.status == .notFound) }

            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, !(await received.contains(added)) { try await Task.sleep(for: .milliseconds(50)) }
            let events = await received.messages
            #expect(events.contains { $0.contains("\"event\":\"track_analyzed\"") && $0.contains(added) }, "\(events)")
            socket.cancel()
            try await client.execute(uri: "/smart-dj/profile?relative_path=" + query(added), method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/visualizer/frames?relative_path=" + query(added), method: .get) { response in
                let framesBody = try json(response.body)
                #expect(framesBody["frame_count"] as? Int == 60)
            }
        }
    }
}

actor EventLog {
    var messages: [String] = []
    func append(_ m: String) { messages.append(m) }
    func contains(_ path: String) -> Bool { messages.contains { $0.contains(path) } }
}
