import Foundation
import Logging
import NaviscanLibrary
import NaviscanStore

/// The store the server reads, and whether it is there. A store on a network share can vanish for a
/// while (a NAS restarting, a remount): while its file is gone the server says so (/health 503, every
/// data route 503) and marks nothing damaged; when the file is back — the same file, or a new one
/// at the same path — the store is opened again and everything answers as before.
final class StoreHandle: @unchecked Sendable {
    let path: String
    private let logger: Logger
    private let lock = NSLock()
    private var store: LibraryStore
    private var identity: FileIdentity?
    private var outage: String?

    init(path: String, store: LibraryStore, logger: Logger) {
        self.path = path
        self.logger = logger
        self.store = store
        self.identity = FileIdentity(path: path)
    }

    /// The open store (during an outage, the last one: its reads fail or answer from the old file).
    var current: LibraryStore { lock.withLock { store } }

    /// Why the store cannot be used now, nil when it can. Looks at the file each time it is asked.
    var unavailable: String? {
        check()
        return lock.withLock { outage }
    }

    /// Notices an outage, or its end; reopens the store when the file at the path is another one or
    /// after an outage (its connections may hold a file that a remount replaced).
    func check() {
        let seen = FileIdentity(path: path)
        lock.withLock {
            guard let seen else {
                if outage == nil {
                    outage = "the store \(path) is not there (its disk or share unmounted, or the folder moved); answers resume when it is back"
                    logger.error("the store is gone; answering 503 until it is back", metadata: ["path": "\(path)"])
                }
                return
            }
            guard outage != nil || seen != identity else { return }
            do {
                store = try LibraryStore(path: path)
                identity = seen
                if outage != nil { logger.notice("the store is back; answering again", metadata: ["path": "\(path)"]) }
                outage = nil
            } catch {
                outage = "the store \(path) cannot be opened: \(error)"
            }
        }
    }
}

/// Which file a path names: device and inode.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
