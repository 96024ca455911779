// swift-tools-version: 6.1
import PackageDescription

// The benchmark suite is its own package so `swift build` / `swift test` of naviscan never build the
// benchmark harness. Run it with `make bench` at the top level.
let package = Package(
    name: "NaviscanBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "naviscan", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "NaviscanBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NaviscanCore", package: "naviscan"),
                .product(name: "NaviscanTestSupport", package: "naviscan"),
            ],
            path: "Benchmarks/NaviscanBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
