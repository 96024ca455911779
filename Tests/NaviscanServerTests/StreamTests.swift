import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NaviscanLibrary
import NaviscanServer
import NIOCore
import Testing

extension ServedLibrary {
    func app(stream: Bool = true, corsOrigin: String? = nil) throws -> some ApplicationProtocol {
        var configuration = ServerConfiguration(dataDirectory: data, port: 0)
        configuration.stream = stream
        configuration.corsOrigin = corsOrigin
        return try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server"))
    }
}

@Suite("GET /stream: the audio file with byte ranges, inside the library only", .serialized)
struct StreamTests {
    @Test("whole file, single ranges, suffixes, 416, HEAD; the bytes are the file's")
    func ranges() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let path = served.tracks[1]   // "Artist/Twö & Three.wav"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: served.library + "/" + path)))
        let uri = "/stream?relative_path=" + query(path)
        try await served.app().test(.live) { client in
            try await client.execute(uri: uri, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "audio/wav")
                #expect(response.headers[.acceptRanges] == "bytes")
                #expect(response.headers[.contentLength] == String(bytes.count))
                #expect(Array(buffer: response.body) == bytes)
            }
            for (range, expected) in [("bytes=10-19", 10...19), ("bytes=100-", 100...(bytes.count - 1)),
                                      ("bytes=-16", (bytes.count - 16)...(bytes.count - 1)),
                                      ("bytes=5-99999999", 5...(bytes.count - 1))] {
                try await client.execute(uri: uri, method: .get, headers: [.range: range]) { response in
                    #expect(response.status == .partialContent, "\(range)")
                    #expect(response.headers[.contentRange] == "bytes \(expected.lowerBound)-\(expected.upperBound)/\(bytes.count)")
                    #expect(Array(buffer: response.body) == Array(bytes[expected]), "\(range)")
                }
            }
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=\(bytes.count)-"]) { response in
                #expect(response.status == .rangeNotSatisfiable)
                #expect(response.headers[.contentRange] == "bytes */\(bytes.count)")
            }
            // Several ranges: the whole file is a valid answer.
            try await client.execute(uri: uri, method: .get, headers: [.range: "bytes=0-1,4-5"]) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == bytes.count)
            }
            try await client.execute(uri: uri, method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentLength] == String(bytes.count))
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/stream?relative_path=" + query(served.tracks[0]), method: .get) {
                #expect($0.headers[.contentType] == "audio/flac")
            }
        }
    }

    @Test("paths: a symlink out of the library is refused, one inside is served; hidden, traversal, non-audio, --no-stream")
    func paths() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let outside = served.scratch + "/secret.flac"
        try Data("not for clients".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: served.library + "/Other/escape.flac", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: served.library + "/Other/alias.flac", withDestinationPath: served.library + "/" + served.tracks[0])
        try Data("x".utf8).write(to: URL(fileURLWithPath: served.library + "/Other/.hidden.flac"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: served.library + "/Other/notes.txt"))
        try await served.app().test(.live) { client in
            let cases: [(String, HTTPResponse.Status)] = [
                ("Other/escape.flac", .forbidden), ("Other/alias.flac", .ok), ("Other/.hidden.flac", .badRequest),
                ("Other/../../secret.flac", .badRequest), ("/etc/passwd", .badRequest), ("Other/notes.txt", .unsupportedMediaType),
                ("Other/none.flac", .notFound),
            ]
            for (path, status) in cases {
                try await client.execute(uri: "/stream?relative_path=" + query(path), method: .get) { response in
                    #expect(response.status == status, "\(path)")
                    if status != .ok { #expect(!String(buffer: response.body).contains("not for clients")) }
                }
            }
        }
        try await served.app(stream: false).test(.live) { client in
            try await client.execute(uri: "/stream?relative_path=" + query(served.tracks[0]), method: .get) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("streaming is turned off"))
            }
        }
    }

    @Test("A symlink swapped between a track and a file outside the library during 4,000 requests never serves a byte of the outside file")
    func symlinkSwapRace() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let marker = Array("OUTSIDE-SECRET-".utf8)
        let outside = served.scratch + "/secret.flac"
        try Data((0..<4096).map { marker[$0 % marker.count] }).write(to: URL(fileURLWithPath: outside))
        let inside = served.library + "/" + served.tracks[0]
        let insideBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: inside)))
        let link = served.library + "/Other/swap.flac"
        let toInside = served.library + "/Other/.to-inside", toOutside = served.library + "/Other/.to-outside"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: inside)
        // Renames of ready-made links over the name: the name always exists, pointing one way or the other.
        let swapping = SwapFlag()
        let swapper = Thread {
            var n = 0
            while !swapping.stopped {
                let source = n % 2 == 0 ? toOutside : toInside
                _ = symlink(n % 2 == 0 ? outside : inside, source)
                _ = rename(source, link)
                n += 1
            }
        }
        swapper.start()
        defer { swapping.stop() }
        let statuses = try await served.app().test(.live) { client -> [HTTPResponse.Status] in
            var statuses: [HTTPResponse.Status] = []
            // The first 4 kB are asked for: the whole outside file, a small answer to move 4,000 times.
            for _ in 0..<4000 {
                let (status, body) = try await client.execute(uri: "/stream?relative_path=Other/swap.flac", method: .get,
                                                              headers: [.range: "bytes=0-4095"]) {
                    ($0.status, Array(buffer: $0.body))
                }
                #expect(!String(decoding: body, as: UTF8.self).contains("OUTSIDE-SECRET"))
                if status == .partialContent { #expect(body[...] == insideBytes.prefix(4096)) }
                statuses.append(status)
            }
            return statuses
        }
        let served200 = statuses.filter { $0 == .partialContent }.count
        let refused = statuses.filter { $0 == .forbidden || $0 == .notFound }.count
        #expect(served200 + refused == 4000)
        swapping.stop()
        // Both sides of the race were reached.
        #expect(served200 > 0 && refused > 0, "\(served200) served, \(refused) refused")
    }

    @Test("CORS headers only with --cors-origin; HEAD answers every GET endpoint like its GET, without a body")
    func corsAndHead() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let track = query(served.tracks[0])
        let endpoints = ["/health", "/smart-dj/profile?relative_path=" + track, "/smart-dj/bulk-profiles?paths=" + track,
                         "/visualizer/frames?relative_path=" + track, "/visualizer/precompute?relative_path=" + track,
                         "/stream?relative_path=" + track, "/smart-dj/profile?relative_path=none.flac",
                         "/", "/track?relative_path=" + track, "/static/track.js"]
        try await served.app().test(.live) { client in
            for uri in endpoints {
                let get = try await client.execute(uri: uri, method: .get) { ($0.status, $0.headers[.contentType]) }
                try await client.execute(uri: uri, method: .head) { response in
                    #expect(response.status == get.0, "\(uri)")
                    #expect(response.headers[.contentType] == get.1, "\(uri)")
                    #expect(response.body.readableBytes == 0, "\(uri)")
                }
            }
            try await client.execute(uri: "/health", method: .get, headers: [.origin: "https://music.example.org"]) { response in
                #expect(response.headers[.accessControlAllowOrigin] == nil)
            }
        }
        try await served.app(corsOrigin: "https://music.example.org").test(.live) { client in
            try await client.execute(uri: "/health", method: .get, headers: [.origin: "https://music.example.org"]) { response in
                #expect(response.headers[.accessControlAllowOrigin] == "https://music.example.org")
            }
            try await client.execute(uri: "/stream?relative_path=" + track, method: .options,
                                     headers: [.origin: "https://music.example.org", .accessControlRequestMethod: "GET"]) { response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowHeaders]?.contains("range") == true)
            }
        }
    }

    @Test("Range header parsing", arguments: [
        ("bytes=0-0", 100, AudioStream.Selection.part(0...0)), ("bytes=-200", 100, .part(0...99)), ("bytes=99-", 100, .part(99...99)),
        ("bytes=100-", 100, .unsatisfiable), ("bytes=-0", 100, .unsatisfiable), ("bytes=5-2", 100, .whole),
        ("items=0-5", 100, .whole), ("bytes=a-b", 100, .whole), ("bytes=0-", 0, .unsatisfiable),
    ])
    func parsing(header: String, size: Int, expected: AudioStream.Selection) {
        #expect(AudioStream.selection(range: header, size: Int64(size)) == expected)
    }
}

/// Tells the swapping thread to stop.
final class SwapFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var stopped: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func stop() { lock.lock(); value = true; lock.unlock() }
}
