import Foundation

/// The `naviscan` executable the tests run: `NAVISCAN_EXECUTABLE` when set (an installed binary, an
/// older build to compare), else the one built beside the running tests (`make test`'s release build,
/// `swift test -c release`), else the package's debug build. Plain `swift test` does not build
/// executables for its test targets, so a missing debug build is built once, on first use, with `swift build`.
public enum NaviscanExecutable {
    public static let path: String = {
        if let path = ProcessInfo.processInfo.environment["NAVISCAN_EXECUTABLE"], !path.isEmpty { return path }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("naviscan").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let root = URL(fileURLWithPath: FixturePaths.fixturesDirectory).deletingLastPathComponent().path
        let debug = root + "/.build/debug/naviscan"
        if !FileManager.default.isExecutableFile(atPath: debug) {
            let build = Process()
            build.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            build.arguments = ["swift", "build", "--product", "naviscan", "--package-path", root]
            try? build.run()
            build.waitUntilExit()
        }
        return debug
    }()
}

/// Runs the real `naviscan` executable (`NaviscanExecutable.path`).
public enum NaviscanProcess {
    public static var executable: String { NaviscanExecutable.path }

    /// Starts naviscan (or `program`, e.g. a wrapper that runs it as another user).
    public static func start(_ arguments: [String], environment: [String: String] = [:], program: String = executable) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return (process, out, err)
    }

    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String] = [:], program: String = executable) throws -> (status: Int32, stdout: String, stderr: String) {
        let (process, out, err) = try start(arguments, environment: environment, program: program)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
}
