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

    /// `Fixtures/hostile/` files whose names start with `prefix` ("float-": 1e17/1e30/NaN/Inf float
    /// samples in WavPack, Matroska and CAF; "rate-": headers stating 0–2 Hz), sorted.
    public static func hostile(_ prefix: String) -> [String] {
        let folder = fixturesDirectory + "/hostile"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { $0.hasPrefix(prefix) }.sorted().map { folder + "/" + $0 }
    }

    /// A fresh temporary directory, unique per call.
    public static func makeTemporaryDirectory(prefix: String = "naviscan-test") throws -> String {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }
}
