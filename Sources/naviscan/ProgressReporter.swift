import Foundation
import NaviscanLibrary

/// One live line on a terminal (rewritten four times a second), a plain line every 10 s otherwise.
final class ProgressReporter: @unchecked Sendable {
    private let scanner: LibraryScanner
    private let interactive = isatty(STDERR_FILENO) == 1
    private var timer: DispatchSourceTimer?
    private var lastPlain = Date.distantPast

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
        if interactive { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    private func tick() {
        let p = scanner.progress()
        guard p.queued > 0 else { return }
        let percent = p.bytesQueued > 0 ? 100 * Double(p.bytesFinished) / Double(p.bytesQueued) : 0
        var line = String(format: "naviscan: %d/%d files (%.0f%%)", p.finished, p.queued, percent)
        if p.failed > 0 { line += ", \(p.failed) failed" }
        if p.elapsed > 0 { line += String(format: ", %.0fx realtime", p.audioSeconds / p.elapsed) }
        if let eta = p.estimatedRemaining { line += ", ETA " + formatClock(eta) }
        if interactive {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
        } else if Date().timeIntervalSince(lastPlain) >= 10 {
            lastPlain = Date()
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }
}
