#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NaviscanCore
import NaviscanStore


/// What a walk found.
public struct LibraryListing: Sendable {
    public var files: [LibraryFile] = []
    /// Audio in formats naviscan does not decode (.m4a, .wma, …): counted and listed, never an error.
    public var unsupported: [String] = []
    /// Directories not entered again because a symlink led back into them.
    public var symlinkLoops: [String] = []
    /// Folder symlinks not followed because they lead outside the library (without
    /// `followExternalLinks`): a link to `/` or `/proc/self` must not make a scan walk the system.
    public var externalLinks: [String] = []
    /// Entries that could not be read (permissions, dangling links), with the reason.
    public var unreadable: [(path: String, reason: String)] = []
    /// Relative paths (folders or entries) that could not be read for a reason that may pass (a
    /// permission, an I/O error, a NAS hiccup): what was stored under them is not gone, only unseen.
    public var unverified: [String] = []
    /// The device number of the library root (a mount that is down shows its parent's).
    public var rootDevice: UInt64 = 0

    package init() {}

    /// Whether `relativePath` lies at or under a path that could not be read.
    public func isUnverified(_ relativePath: String) -> Bool {
        unverified.contains { $0.isEmpty || relativePath == $0 || relativePath.hasPrefix($0 + "/") }
    }
}

/// Recursive walk of a library: hidden directories and the output directory are skipped, symlinks
/// are followed once (a directory reached again by any route, by device and inode, is not
/// re-entered), a folder symlink only when its target lies inside the library's real path unless
/// `followExternalLinks` says otherwise; candidates are picked by extension here (`AudioFormat`) and confirmed by
/// content when decoded.
public struct LibraryWalker: Sendable {
    public let root: String
    /// Absolute paths never entered (the output directory when it lies inside the library).
    public let excluded: Set<String>

    /// Follow folder symlinks that lead outside the library (a library assembled from links to
    /// other disks).
    public let followExternalLinks: Bool

    public init(root: String, excluding excluded: [String] = [], followExternalLinks: Bool = false) {
        self.root = Self.normalize(root)
        self.excluded = Set(excluded.map(Self.normalize))
        self.followExternalLinks = followExternalLinks
    }

    static func normalize(_ path: String) -> String {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    private struct DirectoryID: Hashable { let device: UInt64; let inode: UInt64 }

    public func walk() throws -> LibraryListing {
        var listing = LibraryListing()
        var rootStat = stat()
        guard SystemPath.withCString(root, { stat($0, &rootStat) }) == 0 else {
            throw LibraryError.libraryUnreadable(path: root, reason: String(cString: strerror(errno)))
        }
        guard (rootStat.st_mode & S_IFMT) == S_IFDIR else {
            throw LibraryError.libraryUnreadable(path: root, reason: "not a directory")
        }
        listing.rootDevice = UInt64(rootStat.st_dev)
        let realRoot = Self.realPath(root).map { $0 == "/" ? $0 : $0 + "/" }
        var visited: Set<DirectoryID> = [DirectoryID(device: UInt64(rootStat.st_dev), inode: UInt64(rootStat.st_ino))]
        var pending: [(path: String, relative: String)] = [(root, "")]
        while let (directory, relative) = pending.popLast() {
            guard let dir = SystemPath.withCString(directory, { opendir($0) }) else {
                let code = errno
                listing.unreadable.append((relative.isEmpty ? "." : relative, String(cString: strerror(code))))
                listing.unverified.append(relative)
                continue
            }
            var entries: [(name: String, st: stat?, code: Int32)] = []
            let dirFD = dirfd(dir)
            while let entry = readdir(dir) {
                // Names are bytes: SystemPath keeps one that is not UTF-8 openable and distinct.
                let found = withUnsafePointer(to: entry.pointee.d_name) { raw -> (String, stat?, Int32)? in
                    raw.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { cName in
                        if strcmp(cName, ".") == 0 || strcmp(cName, "..") == 0 { return nil }
                        // stat relative to the open folder (follows symlinks): no walk from the root per file.
                        var st = stat()
                        let ok = fstatat(dirFD, cName, &st, 0) == 0
                        return (SystemPath.string(fromCString: cName), ok ? st : nil, ok ? 0 : errno)
                    }
                }
                if let found { entries.append(found) }
            }
            closedir(dir)
            for (name, entryStat, code) in entries.sorted(by: { $0.name < $1.name }) {
                let path = directory + "/" + name
                let rel = relative.isEmpty ? name : relative + "/" + name
                guard let st = entryStat else {
                    listing.unreadable.append((rel, String(cString: strerror(code))))
                    // A dangling link (ENOENT) is gone; anything else may come back.
                    if code != ENOENT && code != ENOTDIR && code != ELOOP { listing.unverified.append(rel) }
                    continue
                }
                if (st.st_mode & S_IFMT) == S_IFDIR {
                    if name.hasPrefix(".") || excluded.contains(path) { continue }
                    let id = DirectoryID(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
                    if !followExternalLinks, !visited.contains(id), Self.isSymlink(path),
                       let realRoot, !(Self.realPath(path).map { ($0 + "/").hasPrefix(realRoot) } ?? false) {
                        listing.externalLinks.append(rel)
                        // What an earlier scan stored under it is kept, not pruned.
                        listing.unverified.append(rel)
                        continue
                    }
                    if visited.contains(id) {
                        listing.symlinkLoops.append(rel)
                        continue
                    }
                    visited.insert(id)
                    pending.append((path, rel))
                } else if (st.st_mode & S_IFMT) == S_IFREG {
                    if name.hasPrefix(".") { continue }
                    guard let format = AudioFormat.named(by: name) else { continue }
                    if format.isDecoded {
                        listing.files.append(LibraryFile(relativePath: rel, path: path, size: Int64(st.st_size),
                                                         mtime: Self.modificationTime(st)))
                    } else {
                        listing.unsupported.append(rel)
                    }
                }
            }
        }
        return listing
    }

    /// The modification time `walk()` records for a file, or nil when it cannot be read.
    private static func isSymlink(_ path: String) -> Bool {
        var st = stat()
        return SystemPath.withCString(path) { lstat($0, &st) } == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    private static func realPath(_ path: String) -> String? {
        SystemPath.withCString(path) { cPath -> String? in
            guard let resolved = realpath(cPath, nil) else { return nil }
            defer { free(resolved) }
            return SystemPath.string(fromCString: resolved)
        }
    }

    public static func modificationTime(path: String) -> Double? {
        var st = stat()
        guard SystemPath.withCString(path, { stat($0, &st) }) == 0 else { return nil }
        return modificationTime(st)
    }

    public static func modificationTime(_ st: stat) -> Double {
        let (seconds, nanoseconds) = modificationTimespec(st)
        return Double(seconds) + Double(nanoseconds) * 1e-9
    }

    /// The modification time as whole seconds and nanoseconds.
    static func modificationTimespec(_ st: stat) -> (seconds: Int64, nanoseconds: Int64) {
        #if canImport(Darwin)
        return (Int64(st.st_mtimespec.tv_sec), Int64(st.st_mtimespec.tv_nsec))
        #else
        return (Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec))
        #endif
    }
}
