import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// A client-named track resolved to a file the server may read: never hidden, never outside the
/// library once symlinks are resolved (a symlinked track whose target stays in the library is
/// fine), a regular file, of a type a scan would analyse.
enum LibraryTrackFile {
    /// The lexical rules and the path's real location, for requests that analyse a file
    /// (precompute) rather than send its bytes.
    static func resolve(_ relativePath: String, library: String) throws -> LibraryFile {
        let opened = try open(relativePath, library: library)
        return opened.file
    }

    /// Opens the file first and then checks what was opened: the descriptor's own path (from the
    /// kernel, not from the name the client sent) must lie inside the library's real path, and
    /// `fstat` of the descriptor must say a regular file. Nothing is looked up by name after the
    /// check, so a symlink swapped between check and use cannot lead the answer outside.
    static func open(_ relativePath: String, library: String) throws -> OpenedTrackFile {
        if relativePath.split(separator: "/").contains(where: { $0.hasPrefix(".") }) {
            throw APIError.badRequest("\(relativePath): hidden files and folders are not part of the library")
        }
        guard AudioFormat.named(by: relativePath)?.isDecoded == true else {
            throw APIError(status: .unsupportedMediaType, message: "\(relativePath): not an audio type naviscan analyses")
        }
        guard let realLibrary = realPath(library) else {
            throw APIError(status: .serviceUnavailable, message: "the library cannot be read; is its disk mounted?")
        }
        let absolute = library + "/" + relativePath
        // Non-blocking, so a FIFO planted in the library cannot hold the request open.
        let fd = SystemPath.withCString(absolute) { Foundation.open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else { throw APIError.notFound("no file \(relativePath) in the library") }
        let file = OpenedTrackFile(fd: fd)
        guard let real = descriptorPath(fd) ?? checkedRealPath(absolute, sameFileAs: fd) else {
            throw APIError.notFound("no file \(relativePath) in the library")
        }
        guard real.hasPrefix(realLibrary.hasSuffix("/") ? realLibrary : realLibrary + "/") else {
            throw APIError(status: .forbidden, message: "\(relativePath) leads outside the library")
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw APIError.notFound("no file \(relativePath) in the library") }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw APIError.badRequest("\(relativePath) is not a regular file")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        file.file = LibraryFile(relativePath: relativePath, path: absolute, size: Int64(st.st_size),
                                mtime: LibraryWalker.modificationTime(st))
        return file
    }

    private static func realPath(_ path: String) -> String? {
        SystemPath.withCString(path) { cPath -> String? in
            guard let resolved = realpath(cPath, nil) else { return nil }
            defer { free(resolved) }
            return SystemPath.string(fromCString: resolved)
        }
    }

    /// Without /proc (a bare chroot): the name's real path, accepted only when it still names the
    /// very file that was opened (same device and inode).
    private static func checkedRealPath(_ path: String, sameFileAs fd: Int32) -> String? {
        guard let real = realPath(path) else { return nil }
        var opened = stat(), named = stat()
        guard fstat(fd, &opened) == 0, SystemPath.withCString(real, { stat($0, &named) }) == 0,
              opened.st_dev == named.st_dev, opened.st_ino == named.st_ino else { return nil }
        return real
    }

    /// Where an open descriptor really is: the kernel's record of it, whatever happened to the
    /// name since it was opened.
    private static func descriptorPath(_ fd: Int32) -> String? {
        #if canImport(Darwin)
        var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
        guard fcntl(fd, F_GETPATH, &buffer) != -1 else { return nil }
        return SystemPath.string(fromCString: buffer)
        #else
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0, n < buffer.count - 1 else { return nil }
        buffer[n] = 0
        return SystemPath.string(fromCString: buffer)
        #endif
    }
}

/// An open library file; its descriptor is closed when the last reference goes (the answer's
/// body holds one until it has been sent, or dropped for a HEAD request).
final class OpenedTrackFile: @unchecked Sendable {
    let fd: Int32
    fileprivate(set) var file = LibraryFile(relativePath: "", path: "", size: 0, mtime: 0)

    fileprivate init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }
}
