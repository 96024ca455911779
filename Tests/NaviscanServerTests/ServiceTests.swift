import Foundation
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

/// `naviscan serve` run the way a self-hoster runs it: the real executable, over loopback.
@Suite("serve as a service: a first start on any library, a token off loopback, a sub-path, a store that comes and goes", .serialized)
struct ServiceTests {
    struct Scratch {
        let root: String
        var library: String { root + "/Music" }
        var data: String { root + "/data" }

        /// The demo library scanned by the executable, once per test process.
        private static let scanned = ScannedTemplate(prefix: "naviscan-service-template") { root in
            try FileManager.default.copyItem(atPath: FixturePaths.fixture("demo"), toPath: root + "/Music")
            let scan = try NaviscanProcess.run(["scan", root + "/Music", "--out", root + "/data", "--quiet"])
            guard scan.status == 0 else { throw ScannedTemplate.Failure(description: "naviscan scan exited \(scan.status): \(scan.stderr)") }
        }

        /// The demo library, not scanned; `scanned: true`: with its store and outputs.
        init(scanned: Bool = false) throws {
            root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-service")
            if scanned {
                try Self.scanned.copy(into: root)
            } else {
                try FileManager.default.copyItem(atPath: FixturePaths.fixture("demo"), toPath: library)
            }
        }

        func scan() throws {
            let scan = try NaviscanProcess.run(["scan", library, "--out", data, "--quiet"])
            #expect(scan.status == 0, "\(scan.stderr)")
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    static func get(_ server: ServerProcess, _ target: String, headers: [String: String] = [:]) throws -> RawSocket.Response {
        try RawSocket(port: server.port).request("GET", target, headers: headers)
    }

    static func json(_ response: RawSocket.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// Polls until `ready` holds or `seconds` pass; true when it held.
    static func eventually(seconds: Double, _ ready: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try ready() { return true }
            usleep(200_000)
        }
        return false
    }

    @Test("A library never scanned: serve creates the store, answers /health at once and serves a profile within a minute")
    func firstStart() throws {
        let s = try Scratch()
        defer { s.remove() }
        let server = try ServerProcess(arguments: ["--library", s.library, "--out", s.data])
        defer { server.stop() }
        let health = try Self.get(server, "/health")
        #expect(health.status == 200, "\(server.output)")
        #expect(Self.json(health)["status"] as? String == "ok")
        let served = try Self.eventually(seconds: 60) {
            try Self.get(server, "/smart-dj/profile?relative_path=groove_120bpm.mp3").status == 200
        }
        #expect(served, "\(server.output)")
        let profile = Self.json(try Self.get(server, "/smart-dj/profile?relative_path=groove_120bpm.mp3"))
        #expect((profile["bpm"] as? Double).map { abs($0 - 120) < 2 } == true, "\(profile)")
        let recorded = try Self.eventually(seconds: 30) {
            try LibraryStore(path: OutputLayout(root: s.data).databasePath).lastScan()?.by == ScanLock.Owner.watch.rawValue
        }
        #expect(recorded, "the first scan records itself as serve's")
    }

    @Test("Off loopback: a token is made once (mode 600); /stream, the page and writes answer 401 without it, 200 with it")
    func tokenOffLoopback() throws {
        let s = try Scratch(scanned: true)
        defer { s.remove() }
        var server: ServerProcess? = try ServerProcess(arguments: ["--out", s.data, "--host", "0.0.0.0", "--no-watch"])
        let tokenFile = s.data + "/token"
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count >= 40)
        let mode = (try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        let first = try #require(server)
        #expect(first.output.contains(token), "the new token is shown once")
        let track = "relative_path=groove_120bpm.mp3"

        for target in ["/stream?\(track)", "/", "/track?\(track)", "/static/naviscan.css"] {
            let refused = try Self.get(first, target)
            #expect(refused.status == 401, "\(target)")
            #expect(String(decoding: refused.body, as: UTF8.self).contains("access token"), "\(target)")
            #expect(try Self.get(first, target, headers: ["Authorization": "Bearer \(token)"]).status == 200, "\(target)")
            #expect(try Self.get(first, target, headers: ["Authorization": "Bearer \(token.dropLast())x"]).status == 401, "\(target)")
        }
        // A browser gets a page, not Markdown: what the token is, where it is kept, a field to give it
        // that comes back to the page asked for.
        let page = String(decoding: try Self.get(first, "/track?\(track)").body, as: UTF8.self)
        #expect(page.contains("<h1>Access token needed</h1>") && page.contains("<code>token</code>") && !page.contains("`"), "\(page)")
        #expect(page.contains("<form method=\"get\" action=\"/track\"><input type=\"hidden\" name=\"relative_path\" value=\"groove_120bpm.mp3\">"), "\(page)")
        #expect(page.contains("<input type=\"password\" name=\"token\""))
        // naviscan serve words the server's answer with its own flag and variable.
        let refusal = Self.json(try Self.get(first, "/stream?\(track)"))["error"] as? String ?? ""
        #expect(refusal.contains("--token, NAVISCAN_SERVE_TOKEN or 'serve.token' in the config file"), "\(refusal)")
        let write = try RawSocket(port: first.port).request("POST", "/visualizer/precompute", headers: ["Content-Type": "application/json"],
                                                           body: Array(#"{"relative_path": "groove_120bpm.mp3"}"#.utf8))
        #expect(write.status == 401)
        // Open for the mobile app and for health checks.
        #expect(try Self.get(first, "/smart-dj/profile?\(track)").status == 200)
        #expect(try Self.get(first, "/health").status == 200)

        // The browser: ?token= once sets the cookie and redirects to the page without it.
        let opened = try Self.get(first, "/track?\(track)&token=\(token)")
        #expect(opened.status == 303)
        #expect(opened.headers["location"] == "/track?\(track)")
        let cookie = try #require(opened.headers["set-cookie"])
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let pair = String(cookie.split(separator: ";")[0])
        #expect(try Self.get(first, "/track?\(track)", headers: ["Cookie": pair]).status == 200)
        #expect(try Self.get(first, "/stream?\(track)", headers: ["Cookie": pair, "Range": "bytes=0-99"]).status == 206)
        first.stop()
        #expect(!first.output.components(separatedBy: token).dropFirst(2).contains { _ in true }, "the token is printed once, never logged")
        server = nil

        // The next start keeps the token and does not show it again; --protect-companion closes the reads too.
        let again = try ServerProcess(arguments: ["--out", s.data, "--host", "0.0.0.0", "--no-watch", "--protect-companion"])
        defer { again.stop() }
        #expect(try Self.get(again, "/smart-dj/profile?\(track)").status == 401)
        #expect(try Self.get(again, "/smart-dj/profile?\(track)", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        #expect(try Self.get(again, "/health").status == 200)
        #expect(!again.output.contains(token), "\(again.output)")
    }

    @Test("A token file others may read: made 600 with one line on stderr when naviscan owns it; refused, naming the chmod to run, when it does not")
    func tokenFileOpenToOthers() throws {
        let s = try Scratch(scanned: true)
        defer { s.remove() }
        let tokenFile = s.data + "/token"
        let token = "an-access-token-kept-by-hand-0123456789"
        try (token + "\n").write(toFile: tokenFile, atomically: false, encoding: .utf8)
        func mode() -> Int? {   // of the file itself, through a link
            var st = stat()
            return stat(tokenFile, &st) == 0 ? Int(st.st_mode & 0o777) : nil
        }
        #expect(chmod(tokenFile, 0o644) == 0)

        let server = try ServerProcess(arguments: ["--out", s.data, "--host", "0.0.0.0", "--no-watch"])
        #expect(mode() == 0o600)
        #expect(server.output.contains("the access token file \(tokenFile) was open to other users (mode 644); made it readable by its owner only (mode 600)"), "\(server.output)")
        #expect(try Self.get(server, "/stream?relative_path=groove_120bpm.mp3", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        server.stop()

        // A file of another user: naviscan may not change it, so it does not start.
        #expect(chmod(tokenFile, 0o644) == 0)
        if geteuid() == 0 {
            #expect(chown(tokenFile, 65534, 65534) == 0)
        } else {
            // Not root: the token file is a link to a file root owns that others may read.
            try FileManager.default.removeItem(atPath: tokenFile)
            try FileManager.default.createSymbolicLink(atPath: tokenFile, withDestinationPath: "/etc/passwd")
        }
        // ServerProcess throws, with serve's standard error, when serve exits instead of listening.
        let refusal: String
        do {
            let started = try ServerProcess(arguments: ["--out", s.data, "--host", "0.0.0.0", "--no-watch"])
            started.stop()
            refusal = "serve started: \(started.output)"
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal.contains("the access token file \(tokenFile) may be read or written by other users (mode 644)")
            && refusal.contains("run `chmod 600 \(tokenFile)` as its owner"), "\(refusal)")
        #expect(mode() == 0o644)
    }

    @Test("--base-path: the page and every asset it names load under the prefix, with or without a proxy stripping it")
    func basePath() throws {
        let s = try Scratch(scanned: true)
        defer { s.remove() }
        let server = try ServerProcess(arguments: ["--out", s.data, "--no-watch", "--base-path", "/naviscan/"])
        defer { server.stop() }
        let bare = try Self.get(server, "/naviscan")
        #expect(bare.status == 308 && bare.headers["location"] == "/naviscan/")
        for page in ["/naviscan/", "/naviscan/track?relative_path=groove_120bpm.mp3"] {
            let response = try Self.get(server, page)
            #expect(response.status == 200, "\(page)")
            let html = String(decoding: response.body, as: UTF8.self)
            #expect(html.contains("<base href=\"/naviscan/\">"), "\(page)")
            // Every link, script, style and media URL is relative, so it resolves under the base.
            let body = html.replacingOccurrences(of: "<base href=\"/naviscan/\">", with: "")
            let urls = body.matches(of: #/(?:href|src)="([^"]*)"/#).map { String($0.output.1) }
            #expect(!urls.isEmpty)
            for url in urls where !url.hasPrefix("data:") {
                #expect(!url.hasPrefix("/") && !url.contains("://"), "\(page): \(url)")
                let target = "/naviscan/" + (url == "./" ? "" : url.replacingOccurrences(of: "&amp;", with: "&"))
                #expect(try Self.get(server, target).status == 200, "\(page): \(target)")
            }
        }
        // A proxy that strips the prefix reaches the same routes.
        #expect(try Self.get(server, "/health").status == 200)
        #expect(try Self.get(server, "/naviscan/health").status == 200)
        let script = String(decoding: try Self.get(server, "/naviscan/static/library.js").body, as: UTF8.self)
        #expect(script.contains("document.baseURI") && !script.contains("\"/"), "the push socket follows the base")
    }

    @Test("Paths players send: Navidrome's tag-built path (409 when it names two tracks), its real paths under a mapped folder, commas and + in queries")
    func pathsPlayersSend() throws {
        let s = try Scratch()
        defer { s.remove() }
        for folder in ["A", "B"] {
            try FileManager.default.createDirectory(atPath: s.library + "/" + folder, withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("formats/tagged.flac"), toPath: s.library + "/A/one.flac")
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("formats/tagged.mp3"), toPath: s.library + "/A/one.mp3")
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("formats/tagged.mp3"), toPath: s.library + "/B/copy.mp3")
        try FileManager.default.copyItem(atPath: s.library + "/ambient_pad.ogg", toPath: s.library + "/a, b+c.ogg")
        try s.scan()
        func encoded(_ path: String) -> String { path.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "/-._~"))) ?? path }

        let server = try ServerProcess(arguments: ["--out", s.data, "--no-watch", "--navidrome-music-folder", "/music"])
        defer { server.stop() }
        // Navidrome's default: Album Artist/Album/DD-TT - Title.ext from the tags.
        let built = "Various Artists/Known Signals/01-03 - Sine à 997 Hz"
        for endpoint in ["/smart-dj/profile", "/visualizer/frames", "/waveform"] {
            let response = try Self.get(server, "\(endpoint)?relative_path=" + encoded(built + ".flac"))
            #expect(response.status == 200, "\(endpoint)")
        }
        let profile = Self.json(try Self.get(server, "/smart-dj/profile?relative_path=" + encoded(built + ".flac")))
        #expect(profile["relative_path"] as? String == "A/one.flac", "\(profile)")
        let ambiguous = try Self.get(server, "/smart-dj/profile?relative_path=" + encoded(built + ".mp3"))
        #expect(ambiguous.status == 409)
        #expect(Self.json(ambiguous)["candidates"] as? [String] == ["A/one.mp3", "B/copy.mp3"], "\(Self.json(ambiguous))")
        // "Report Real Path": Navidrome's absolute path, under its music folder.
        #expect(try Self.get(server, "/smart-dj/profile?relative_path=/music/A/one.flac").status == 200)
        #expect(try Self.get(server, "/smart-dj/profile?relative_path=/elsewhere/A/one.flac").status == 400)
        // A comma and a plus in a name: %2C inside one paths= value, repeated paths= never split, + is a space.
        let bulk = Self.json(try Self.get(server, "/smart-dj/bulk-profiles?paths=a%2C%20b%2Bc.ogg,groove_120bpm.mp3"))
        #expect((bulk["profiles"] as? [String: Any])?.keys.sorted() == ["a, b+c.ogg", "groove_120bpm.mp3"], "\(bulk)")
        let repeated = Self.json(try Self.get(server, "/smart-dj/bulk-profiles?paths=a,+b%2Bc.ogg&paths=groove_120bpm.mp3"))
        #expect((repeated["profiles"] as? [String: Any])?.keys.sorted() == ["a, b+c.ogg", "groove_120bpm.mp3"], "\(repeated)")
        #expect(try Self.get(server, "/smart-dj/profile?relative_path=a,+b%2Bc.ogg").status == 200)
        #expect(try Self.get(server, "/stream?relative_path=a,+b%2Bc.ogg").status == 200)
    }

    @Test("Navidrome song IDs: with --navidrome-db, id=ID (and an ID in a bulk list) finds the track on every endpoint, for Navidrome's relative and older absolute paths; plain 404s without it or for an unknown ID; a file that is not Navidrome's database stops serve with a plain message")
    func navidromeSongIDs() throws {
        let s = try Scratch()
        defer { s.remove() }
        try FileManager.default.createDirectory(atPath: s.library + "/A", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: FixturePaths.fixture("formats/tagged.flac"), toPath: s.library + "/A/one.flac")
        try s.scan()
        // Navidrome's tables as 0.55 and later have them (paths relative to the library folder), plus one
        // song stored the way earlier versions did (absolute, under the music folder).
        let navidrome = s.root + "/navidrome.db"
        let made = try NaviscanProcess.run(["-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute("CREATE TABLE library (id integer primary key autoincrement, name varchar not null, path varchar not null)")
            db.execute("CREATE TABLE media_file (id varchar(255) not null primary key, path varchar(255) default '' not null, title varchar(255), library_id integer not null default 1)")
            db.execute("INSERT INTO library (id, name, path) VALUES (1, 'Music Library', '/music')")
            db.execute("INSERT INTO media_file (id, path, title, library_id) VALUES ('3Lk9wQxZ0b7TnV2mRs8eYp', 'A/one.flac', 'Sine', 1)")
            db.execute("INSERT INTO media_file (id, path, title, library_id) VALUES ('9f1c6d3e0a2b4c5d8e7f6a5b4c3d2e1f', '/music/groove_120bpm.mp3', 'Groove', 1)")
            db.execute("INSERT INTO media_file (id, path, title, library_id) VALUES ('outside', '/srv/other/x.mp3', 'X', 1)")
            db.commit()
            """, navidrome], program: "/usr/bin/python3")
        try #require(made.status == 0, "\(made.stderr)")

        let server = try ServerProcess(arguments: ["--library", s.library, "--out", s.data, "--no-watch", "--navidrome-db", navidrome])
        defer { server.stop() }
        for endpoint in ["/smart-dj/profile", "/visualizer/frames", "/waveform", "/stream", "/track"] {
            #expect(try Self.get(server, "\(endpoint)?id=3Lk9wQxZ0b7TnV2mRs8eYp").status == 200, "\(endpoint)")
            #expect(try Self.get(server, "\(endpoint)?id=9f1c6d3e0a2b4c5d8e7f6a5b4c3d2e1f").status == 200, "\(endpoint)")
        }
        #expect(Self.json(try Self.get(server, "/smart-dj/profile?id=3Lk9wQxZ0b7TnV2mRs8eYp"))["relative_path"] as? String == "A/one.flac")
        let bulk = Self.json(try Self.get(server, "/smart-dj/bulk-profiles?paths=3Lk9wQxZ0b7TnV2mRs8eYp,ambient_pad.ogg,nothing"))
        #expect((bulk["profiles"] as? [String: Any])?.keys.sorted() == ["3Lk9wQxZ0b7TnV2mRs8eYp", "ambient_pad.ogg"], "\(bulk)")
        #expect(bulk["missing"] as? [String] == ["nothing"])
        let unknown = try Self.get(server, "/smart-dj/profile?id=nope")
        #expect(unknown.status == 404)
        #expect((Self.json(unknown)["error"] as? String ?? "").contains("no song nope in Navidrome's database"), "\(Self.json(unknown))")
        let outside = try Self.get(server, "/smart-dj/profile?id=outside")
        #expect(outside.status == 404 && (Self.json(outside)["error"] as? String ?? "").contains("--navidrome-music-folder"), "\(Self.json(outside))")
        server.stop()

        let plain = try ServerProcess(arguments: ["--library", s.library, "--out", s.data, "--no-watch"])
        defer { plain.stop() }
        let without = try Self.get(plain, "/smart-dj/profile?id=3Lk9wQxZ0b7TnV2mRs8eYp")
        #expect(without.status == 404 && (Self.json(without)["error"] as? String ?? "").contains("--navidrome-db"), "\(Self.json(without))")
        plain.stop()

        let wrong = try NaviscanProcess.run(["serve", "--library", s.library, "--out", s.data, "--no-watch", "--port", "0",
                                             "--navidrome-db", OutputLayout(root: s.data).databasePath])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("is not Navidrome's database"), "\(wrong.stderr)")
    }

    @Test("The store's folder moved away and back: /health says 503 meanwhile, then everything answers again; nothing is marked damaged")
    func storeOutageHeals() throws {
        let s = try Scratch(scanned: true)
        defer { s.remove() }
        let before = try LibraryStore(path: OutputLayout(root: s.data).databasePath).allTracks()
        let server = try ServerProcess(arguments: ["--library", s.library, "--out", s.data])
        defer { server.stop() }
        let track = "relative_path=groove_120bpm.mp3"
        #expect(try Self.get(server, "/health").status == 200)
        #expect(try Self.get(server, "/visualizer/frames?\(track)").status == 200)

        let away = s.root + "/data.away"
        try FileManager.default.moveItem(atPath: s.data, toPath: away)
        let down = try Self.eventually(seconds: 10) { try Self.get(server, "/health").status == 503 }
        #expect(down, "\(server.output)")
        #expect(Self.json(try Self.get(server, "/health"))["status"] as? String == "store_unavailable")
        for target in ["/visualizer/frames?\(track)", "/smart-dj/profile?\(track)", "/waveform?\(track)", "/"] {
            #expect(try Self.get(server, target).status == 503, "\(target)")
        }
        #expect(!FileManager.default.fileExists(atPath: s.data), "nothing wrote a new store in its place")

        try FileManager.default.moveItem(atPath: away, toPath: s.data)
        let up = try Self.eventually(seconds: 30) { try Self.get(server, "/health").status == 200 }
        #expect(up, "\(server.output)")
        #expect(try Self.get(server, "/visualizer/frames?\(track)").status == 200)
        #expect(try Self.get(server, "/smart-dj/profile?\(track)").status == 200)
        server.stop()
        let after = try LibraryStore(path: OutputLayout(root: s.data).databasePath).allTracks()
        #expect(after.map(\.relativePath) == before.map(\.relativePath))
        for (old, new) in zip(before, after) {
            #expect(new.status == old.status && new.visFingerprint == old.visFingerprint && new.profileFingerprint == old.profileFingerprint
                    && new.analyzerVersion == old.analyzerVersion && new.profileJSON == old.profileJSON, "\(new.relativePath)")
        }
    }
}
