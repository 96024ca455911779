import ArgumentParser
import Foundation
import Logging
import NaviscanServer

/// `naviscan serve`: the companion API's read endpoints over a scan's store.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve profiles and visualizer frames over HTTP (the companion API's read endpoints).",
        discussion: "--data defaults to LIBRARY/.naviscan for the library given with --library, the same place `scan` writes."
    )

    @Option(help: "The scan's output directory (naviscan.db, profiles/, vis/).")
    var data: String?

    @Option(help: "The music library (default: the one the last scan recorded in the store).")
    var library: String?

    @Option(help: "Address to bind; loopback unless told otherwise.")
    var host: String = "127.0.0.1"

    @Option(help: "TCP port.")
    var port: Int = 8000

    @Option(help: "Worker threads for POST /visualizer/precompute.")
    var jobs: Int = 1

    func validate() throws {
        guard data != nil || library != nil else { throw ValidationError("give --data DIR, or --library LIBRARY to use LIBRARY/.naviscan") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard jobs >= 1 && jobs <= 64 else { throw ValidationError("--jobs must be 1…64") }
    }

    func run() async throws {
        // Request lines are logged at info: the server logs at info unless told otherwise.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        let logger = Logger(label: "naviscan.serve")
        let libraryPath = library.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        var configuration = ServerConfiguration(
            dataDirectory: URL(fileURLWithPath: data ?? libraryPath! + "/.naviscan").standardizedFileURL.path,
            library: libraryPath, host: host, port: port)
        configuration.precomputeJobs = jobs
        do {
            let host = self.host
            let app = try NaviscanAPI.makeApplication(configuration: configuration, logger: logger) { port in
                // One plain line, so scripts (and the tests) learn the port when --port 0 picked one.
                FileHandle.standardError.write(Data("naviscan: listening on http://\(host):\(port)\n".utf8))
            }
            try await app.runService()
        } catch {
            FileHandle.standardError.write(Data("naviscan: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
