#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens a path for reading only when it is a regular file. `open` on a FIFO blocks until a writer
/// appears, so the descriptor is opened non-blocking, checked with `fstat`, and only then made
/// blocking again; a folder, FIFO, socket or device is refused at once.
public enum RegularFile {
    public enum Failure: Error {
        case system(String)
        /// What the path is instead: "a folder", "a FIFO", "a device", "a socket".
        case notRegular(String)
    }

    public struct Opened {
        /// Closed by the caller.
        public let fd: Int32
        public let size: Int
        /// Seconds since 1970.
        public let modificationTime: Double
        public var descriptorAndSize: (Int32, Int) { (fd, size) }
    }

    public static func open(_ path: String) throws(Failure) -> Opened {
        let fd = SystemPath.withCString(path) { openReadOnlyNonBlocking($0) }
        guard fd >= 0 else { throw .system(String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .system(reason)
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            #if canImport(Darwin)
            let mtime = Double(st.st_mtimespec.tv_sec) + Double(st.st_mtimespec.tv_nsec) * 1e-9
            #else
            let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) * 1e-9
            #endif
            return Opened(fd: fd, size: Int(st.st_size), modificationTime: mtime)
        case S_IFDIR: close(fd); throw .notRegular("a folder")
        case S_IFIFO: close(fd); throw .notRegular("a FIFO (named pipe)")
        case S_IFSOCK: close(fd); throw .notRegular("a socket")
        default: close(fd); throw .notRegular("a device")
        }
    }

    private static func openReadOnlyNonBlocking(_ path: UnsafePointer<CChar>) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #else
        Darwin.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #endif
    }

    /// Reads exactly `count` bytes at `offset` unless the file ends first; returns the bytes read.
    public static func read(fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int, offset: Int) throws(Failure) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(String(cString: strerror(errno)))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
