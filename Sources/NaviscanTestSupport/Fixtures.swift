import Foundation

/// Locations of committed fixtures and scratch directories for tests and benchmarks.
public enum FixturePaths {
    /// `Fixtures/` at the package root, found from this source file's location.
    public static var fixturesDirectory: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }   // Sources/NaviscanTestSupport/Fixtures.swift → root
        return url.appendingPathComponent("Fixtures").path
    }

    public static func fixture(_ name: String) -> String { fixturesDirectory + "/" + name }

    /// A fresh temporary directory, unique per call.
    public static func makeTemporaryDirectory(prefix: String = "naviscan-test") throws -> String {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }
}
