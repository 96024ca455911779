import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// Progress of a scan on standard error: one line rewritten four times a second on a terminal
/// (clipped to its width), a plain line every 10 s otherwise.
///
/// Percent and ETA are by audio duration, read from each planned file's headers by a background
/// probe while the scan runs (until it is done, the total is extrapolated from the probed share of
/// the bytes); the work done counts seconds decoded inside files still in flight, so one long file
/// moves the line too. The speed is over the last 20 s, not since the start.
final class ProgressReporter: @unchecked Sendable {
    private let scanner: LibraryScanner
    private let interactive = isatty(STDERR_FILENO) == 1
    private var timer: DispatchSourceTimer?
    private var lastPlain = Date.distantPast
    private let lock = NSLock()
    private var probeStarted = false
    private var probedSeconds = 0.0
    private var probedBytes: Int64 = 0
    private var probedAll = false
    /// (elapsed, seconds decoded) samples over the recent window.
    private var recent: [(time: Double, decoded: Double)] = []
    private static let window = 20.0

    init(scanner: LibraryScanner) { self.scanner = scanner }

    func start() {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self] in self?.tick() }
        timer.resume()
        self.timer = timer
    }

    func stop() {
        timer?.cancel()
        timer = nil
        lock.lock()
        probedAll = true   // tells the probe to stop
        lock.unlock()
        if interactive { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    private func startProbe(_ files: [LibraryFile]) {
        let thread = Thread { [self] in
            for file in files {
                lock.lock()
                let stopped = probedAll
                lock.unlock()
                if stopped { return }
                let seconds = AudioProbe.duration(path: file.path) ?? 0
                lock.lock()
                probedSeconds += seconds
                probedBytes += file.size
                lock.unlock()
            }
            lock.lock()
            probedAll = true
            lock.unlock()
        }
        thread.qualityOfService = .utility
        thread.start()
    }

    private func tick() {
        let p = scanner.progress()
        guard p.queued > 0 else { return }
        lock.lock()
        if !probeStarted {
            probeStarted = true
            lock.unlock()
            startProbe(p.plannedFiles)
            lock.lock()
        }
        // Until every header is read, the total scales the probed seconds by the bytes still unprobed.
        let total: Double? = probedAll ? probedSeconds
            : probedBytes > 0 ? probedSeconds * Double(p.bytesQueued) / Double(probedBytes) : nil
        recent.append((p.elapsed, p.audioSecondsDecoded))
        while let first = recent.first, p.elapsed - first.time > Self.window { recent.removeFirst() }
        let oldest = recent.first
        lock.unlock()

        let speed: Double? = oldest.flatMap { o in p.elapsed - o.time >= 1 ? (p.audioSecondsDecoded - o.decoded) / (p.elapsed - o.time) : nil }
        // Most telling first: a narrow terminal clips the tail.
        var parts: [String] = []
        if let total, total > 0 {
            parts.append(String(format: "%.0f%%", min(p.audioSecondsDecoded / total, 0.99) * 100))
            if let speed, speed > 0 { parts.append("ETA " + formatClock(max(total - p.audioSecondsDecoded, 0) / speed)) }
        }
        if let speed { parts.append(String(format: "%.0fx realtime", speed)) }
        parts.append("\(p.finished)/\(p.queued) files" + (total.map { " of " + formatClock($0) + " audio" } ?? ""))
        if p.failed > 0 { parts.append("\(p.failed) failed") }
        parts[0] = "naviscan: " + parts[0]
        let line = parts.joined(separator: ", ")
        if interactive {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(Self.clip(line, to: Self.terminalWidth()))".utf8))
        } else if Date().timeIntervalSince(lastPlain) >= 10 {
            lastPlain = Date()
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    /// Columns of the terminal on standard error (80 when it does not say).
    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// The line cut to leave the last column free, so the terminal never wraps it.
    static func clip(_ line: String, to width: Int) -> String {
        let room = max(width - 1, 1)
        return line.count <= room ? line : String(line.prefix(max(room - 1, 0))) + "…"
    }
}
