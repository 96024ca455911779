import Foundation
import Hummingbird
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanServer
import NaviscanTestSupport
import Testing

@Suite("GET /similar, /mix and /path over loopback", .serialized)
struct SimilarityServerTests {
    @Test("Answers in sonicMatch shape, most similar first, never the track itself; 404 for an unknown or silent track; a bad count is 400")
    func similarAndPath() async throws {
        let root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-similar-serve")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let library = root + "/Music", data = root + "/data"
        for folder in ["Pads", "Buzz"] { try FileManager.default.createDirectory(atPath: library + "/" + folder, withIntermediateDirectories: true) }
        for (i, note) in [98.0, 110, 131].enumerated() {
            try AudioFileWriter.write(.pad(root: note, duration: 6), to: library + "/Pads/\(i).flac", format: .flac16,
                                      tags: [.title: "Pad \(i)", .artist: "Drone", .album: "Pads"])
            try AudioFileWriter.write(.buzz(note: 4 * note, duration: 6), to: library + "/Buzz/\(i).flac", format: .flac16)
        }
        try AudioFileWriter.write(.silence(duration: 4), to: library + "/silence.flac", format: .flac16)
        let options = ScanOptions(library: library, output: data, visualizer: nil, profile: ProfileConfig(), jobs: 2)
        _ = try LibraryScanner(options: options, logger: Logger(label: "scan")).run()
        var configuration = ServerConfiguration(dataDirectory: data, library: library, port: 0)
        configuration.pollInterval = .milliseconds(100)
        let app = try NaviscanAPI.makeApplication(configuration: configuration, logger: Logger(label: "naviscan-test-server"))
        try await app.test(.live) { client in
            try await client.execute(uri: "/similar?relative_path=Pads/0.flac&count=3", method: .get) { response in
                #expect(response.status == .ok)
                let matches = try #require(try json(response.body)["sonicMatch"] as? [[String: Any]])
                #expect(matches.count == 3)
                let paths = matches.compactMap { ($0["entry"] as? [String: Any])?["path"] as? String }
                #expect(!paths.contains("Pads/0.flac"))
                #expect(paths.prefix(2).allSatisfy { $0.hasPrefix("Pads/") }, "\(paths)")
                let similarity = matches.compactMap { $0["similarity"] as? Double }
                #expect(similarity == similarity.sorted(by: >) && similarity.allSatisfy { (0...1).contains($0) })
                let first = try #require(matches.first?["entry"] as? [String: Any])
                #expect(first["artist"] as? String == "Drone" && (first["title"] as? String)?.hasPrefix("Pad ") == true && first["isDir"] as? Bool == false)
            }
            try await client.execute(uri: "/path?from=Pads/0.flac&to=Buzz/2.flac&count=4", method: .get) { response in
                #expect(response.status == .ok)
                let paths = try #require(try json(response.body)["sonicMatch"] as? [[String: Any]]).compactMap { ($0["entry"] as? [String: Any])?["path"] as? String }
                #expect(paths.count == 4 && paths.first == "Pads/0.flac" && paths.last == "Buzz/2.flac", "\(paths)")
            }
            try await client.execute(uri: "/mix?relative_path=Pads/0.flac&count=4&harmonic=true", method: .get) { response in
                #expect(response.status == .ok)
                let matches = try #require(try json(response.body)["sonicMatch"] as? [[String: Any]])
                let paths = matches.compactMap { ($0["entry"] as? [String: Any])?["path"] as? String }
                #expect(paths.count == 4 && paths.first == "Pads/0.flac" && Set(paths).count == 4, "\(paths)")
                // Every item says its key: Camelot, or null for a track without one.
                #expect(matches.allSatisfy { item in item.keys.contains("key") && (item["key"] is NSNull || MusicalKey(item["key"] as? String ?? "") != nil) }, "\(matches)")
            }
            for (uri, status) in [("/similar?relative_path=nothing.flac", HTTPResponse.Status.notFound), ("/similar?relative_path=silence.flac", .notFound),
                                  ("/mix?relative_path=Pads/0.flac&count=1", .badRequest), ("/mix?relative_path=Pads/0.flac&harmonic=maybe", .badRequest),
                                  ("/mix?relative_path=silence.flac", .notFound),
                                  ("/similar?relative_path=Pads/0.flac&count=0", .badRequest), ("/path?from=Pads/0.flac&to=Buzz/0.flac&count=1", .badRequest),
                                  ("/similar", .badRequest)] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == status, "\(uri)")
                    #expect(!((try? json(response.body)["error"] as? String) ?? "").isEmpty, "\(uri)")
                }
            }
        }
    }
}
