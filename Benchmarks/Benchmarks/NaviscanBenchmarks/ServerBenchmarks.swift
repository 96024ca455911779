import Benchmark
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NaviscanCore
import NaviscanTestSupport

// The server's memory under large and stalled answers, measured on the real `naviscan serve`
// (NAVISCAN_EXECUTABLE, set by `make bench`) in its own process, from /proc. Reported, not asserted:
// the tests check what the clients receive; these figures are read against docs/performance.md.

/// Growth of the server's peak resident memory (VmHWM) over its resident memory before the requests.
let serverPeakGrowth = BenchmarkMetric.custom("server-peak-growth-MB", polarity: .prefersSmaller, useScalingFactor: false)
/// Resident memory still held over the start once the clients have closed.
let serverHeldAfterClose = BenchmarkMetric.custom("server-held-after-close-MB", polarity: .prefersSmaller, useScalingFactor: false)
/// How long /health takes while the stalled clients are held.
let healthUnderLoad = BenchmarkMetric.custom("health-under-load-ms", polarity: .prefersSmaller, useScalingFactor: false)

/// One track scanned by the executable, its frame file replaced by a generated 3-hour one (uint8,
/// 324,000 frames, 20.7 MB; its JSON answer is over 40 MB); removed on exit.
final class ServedThreeHours: @unchecked Sendable {
    static let shared = ServedThreeHours()
    nonisolated(unsafe) static var cleanupDirectory: String?
    let data: String
    let track = "three-hours.flac"

    private init() {
        let root = try! FixturePaths.makeTemporaryDirectory(prefix: "naviscan-bench-serve")
        Self.cleanupDirectory = root
        atexit { if let dir = ServedThreeHours.cleanupDirectory { try? FileManager.default.removeItem(atPath: dir) } }
        data = root + "/data"
        try! FileManager.default.createDirectory(atPath: root + "/Music", withIntermediateDirectories: true)
        try! AudioFileWriter.write(.sine(frequency: 440, dBFS: -12, duration: 3, channels: 2), to: root + "/Music/" + track, format: .flac16)
        let scan = try! NaviscanProcess.run(["scan", root + "/Music", "--out", data, "--quiet"])
        precondition(scan.status == 0, "naviscan scan failed: \(scan.stderr)")
        // The library's one frame file, whatever the layout calls it.
        let vis = FileManager.default.enumerator(atPath: data + "/vis")!.compactMap { $0 as? String }.filter { $0.hasSuffix(".vis") }
        precondition(vis.count == 1, "expected one frame file, found \(vis)")
        var config = VisualizerConfig()
        config.encoding = .uint8
        let seconds = 3 * 3600.0
        let writer = try! VisFrameWriter(path: data + "/vis/" + vis[0], config: config)
        let frame = (0..<64).map { Float($0 % 2) }
        for _ in 0..<VisFrameAnalyzer.frameCount(duration: seconds, fps: config.fps) {
            try! frame.withUnsafeBufferPointer { try writer.append($0.baseAddress!) }
        }
        try! writer.finish(duration: seconds, sourceSampleRate: 44_100, sourceChannels: 2)
    }

    var query: String { "relative_path=" + track }
}

func megabytes(_ bytes: Int) -> Int { max(0, bytes) >> 20 }

/// `naviscan serve` over the 3-hour track, answering, and its resident memory before any request.
func startServer() throws -> (ServedThreeHours, ServerProcess, Int) {
    let served = ServedThreeHours.shared
    let server = try ServerProcess(data: served.data)
    _ = try RawSocket(port: server.port).request("GET", "/health")
    return (served, server, try server.memory().resident)
}

func serverBenchmarks() {
    // A server start per iteration: the peak (VmHWM) only grows within one process.
    let once = Benchmark.Configuration(metrics: [.wallClock, serverPeakGrowth], timeUnits: .milliseconds,
                                       warmupIterations: 0, maxDuration: .seconds(60), maxIterations: 1, thresholds: [:])

    Benchmark("server.frames-3h-json", configuration: once) { b in
        let (served, server, before) = try startServer()
        defer { server.stop() }
        b.startMeasurement()
        let response = try RawSocket(port: server.port, timeout: 120).request("GET", "/visualizer/frames?" + served.query, keep: 256)
        b.stopMeasurement()
        precondition(response.status == 200 && response.bodyLength > 40_000_000, "answer \(response.status), \(response.bodyLength) bytes")
        b.measurement(serverPeakGrowth, megabytes(try server.memory().peak - before))
    }

    var stalled = once
    stalled.metrics = [.wallClock, serverPeakGrowth, serverHeldAfterClose, healthUnderLoad]
    Benchmark("server.400-stalled-binary-readers", configuration: stalled) { b in
        raiseOwnDescriptorLimit()
        let (served, server, before) = try startServer()
        defer { server.stop() }
        b.startMeasurement()
        var crowd: [RawSocket] = []
        for _ in 0..<400 {
            let socket = try RawSocket(port: server.port, receiveBuffer: 16 << 10)
            try socket.send("GET /visualizer/frames?format=binary&\(served.query) HTTP/1.1\r\nHost: x\r\n\r\n")
            crowd.append(socket)
        }
        // Until the server's memory settles: every client has had what fits in its window.
        var last = try server.memory().resident
        for _ in 0..<80 {
            usleep(500_000)
            let now = try server.memory().resident
            if abs(now - last) < 1 << 20 { break }
            last = now
        }
        let asked = ContinuousClock.now
        let health = try RawSocket(port: server.port, timeout: 30).request("GET", "/health")
        let took = asked.duration(to: .now)
        precondition(health.status == 200, "/health answered \(health.status)")
        b.measurement(healthUnderLoad, Int(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000))
        b.measurement(serverPeakGrowth, megabytes(try server.memory().peak - before))
        crowd.removeAll()
        // What the server gives back as it notices the closed connections.
        var after = try server.memory().resident
        for _ in 0..<100 where after - before >= 64 << 20 {
            usleep(100_000)
            after = try server.memory().resident
        }
        b.stopMeasurement()
        b.measurement(serverHeldAfterClose, megabytes(after - before))
    }
}
