import Foundation
import Synchronization
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport

/// A library scanned once per test process, copied for each test that serves it: a suite scans its
/// fixture once, and every test still owns its files. `cp -a` keeps the mtimes a re-scan compares; the
/// copy's store is pointed at the copy's library.
final class ScannedTemplate: Sendable {
    struct Failure: Error, CustomStringConvertible { let description: String }

    private let made: Result<String, Failure>

    /// `make(root)` writes `root/Music` and scans it into `root/data`.
    init(prefix: String, _ make: (String) throws -> Void) {
        do {
            let root = try FixturePaths.makeTemporaryDirectory(prefix: prefix)
            Self.removeAtExit(root)
            try make(root)
            made = .success(root)
        } catch {
            made = .failure(Failure(description: "the \(prefix) library could not be made and scanned: \(error)"))
        }
    }

    /// Copies Music/ and data/ into `root` (which must exist).
    func copy(into root: String) throws {
        let template = try made.get()
        let copy = try NaviscanProcess.run(["-a", template + "/Music", template + "/data", root], program: "/bin/cp")
        guard copy.status == 0 else { throw Failure(description: "cp -a of the scanned library failed: \(copy.stderr)") }
        var info = stat()
        guard stat(root + "/Music", &info) == 0 else { throw Failure(description: "\(root)/Music cannot be read after the copy") }
        try LibraryStore(path: OutputLayout(root: root + "/data").databasePath).recordLibraryIdentity(root: root + "/Music", device: UInt64(info.st_dev))
    }

    private static let templates = Mutex<[String]>([])

    private static func removeAtExit(_ root: String) {
        let first = templates.withLock { list in list.append(root); return list.count == 1 }
        if first {
            atexit { for root in ScannedTemplate.templates.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: root) } }
        }
    }
}
