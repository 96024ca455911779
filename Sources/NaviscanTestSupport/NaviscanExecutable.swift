import Foundation

/// The `naviscan` executable the tests run: `NAVISCAN_EXECUTABLE` when set (an installed or release
/// binary), else the package's debug build. Plain `swift test` does not build executables for its
/// test targets, so a missing debug build is built once, on first use, with `swift build`.
public enum NaviscanExecutable {
    public static let path: String = {
        if let path = ProcessInfo.processInfo.environment["NAVISCAN_EXECUTABLE"], !path.isEmpty { return path }
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
