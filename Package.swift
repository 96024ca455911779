// swift-tools-version: 6.1
import PackageDescription

// naviscan — offline audio analysis for music libraries.
// Layering (one way only): naviscan (CLI) → NaviscanServer → NaviscanLibrary → NaviscanStore → NaviscanCore → C* shims.
let package = Package(
    name: "naviscan",
    platforms: [.macOS(.v15)],  // swift-configuration needs macOS 15
    products: [
        .executable(name: "naviscan", targets: ["naviscan"]),
        .executable(name: "naviscan-fuzz", targets: ["naviscan-fuzz"]),
        .library(name: "NaviscanCore", targets: ["NaviscanCore"]),
        .library(name: "NaviscanStore", targets: ["NaviscanStore"]),
        .library(name: "NaviscanLibrary", targets: ["NaviscanLibrary"]),
        .library(name: "NaviscanServer", targets: ["NaviscanServer"]),
        .library(name: "NaviscanTestSupport", targets: ["NaviscanTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.0.0"),
        // One trait, not the default two: SwiftPM 6.3 writes several trait defines in a random order,
        // so every build saw a new command line and compiled Hummingbird again (45 s a build on 2 cores).
        // naviscan uses neither Hummingbird's swift-configuration support nor needs more than this.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.0.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
    ],
    targets: [
        // C libraries, each a module map + shim header; the only targets that touch C.
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile",
                       providers: [.apt(["libsndfile1-dev"]), .brew(["libsndfile"])]),
        .systemLibrary(name: "CMpg123", pkgConfig: "libmpg123",
                       providers: [.apt(["libmpg123-dev"]), .brew(["mpg123"])]),
        .systemLibrary(name: "CSyn123", pkgConfig: "libsyn123",
                       providers: [.apt(["libmpg123-dev"]), .brew(["mpg123"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f",
                       providers: [.apt(["libfftw3-dev"]), .brew(["fftw"])]),
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128",
                       providers: [.apt(["libebur128-dev"]), .brew(["libebur128"])]),
        // TagLib (libtag1-dev) behind a C header: the tag keys players read, per container. C++.
        .target(name: "CTagLib", linkerSettings: [.linkedLibrary("tag"), .linkedLibrary("stdc++", .when(platforms: [.linux]))]),
        // System calls Swift's Glibc module does not export (syncfs).
        .target(name: "CSystemShims"),
        // libavformat + libavcodec (+ libavutil, pulled in by libavformat's pkg-config file).
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev"]), .brew(["ffmpeg"])]),

        // Analysis: decoders, DSP stages, file formats. No directory walking, no database.
        .target(
            name: "NaviscanCore",
            dependencies: [
                "CSndFile", "CMpg123", "CSyn123", "CFFTW", "CFFmpeg", "CTagLib",
                "CSystemShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The store: the one owner of the database (GRDB, SQLite), its records and the value types
        // the library and the store both name. No file outside it touches a database.
        .target(
            name: "NaviscanStore",
            dependencies: [
                "NaviscanCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The batch job: walking a library, the worker pool, incremental rules, the output tree, the
        // album pass, merge, tags; it reaches the database only through NaviscanStore.
        .target(
            name: "NaviscanLibrary",
            dependencies: [
                "NaviscanCore",
                "NaviscanStore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The companion API's read endpoints over the store (Hummingbird).
        .target(
            name: "NaviscanServer",
            dependencies: [
                "NaviscanLibrary",
                "NaviscanStore",
                "NaviscanCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            // The web page's templates, script and style (installed to share/naviscan/web by `make install`).
            resources: [.copy("Web/Assets")]
        ),
        // Deterministic test signals and a WAV/FLAC writer, shared by tests and benchmarks.
        // libebur128 as the reference loudness meter of tests (LoudnessReference).
        .target(name: "NaviscanTestSupport", dependencies: ["NaviscanCore", "CSndFile", "CEbur128"]),

        .executableTarget(
            name: "naviscan",
            dependencies: [
                "NaviscanCore",
                "NaviscanStore",
                "NaviscanLibrary",
                "NaviscanServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        // The fuzz target over every reader of untrusted files (scripts/ci/fuzz/README.md, `make fuzz`).
        .executableTarget(
            name: "naviscan-fuzz",
            dependencies: ["NaviscanCore", "NaviscanStore", "NaviscanLibrary", "NaviscanTestSupport", .product(name: "Logging", package: "swift-log")]
        ),

        .testTarget(
            name: "NaviscanCoreTests",
            dependencies: ["NaviscanCore", "NaviscanTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "NaviscanLibraryTests",
            dependencies: ["NaviscanLibrary", "NaviscanStore", "NaviscanCore", "NaviscanTestSupport",
                           // Only to damage a store file the way a crash or another program would.
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "NaviscanServerTests",
            dependencies: [
                "NaviscanServer", "NaviscanLibrary", "NaviscanStore", "NaviscanCore", "NaviscanTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
