#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux)
import CSystemShims
#endif
import Foundation

/// A file written under a temporary name in the destination's directory and renamed into place on
/// `commit()`, so readers see either the old file or the complete new one, never a torn one.
/// Dropped without `commit()`, it removes the temporary file.
public final class AtomicFile {
    /// How a committed file is made to survive a power cut.
    public enum Durability: Sendable {
        /// The data is synced before the rename and the directory after it.
        case immediate
        /// The caller flushes the whole file system once for many files (`FileSystemSync`) before it
        /// records them anywhere: a library scan's group commit.
        case deferred
    }

    public let destination: String
    public let temporaryPath: String
    public let durability: Durability
    private var fd: Int32
    private var committed = false
    private let directory: String

    /// `mode`: the new file's permissions (0o600 for a secret).
    public init(destination: String, durability: Durability = .immediate, mode: mode_t = 0o644) throws {
        self.destination = destination
        self.durability = durability
        let slash = destination.lastIndex(of: "/")
        let dir = slash.map { String(destination[..<$0]) } ?? "."
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        directory = dir.isEmpty ? "/" : dir
        var template = SystemPath.bytes(of: "\(directory)/.\(name).tmp-XXXXXX").map { CChar(bitPattern: $0) } + [0]
        fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw OutputFileError(path: destination, code: errno, action: "cannot create a file in \(directory)")
        }
        temporaryPath = template.withUnsafeBufferPointer { SystemPath.string(fromCString: $0.baseAddress!) }
        fchmod(fd, mode)
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { SystemPath.withCString(temporaryPath) { _ = unlink($0) } }
    }

    /// Writes `bytes` as the whole new content of `destination`: a temporary file, renamed into place.
    public static func write(_ bytes: some ContiguousBytes, to destination: String, durability: Durability = .immediate,
                             mode: mode_t = 0o644) throws {
        let out = try AtomicFile(destination: destination, durability: durability, mode: mode)
        try bytes.withUnsafeBytes { try out.write($0) }
        try out.commit()
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int? = nil) throws {
        var done = 0
        while done < bytes.count {
            let n: Int
            if let offset {
                n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            } else {
                n = posixWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw OutputFileError(path: destination, code: errno, action: "write failed")
            }
            done += n
        }
    }

    /// Renames the temporary file over the destination; with `.immediate` durability the data is
    /// synced first and the directory after, so the new name survives a crash with its data.
    public func commit() throws {
        guard !committed else { return }
        let immediate = durability == .immediate || !FileSystemSync.isAvailable
        if immediate && fsync(fd) != 0 {
            throw OutputFileError(path: destination, code: errno, action: "sync failed")
        }
        guard close(fd) == 0 else {
            fd = -1
            throw OutputFileError(path: destination, code: errno, action: "close failed")
        }
        fd = -1
        let renamed = SystemPath.withCString(temporaryPath) { from in SystemPath.withCString(destination) { rename(from, $0) } }
        guard renamed == 0 else {
            throw OutputFileError(path: destination, code: errno, action: "rename failed")
        }
        committed = true
        if immediate { try Self.syncDirectory(directory, for: destination) }
    }

    /// Makes a rename or unlink in `directory` durable.
    public static func syncDirectory(_ directory: String, for path: String) throws {
        let dirFD = SystemPath.withCString(directory) { open($0, O_RDONLY) }
        guard dirFD >= 0 else { throw OutputFileError(path: path, code: errno, action: "cannot open its directory to sync it") }
        defer { close(dirFD) }
        // Some file systems (network mounts) cannot sync a directory; the rename itself is done.
        if fsync(dirFD) != 0 && errno != EINVAL && errno != ENOTSUP {
            throw OutputFileError(path: path, code: errno, action: "directory sync failed")
        }
    }
}

/// One flush of everything written to a file system (Linux `syncfs`): makes a whole batch of files
/// and their directory entries durable at the cost of one call. Where it does not exist (macOS),
/// `AtomicFile` syncs each file itself and `isAvailable` is false.
public enum FileSystemSync {
    #if os(Linux)
    public static let isAvailable = true
    #else
    public static let isAvailable = false
    #endif

    /// Flushes the file system holding `path`.
    public static func flush(containing path: String) throws {
        #if os(Linux)
        let fd = SystemPath.withCString(path) { open($0, O_RDONLY) }
        guard fd >= 0 else { throw OutputFileError(path: path, code: errno, action: "cannot open it to flush its disk") }
        defer { close(fd) }
        guard naviscan_syncfs(fd) == 0 else { throw OutputFileError(path: path, code: errno, action: "flushing its disk failed") }
        #endif
    }
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buf: UnsafeRawPointer, _ n: Int) -> Int {
    write(fd, buf, n)
}

/// An output file could not be written; the message names the file and the system's reason. It is
/// a fault of the output directory (full, read-only, gone), never of the track being analysed.
public struct OutputFileError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String
    /// The `errno` of the failed call (ENOSPC, EIO, EROFS, EDQUOT, ENOENT, …), 0 when none.
    public let code: Int32

    public init(path: String, reason: String, code: Int32 = 0) {
        self.path = path
        self.reason = reason
        self.code = code
    }

    public init(path: String, code: Int32, action: String) {
        self.init(path: path, reason: "\(action): \(String(cString: strerror(code)))", code: code)
    }

    public var description: String { "\(path): \(reason)" }
}
