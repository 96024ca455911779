import Foundation
import Hummingbird
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanTestSupport
import NIOCore
import Testing

/// Every JSON shape the server answers, from a live server over loopback, against docs/api.schema.json:
/// the docs cannot drift from the Codable types that make the answers.
@Suite("The server's JSON answers match docs/api.schema.json", .serialized)
struct APIContractTests {
    @Test("health, beats, waveform, frames, precompute, similar, path, bulk profiles, errors and push messages validate")
    func answersValidate() async throws {
        let schema = try APISchema()
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        // Two tracks long enough to have sound features, so that similar and path list tracks.
        let long = ["Other/long a.flac", "Other/long b.flac"]
        for (name, frequency) in zip(long, [220.0, 330.0]) {
            try AudioFileWriter.write(.sine(frequency: frequency, dBFS: -12, duration: 12, channels: 2), to: served.library + "/" + name, format: .flac16)
        }
        let options = ScanOptions(library: served.library, output: served.data, visualizer: VisualizerConfig(), profile: ProfileConfig(), jobs: 2)
        #expect(try LibraryScanner(options: options, logger: Logger(label: "test")).run().analysed == 2)
        let track = query(served.tracks[0])
        try await served.app().test(.live) { client in
            let checks: [(uri: String, method: HTTPRequest.Method, body: String?, status: HTTPResponse.Status, shape: String)] = [
                ("/health", .get, nil, .ok, "health"),
                ("/smart-dj/beats?relative_path=\(track)", .get, nil, .ok, "beats"),
                ("/smart-dj/beats?relative_path=\(track)&from=0.5&to=2", .get, nil, .ok, "beats"),
                ("/waveform?relative_path=\(track)&bins=40", .get, nil, .ok, "waveform"),
                ("/visualizer/frames?relative_path=\(track)", .get, nil, .ok, "frames"),
                ("/visualizer/precompute?relative_path=\(track)", .get, nil, .ok, "precompute"),
                ("/visualizer/precompute", .post, #"{"relative_path": "Other/four.flac"}"#, .accepted, "precompute"),
                ("/similar?relative_path=\(query(long[0]))&count=2", .get, nil, .ok, "sonic_match"),
                ("/path?from=\(query(long[0]))&to=\(query(long[1]))&count=2", .get, nil, .ok, "sonic_match"),
                ("/mix?relative_path=\(query(long[0]))&count=3&harmonic=true", .get, nil, .ok, "sonic_match"),
                ("/smart-dj/bulk-profiles?paths=\(track),Other/ghost.flac", .get, nil, .ok, "bulk_profiles"),
                ("/smart-dj/bulk-profiles", .post, #"{"paths": ["Other/four.flac"]}"#, .ok, "bulk_profiles"),
                ("/smart-dj/profile?relative_path=Other/ghost.flac", .get, nil, .notFound, "error"),
                ("/smart-dj/beats?relative_path=\(track)&from=-1", .get, nil, .badRequest, "error"),
                ("/health", .post, nil, .methodNotAllowed, "error"),
                ("/no-such-endpoint", .get, nil, .notFound, "error"),
            ]
            for check in checks {
                let body = check.body.map { ByteBuffer(string: $0) }
                try await client.execute(uri: check.uri, method: check.method, body: body) { response in
                    #expect(response.status == check.status, "\(check.method) \(check.uri): \(String(buffer: response.body))")
                    #expect(schema.problems(of: Data(buffer: response.body), as: check.shape) == [], "\(check.method) \(check.uri)")
                    if check.shape == "sonic_match" { #expect(String(buffer: response.body).contains("long b.flac"), "\(check.uri)") }
                }
            }
            // /ws/push from the start: hello, then the scan's three track_analyzed events.
            let port = try #require(client.port)
            var messages: [String] = []
            for try await text in PushSocket.messages(port: port, path: "/ws/push?after=0") {
                messages.append(text)
                if messages.count == 4 { break }
            }
            #expect(messages.first?.contains("\"hello\"") == true && messages.dropFirst().allSatisfy { $0.contains("track_analyzed") }, "\(messages)")
            for message in messages { #expect(schema.problems(of: Data(message.utf8), as: "push_message") == [], "\(message)") }
        }
        // A definition is a real check: the answers' shapes fail against each other.
        let health = try AnswerJSON.data(HealthAnswer(analyzer: "naviscan 0", library: "/m", profileCount: 1, visCount: 1, failed: 0,
                                                      visCacheSize: 0, connectedClients: 0, pending: 0, watching: false,
                                                      scanState: "off", lastScan: nil, lastScanError: nil))
        #expect(schema.problems(of: health, as: "health") == [])
        #expect(!schema.problems(of: health, as: "store_unavailable").isEmpty)
        #expect(!schema.problems(of: try AnswerJSON.data(ErrorAnswer(error: "x")), as: "precompute").isEmpty)
    }
}
