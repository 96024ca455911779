#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written under a temporary name in the destination's directory and renamed into place on
/// `commit()`, so readers see either the old file or the complete new one, never a torn one.
/// Dropped without `commit()`, it removes the temporary file.
public final class AtomicFile {
    public let destination: String
    public let temporaryPath: String
    private var fd: Int32
    private var committed = false

    public init(destination: String) throws {
        self.destination = destination
        let slash = destination.lastIndex(of: "/")
        let dir = slash.map { String(destination[..<$0]) } ?? "."
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        var template = Array("\(dir.isEmpty ? "/" : dir)/.\(name).tmp-XXXXXX".utf8CString)
        fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw OutputFileError(path: destination, reason: "cannot create a file in \(dir): \(String(cString: strerror(errno)))")
        }
        temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        fchmod(fd, 0o644)
    }

    deinit {
        if fd >= 0 { close(fd) }
        if !committed { unlink(temporaryPath) }
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
                throw OutputFileError(path: destination, reason: "write failed: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    /// Closes the temporary file and renames it over the destination.
    public func commit() throws {
        guard !committed else { return }
        guard close(fd) == 0 else {
            fd = -1
            throw OutputFileError(path: destination, reason: "close failed: \(String(cString: strerror(errno)))")
        }
        fd = -1
        guard rename(temporaryPath, destination) == 0 else {
            throw OutputFileError(path: destination, reason: "rename failed: \(String(cString: strerror(errno)))")
        }
        committed = true
    }
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buf: UnsafeRawPointer, _ n: Int) -> Int {
    write(fd, buf, n)
}

/// An output file could not be written; the message names the file and the system's reason.
public struct OutputFileError: Error, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
