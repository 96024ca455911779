import Foundation
import NaviscanCore

/// A deterministic in-process fuzzer for machines without libFuzzer, and for CI: from a seed,
/// it mutates corpus inputs (bit flips, interesting integers and floats, truncation, duplication,
/// insertion) and runs each through its target. Before each run the input is saved as
/// `current.input`, so a crash leaves its reproducer behind.
struct MutationDriver {
    let corpus: [[UInt8]]
    let seed: UInt64
    let artifacts: String
    let runner: FuzzRunner

    static let interestingBytes: [[UInt8]] = [
        [0], [0xFF], [0x7F], [0x80], [0xFF, 0xFF, 0xFF, 0xFF], [0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0x7F],
        [0x00, 0x00, 0xC0, 0x7F],   // float NaN
        [0x00, 0x00, 0x80, 0x7F],   // float +inf
        [0x00, 0x00, 0x80, 0xFF],   // float -inf
        [0xFF, 0xFF, 0x7F, 0x7F],   // float max
        [0, 0, 0, 0, 0, 0, 0xF8, 0x7F],   // double NaN
        [0x7C, 0x0F, 0x85, 0x7F, 0x9E, 0x0B, 0xE6, 0x7F],   // double 1e300-ish
        [0, 0, 0, 0, 0, 0, 0, 0x80], [0x01, 0, 0, 0, 0, 0, 0, 0],
    ]

    func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var out = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            guard out.count > 1 else { out.append(UInt8.random(in: 0...255, using: &rng)); continue }
            // Byte 0 picks the target: keep it.
            let at = Int.random(in: 1..<out.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: out[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            case 1: out[at] = UInt8.random(in: 0...255, using: &rng)
            case 2:
                let value = Self.interestingBytes.randomElement(using: &rng)!
                // Header fields sit at aligned offsets: aim there most of the time.
                let aligned = Bool.random(using: &rng) ? 1 + ((at - 1) & ~3) : at
                for (i, byte) in value.enumerated() where aligned + i < out.count { out[aligned + i] = byte }
            case 3: out.removeLast(Int.random(in: 0...(out.count - 1), using: &rng))
            case 4:
                let length = min(Int.random(in: 1...256, using: &rng), out.count - at)
                out.insert(contentsOf: out[at..<at + length], at: Int.random(in: 1...out.count, using: &rng))
            case 5:
                out.insert(contentsOf: (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            default:
                let length = min(Int.random(in: 1...1024, using: &rng), out.count - at)
                out.removeSubrange(at..<at + length)
            }
        }
        return out
    }

    /// Runs `iterations` inputs, or until `deadline`; returns inputs run per target name. An input
    /// that runs longer than `hangSeconds` is a hang: the driver says so and exits 1, leaving it saved.
    func run(iterations: Int, deadline: Date?, hangSeconds: Double = 20) -> [String: Int] {
        var rng = SeededGenerator(seed: seed)
        var counts: [String: Int] = [:]
        let current = artifacts + "/current.input"
        let watchdog = Watchdog(limit: hangSeconds, input: current)
        var i = 0
        while i < iterations, deadline.map({ Date() < $0 }) ?? true {
            let input = i < corpus.count ? corpus[i] : mutate(corpus.randomElement(using: &rng)!, &rng)
            FileManager.default.createFile(atPath: current, contents: Data(input))
            watchdog.started()
            if let target = input.withUnsafeBytes({ runner.run($0) }) { counts[target.name, default: 0] += 1 }
            watchdog.finished()
            i += 1
        }
        try? FileManager.default.removeItem(atPath: current)
        return counts
    }
}

/// Watches the running input from a thread of its own.
final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    private var startedAt: Date?

    init(limit: Double, input: String) {
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                lock.lock()
                let started = startedAt
                lock.unlock()
                if let started, Date().timeIntervalSince(started) > limit {
                    FileHandle.standardError.write(Data("naviscan-fuzz: an input ran over \(Int(limit)) s (a hang); it is saved as \(input)\n".utf8))
                    exit(1)
                }
            }
        }
        thread.start()
    }

    func started() { lock.lock(); startedAt = Date(); lock.unlock() }
    func finished() { lock.lock(); startedAt = nil; lock.unlock() }
}
