import Foundation
import NaviscanCore
import NaviscanLibrary

/// A change under the library, as the watch reports it (paths relative to the library root).
enum LibraryChange: Sendable, Equatable {
    /// An audio file was created or written to: it may still be open for writing.
    case writing(String)
    /// An audio file was closed after writing, moved in, or had its metadata changed: complete.
    case settled(String)
    /// An audio file or a folder was deleted or moved out.
    case removed(String)
    /// A folder appeared (its files were reported as `settled`), or events were lost: re-scan all.
    case rescan
}

/// Recursive inotify watch of a library: every folder the scan would enter (hidden ones and the
/// output directory skipped), new folders included as they appear. Runs on a thread of its own and
/// hands each change to `onChange`, in order.
final class DirectoryWatch: @unchecked Sendable {
    let root: String
    private let excluded: Set<String>
    private let onChange: @Sendable (LibraryChange) -> Void
    private let events: FolderEventQueue
    private let lock = NSLock()
    private var stopped = false
    /// Watch descriptor → folder, relative to the root ("" for the root).
    private var folders: [Int32: String] = [:]
    /// Folders that could not be watched (usually fs.inotify.max_user_watches reached), and why.
    private(set) var unwatched: (count: Int, reason: String) = (0, "")
    private var thread: Thread?

    /// Watches `root`; throws when the system has no inotify or the root cannot be watched.
    init(root: String, excluding: [String], onChange: @escaping @Sendable (LibraryChange) -> Void) throws {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        excluded = Set(excluding.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        self.onChange = onChange
        do { events = try FolderEventQueue() } catch { throw WatchError(reason: error.description) }
        guard addTree("") else {
            let reason = unwatched.reason
            unwatched = (0, "")
            throw WatchError(reason: "cannot watch \(self.root): \(reason)")
        }
    }

    struct WatchError: Error, CustomStringConvertible {
        let reason: String
        var description: String { "library watching is unavailable (\(reason)); periodic re-scans keep the library analysed" }
    }

    var watchedFolders: Int {
        lock.lock()
        defer { lock.unlock() }
        return folders.count
    }

    func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "naviscan library watch"
        self.thread = thread
        thread.start()
    }

    /// Ends the thread within 200 ms and releases the descriptor.
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func absolute(_ relative: String) -> String { relative.isEmpty ? root : root + "/" + relative }

    /// Watches `relative` and every folder under it. Returns whether the top one could be watched.
    @discardableResult
    private func addTree(_ relative: String) -> Bool {
        let path = absolute(relative)
        if excluded.contains(path) { return true }
        let wd: Int32
        switch events.add(folder: path) {
        case .success(let watch): wd = watch
        case .failure(let error):
            let reason = error.errno == ENOSPC ? "the system's limit fs.inotify.max_user_watches is reached; raise it with sysctl"
                : error.description
            lock.withLock { unwatched = (unwatched.count + 1, reason) }
            return false
        }
        lock.withLock { folders[wd] = relative }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where !name.hasPrefix(".") {
            var isDirectory: ObjCBool = false
            let child = relative.isEmpty ? name : relative + "/" + name
            if FileManager.default.fileExists(atPath: absolute(child), isDirectory: &isDirectory), isDirectory.boolValue {
                addTree(child)
            }
        }
        return true
    }

    private func loop() {
        while !isStopped {
            for event in events.read(timeoutMilliseconds: 200) { handle(event) }
        }
    }

    private func handle(_ event: FolderEvent) {
        func has(_ kinds: FolderEvent.Kind) -> Bool { !event.kind.isDisjoint(with: kinds) }
        if has(.overflow) { return onChange(.rescan) }
        lock.lock()
        let folder = folders[event.watch]
        if has(.gone) { folders[event.watch] = nil }
        lock.unlock()
        guard let folder else { return }
        let name = event.name
        guard !name.isEmpty, !name.hasPrefix(".") else { return }
        let relative = folder.isEmpty ? name : folder + "/" + name
        if has(.directory) {
            if has([.created, .movedIn]) {
                // A folder moved in or created: watch it, and let a scan find what it already holds.
                addTree(relative)
                onChange(.rescan)
            } else if has(.removed) {
                onChange(.removed(relative))
            }
            return
        }
        guard AudioFormat.named(by: name)?.isDecoded == true else { return }
        if has(.removed) {
            onChange(.removed(relative))
        } else if has([.closed, .movedIn, .attributes]) {
            onChange(.settled(relative))
        } else if has([.created, .written]) {
            // Being written (a copy in progress) until its writer closes it.
            onChange(.writing(relative))
        }
    }
}
