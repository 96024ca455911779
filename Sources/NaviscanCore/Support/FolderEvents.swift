#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSystemShims

/// What happened to an entry of a watched folder (Linux inotify through the C shim; elsewhere
/// `FolderEventQueue()` throws ENOSYS and callers fall back to polling).
public struct FolderEvent: Sendable {
    public struct Kind: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Data written (a writer may still hold it open).
        public static let written = Kind(rawValue: Int(NAVISCAN_WATCH_WRITTEN))
        /// Closed after writing.
        public static let closed = Kind(rawValue: Int(NAVISCAN_WATCH_CLOSED))
        public static let created = Kind(rawValue: Int(NAVISCAN_WATCH_CREATED))
        /// Deleted or moved out.
        public static let removed = Kind(rawValue: Int(NAVISCAN_WATCH_REMOVED))
        /// The entry is a folder.
        public static let directory = Kind(rawValue: Int(NAVISCAN_WATCH_DIRECTORY))
        /// The watched folder itself is gone.
        public static let gone = Kind(rawValue: Int(NAVISCAN_WATCH_GONE))
        /// Events were lost: everything must be looked at again.
        public static let overflow = Kind(rawValue: Int(NAVISCAN_WATCH_OVERFLOW))
        /// Metadata changed (a touch, a chmod).
        public static let attributes = Kind(rawValue: Int(NAVISCAN_WATCH_ATTRIBUTES))
        /// Moved in whole.
        public static let movedIn = Kind(rawValue: Int(NAVISCAN_WATCH_MOVED_IN))
    }

    /// The watch (`FolderEventQueue.add`) of the folder the entry is in.
    public let watch: Int32
    public let kind: Kind
    /// The entry's name inside the folder ("" for the folder itself).
    public let name: String
}

/// One inotify descriptor: folders added one by one (not recursively), events read in batches.
/// Not thread-safe: one reader thread.
public final class FolderEventQueue {
    private let fd: Int32
    // Room for many events per read; each is 16 bytes plus its name.
    private let capacity = 64 << 10
    private let buffer: UnsafeMutableRawPointer

    /// Throws the errno when the system has no inotify.
    public init() throws(SystemError) {
        fd = naviscan_watch_open()
        guard fd >= 0 else { throw SystemError(errno: errno) }
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    }

    deinit {
        close(fd)
        buffer.deallocate()
    }

    /// Watches one folder; its watch, or the errno (ENOSPC: fs.inotify.max_user_watches is reached).
    public func add(folder path: String) -> Result<Int32, SystemError> {
        let watch = SystemPath.withCString(path) { naviscan_watch_add(fd, $0) }
        return watch >= 0 ? .success(watch) : .failure(SystemError(errno: errno))
    }

    /// The events that arrive within `timeoutMilliseconds` (none on timeout).
    public func read(timeoutMilliseconds: Int32) -> [FolderEvent] {
        let count = naviscan_watch_read(fd, buffer, capacity, timeoutMilliseconds)
        guard count > 0 else { return [] }
        var events: [FolderEvent] = []
        var offset = 0
        var event = naviscan_watch_event()
        while naviscan_watch_next(buffer, Int(count), &offset, &event) == 1 {
            events.append(FolderEvent(watch: event.watch, kind: FolderEvent.Kind(rawValue: Int(event.kind)),
                                      name: SystemPath.string(fromCString: event.name)))
        }
        return events
    }
}

/// An errno, worded by the system.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public let errno: Int32
    public init(errno: Int32) { self.errno = errno }
    public var description: String { String(cString: strerror(errno)) }
}

/// Hands the allocator's free pages back to the system (after a burst of large answers).
public enum FreeMemory {
    public static func giveBack() { naviscan_release_free_memory() }
}
