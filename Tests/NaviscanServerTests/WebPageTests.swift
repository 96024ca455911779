import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NaviscanLibrary
import NaviscanServer
import NIOCore
import Testing

@Suite("the web page's HTML, script and style over HTTP", .serialized)
struct WebPageTests {
    @Test("/ lists every track, escaped, with links to its page; counts and scan state are shown")
    func libraryPage() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app().test(.live) { client in
            try await client.execute(uri: "/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                let html = String(buffer: response.body)
                #expect(html.contains("<dd id=\"count-profiles\">3</dd>"))
                #expect(html.contains("data-state=\"off\""))
                for track in served.tracks {
                    let escaped = track.replacingOccurrences(of: "&", with: "&amp;")
                    #expect(html.contains("data-path=\"\(escaped)\""), "\(track)")
                }
                // The link is percent-encoded (then HTML-escaped): a name with & stays one parameter.
                #expect(html.contains("href=\"track?relative_path=Artist/Tw%C3%B6%20%26%20Three.wav\""))
                #expect(!html.contains("Twö & Three"))
            }
        }
    }

    @Test("/track shows the profile in words and wires the player; unknown tracks are 404")
    func trackPage() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        try await served.app().test(.live) { client in
            try await client.execute(uri: "/track?relative_path=" + query(served.tracks[0]), method: .get) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                #expect(html.contains("<dt>Duration</dt><dd>0:03 (3.000 s)</dd>"))
                // A sine has no beats; the groove test in ServerTests serves a grid.
                #expect(html.contains("<dt>Beat grid</dt><dd>no beats</dd>"))
                // A lone sine is no chord progression: no key.
                #expect(html.contains("<dt>Key</dt><dd>no key (no clear harmony: drums, noise or silence)</dd>"), "\(html)")
                #expect(html.contains("<audio id=\"audio\""))
                #expect(html.contains("src=\"stream?relative_path=Artist/One.flac\""))
                #expect(html.contains("<canvas id=\"visualizer\""))
                // The crossfade ramps in words, not MixRamp's raw "dB seconds;" string.
                let ramp = try #require(html.range(of: #"<dt>Crossfade in \(level after the start\)</dt><dd>([^<]*)</dd>"#, options: .regularExpression), "\(html)")
                let words = String(html[ramp]).replacingOccurrences(of: #"<[^>]*>"#, with: "|", options: .regularExpression)
                #expect(words.range(of: #"\|−?\d+ dB in \d+\.\d\d s( · −?\d+ dB in \d+\.\d\d s)*\|$"#, options: .regularExpression) != nil, "\(words)")
                #expect(html.contains("<dt>Crossfade out (level before the end)</dt>"))
            }
            try await client.execute(uri: "/track?relative_path=Artist/none.flac", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/track?relative_path=../x.flac", method: .get) { #expect($0.status == .badRequest) }
        }
        try await served.app(stream: false).test(.live) { client in
            try await client.execute(uri: "/track?relative_path=" + query(served.tracks[0]), method: .get) { response in
                let html = String(buffer: response.body)
                #expect(!html.contains("<audio"))
                #expect(html.contains("--no-stream"))
            }
        }
    }

    @Test("/static serves the page's files by name only")
    func staticFiles() async throws {
        let served = try ServedLibrary()
        defer { served.cleanUp() }
        let assets = try #require(WebAssets.locate())
        try await served.app().test(.live) { client in
            for (name, type) in [("track.js", "text/javascript; charset=utf-8"), ("library.js", "text/javascript; charset=utf-8"),
                                 ("naviscan.css", "text/css; charset=utf-8")] {
                let expected = [UInt8](try Data(contentsOf: URL(fileURLWithPath: assets + "/" + name)))
                try await client.execute(uri: "/static/" + name, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == type)
                    #expect(Array(buffer: response.body) == expected)
                }
            }
            for name in ["library.mustache", "..%2FPackage.swift", "nothing.js"] {
                try await client.execute(uri: "/static/" + name, method: .get) { #expect($0.status == .notFound, "\(name)") }
            }
        }
    }
}
