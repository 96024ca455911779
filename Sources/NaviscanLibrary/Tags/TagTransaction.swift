import Foundation
import NaviscanCore

/// One file's new tags, written as a transaction: nothing replaces the user's file until the
/// replacement is proven right.
///
/// 1. The file's identity (device, inode, size, times) is noted, and the folder must have room for
///    a full copy.
/// 2. A copy beside it is written with the new tags (every read and write checked) and synced.
/// 3. The copy is verified: its tags read back equal to what was meant, every ID3v2 frame not
///    naviscan's byte for byte as it was, its decoded audio bit-identical to the original's, and
///    the original's owner, group, mode and extended attributes (POSIX ACLs included) carried.
/// 4. Under an exclusive lock on the original, its identity is checked again (another program may
///    have written it meanwhile), then the copy is renamed over it — or, for a file with several
///    hard links, the changed bytes are written into it in place (only when the copy has the same
///    size: the new tags fit in the old padding), so the links stay one file.
///
/// Any failure leaves the file as it was and removes the copy.
struct TagTransaction {
    /// What names a file's content at one moment: a writer changes the size or the times, a
    /// replacement the inode.
    struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let modified: [Int]
        let changed: [Int]

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            #if os(Linux)
            modified = [info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
            changed = [info.st_ctim.tv_sec, info.st_ctim.tv_nsec]
            #else
            modified = [info.st_mtimespec.tv_sec, info.st_mtimespec.tv_nsec]
            changed = [info.st_ctimespec.tv_sec, info.st_ctimespec.tv_nsec]
            #endif
        }
    }

    /// The suffix of every copy naviscan tags; a later run removes leftovers by it (`isLeftover`).
    static let temporaryMarker = ".naviscan-tag-"
    /// Room asked for beyond the copy itself: the new tags and the file system's own blocks.
    static let spareBytes: Int64 = 1 << 20

    /// The real file (symbolic links resolved by the caller).
    let path: String
    let kind: TagFile.Kind
    let fields: [(key: String, value: String?)]
    /// Test hooks (`TagWriteBack.TestHooks`).
    let hooks: TagWriteBack.TestHooks

    /// Writes the tags; returns the file's status after. Throws `TagFile.Failure` (the file left as
    /// it was) or a `LibraryError` fault.
    func run() throws -> stat {
        var original = stat()
        guard SystemPath.withCString(path, { lstat($0, &original) }) == 0 else { throw failure("cannot read the file: \(Self.errorText())") }
        guard original.st_mode & S_IFMT == S_IFREG else { throw failure("not a regular file") }
        guard original.st_mode & 0o222 != 0 else {
            throw failure("the file is read-only (mode \(String(original.st_mode & 0o7777, radix: 8))); make it writable to tag it")
        }
        let identity = Identity(original)
        let directory = (path as NSString).deletingLastPathComponent
        try checkFreeSpace(directory: directory, size: Int64(original.st_size))

        let source = SystemPath.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard source >= 0 else { throw failure("cannot read the file: \(Self.errorText())") }
        defer { close(source) }
        let (copy, copyPath) = try makeCopy(directory: directory)
        var committed = false
        defer {
            close(copy)
            if !committed { SystemPath.withCString(copyPath) { _ = unlink($0) } }
        }
        try TagFile.writeTaggedCopy(of: path, kind: kind, to: copy, copyPath: copyPath, fields: fields)
        guard fsync(copy) == 0 else { throw failure("cannot write the tagged copy to disk: \(Self.errorText()); the file was left as it was") }
        var written = stat()
        guard fstat(copy, &written) == 0 else { throw failure("cannot read the tagged copy back: \(Self.errorText())") }
        let inPlace = original.st_nlink > 1
        if inPlace, written.st_size != original.st_size {
            throw failure("it has \(original.st_nlink) hard links and the new tags do not fit in its tag's padding; "
                          + "not tagged, so the links stay one file (tag one link with a tagger that adds padding, or unlink the others)")
        }
        try carryOwnership(from: source, original: original, to: copy)
        try verify(copyPath: copyPath, copy: copy, source: source)
        try hooks.beforeCommit?(path)

        // The commit: under an exclusive lock, the original must still be the file first seen.
        guard flock(source, LOCK_EX | LOCK_NB) == 0 else {
            throw failure("another program holds a lock on it (a tagger at work?); left as it was, try again later")
        }
        var now = stat(), atPath = stat()
        guard fstat(source, &now) == 0, SystemPath.withCString(path, { lstat($0, &atPath) }) == 0,
              Identity(now) == identity, Identity(atPath) == identity else {
            throw failure("it changed while naviscan was tagging it (another program wrote or replaced it); left as another program made it; scan and tag again")
        }
        if inPlace {
            try writeInPlace(copy: copy, copyPath: copyPath)
        } else {
            guard SystemPath.withCString(copyPath, { from in SystemPath.withCString(path) { rename(from, $0) } }) == 0 else {
                throw failure("cannot replace the file: \(Self.errorText())")
            }
            committed = true
            try? AtomicFile.syncDirectory(directory, for: path)
        }
        var after = stat()
        guard SystemPath.withCString(path, { stat($0, &after) }) == 0 else { throw failure("vanished after tagging") }
        return after
    }

    // MARK: steps

    private func checkFreeSpace(directory: String, size: Int64) throws {
        var info = statvfs()
        guard SystemPath.withCString(directory, { statvfs($0, &info) }) == 0 else { return }
        let free = Int64(info.f_bavail) * Int64(info.f_frsize)
        let needed = size + Self.spareBytes
        guard free >= needed || hooks.ignoreFreeSpace else {
            throw failure("not enough free space beside it: tagging writes a full copy first (\(Self.megabytes(needed)) needed, "
                          + "\(Self.megabytes(free)) free); free some space on that disk; the file was left as it was")
        }
    }

    /// An empty copy beside the file, named so that a later run knows it (`isLeftover`) and within
    /// the folder's name limit.
    private func makeCopy(directory: String) throws -> (Int32, String) {
        let limit = SystemPath.withCString(directory) { pathconf($0, Int32(_PC_NAME_MAX)) }
        let budget = (limit > 0 ? limit : 255) - 1 - Self.temporaryMarker.utf8.count - 6
        var name = SystemPath.bytes(of: (path as NSString).lastPathComponent)
        if name.count > budget {
            name = Array(name.prefix(budget))
            // Never cut a UTF-8 sequence in half.
            while let last = name.last, last & 0xC0 == 0x80 { name.removeLast() }
            if let last = name.last, last >= 0xC0 { name.removeLast() }
        }
        var template = (SystemPath.bytes(of: directory + "/.") + name + Array((Self.temporaryMarker + "XXXXXX").utf8)).map { CChar(bitPattern: $0) } + [0]
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            let code = errno
            let hint = code == EACCES || code == EROFS || code == EPERM ? "; the folder must be writable" : ""
            throw failure("cannot create a copy beside the file: \(String(cString: strerror(code)))\(hint)")
        }
        return (fd, template.withUnsafeBufferPointer { SystemPath.string(fromCString: $0.baseAddress!) })
    }

    /// The original's owner, group, mode and extended attributes (ACLs included) on the copy.
    private func carryOwnership(from source: Int32, original: stat, to copy: Int32) throws {
        if fchown(copy, original.st_uid, original.st_gid) != 0, original.st_uid != geteuid() || original.st_gid != getegid() {
            throw failure("cannot give the copy the file's owner and group (\(Self.errorText())); run naviscan tag as the files' owner")
        }
        guard fchmod(copy, original.st_mode & 0o7777) == 0 else { throw failure("cannot give the copy the file's mode: \(Self.errorText())") }
        let code = ExtendedAttributes.copy(from: source, to: copy)
        guard code == 0 else {
            throw failure("cannot carry the file's extended attributes and ACLs to the copy: \(String(cString: strerror(code))); left as it was")
        }
    }

    /// The copy's tags, other frames, audio and ownership, against what was meant.
    private func verify(copyPath: String, copy: Int32, source: Int32) throws {
        let keys = fields.map(\.key)
        let readBack: [String: String]
        do { readBack = try TagFile.read(path: copyPath, keys: keys) } catch {
            throw unverified("its tags cannot be read back")
        }
        for field in fields where readBack[field.key] != field.value {
            throw unverified("\(field.key) reads back as \(readBack[field.key] ?? "nothing"), not \(field.value ?? "nothing")")
        }
        if kind == .id3v2 {
            guard try TagFile.id3FramesNotOurs(path: copyPath, keys: keys) == TagFile.id3FramesNotOurs(path: path, keys: keys) else {
                throw unverified("another ID3v2 frame would change")
            }
        }
        let before: DecodedAudioDigest
        do { before = try DecodedAudioDigest.of(path: path) } catch { throw failure("its audio does not decode, so the copy cannot be checked: \(error)") }
        let after: DecodedAudioDigest
        do { after = try DecodedAudioDigest.of(path: copyPath) } catch { throw unverified("the copy's audio does not decode (\(error))") }
        guard before == after else { throw unverified("the copy's audio differs (\(after), not \(before))") }
        var a = stat(), b = stat()
        guard fstat(source, &a) == 0, fstat(copy, &b) == 0, a.st_uid == b.st_uid, a.st_gid == b.st_gid,
              a.st_mode & 0o7777 == b.st_mode & 0o7777 else {
            throw unverified("the copy's owner, group or mode differs")
        }
        guard ExtendedAttributes.equal(source, copy) == true else { throw unverified("the copy's extended attributes or ACLs differ") }
    }

    /// For a hard-linked file: the bytes where the verified copy differs written into the file
    /// itself, synced, then the whole file compared with the copy.
    private func writeInPlace(copy: Int32, copyPath: String) throws {
        let target = SystemPath.withCString(path) { open($0, O_RDWR | O_CLOEXEC) }
        guard target >= 0 else { throw failure("cannot open the file for writing: \(Self.errorText())") }
        defer { close(target) }
        let chunk = 1 << 16
        var ours = [UInt8](repeating: 0, count: chunk), theirs = [UInt8](repeating: 0, count: chunk)
        func differences() throws -> [(offset: Int, bytes: ArraySlice<UInt8>)] {
            var found: [(Int, ArraySlice<UInt8>)] = []
            var offset = 0
            while true {
                let n = ours.withUnsafeMutableBytes { pread(copy, $0.baseAddress, chunk, off_t(offset)) }
                let m = theirs.withUnsafeMutableBytes { pread(target, $0.baseAddress, chunk, off_t(offset)) }
                guard n >= 0, m == n else { throw failure("cannot compare the file with its tagged copy: \(Self.errorText())") }
                if n == 0 { return found }
                if let first = (0..<n).first(where: { ours[$0] != theirs[$0] }) {
                    let last = (0..<n).last(where: { ours[$0] != theirs[$0] })!
                    found.append((offset + first, ours[first...last]))
                }
                offset += n
            }
        }
        for change in try differences() {
            let w = change.bytes.withUnsafeBytes { pwrite(target, $0.baseAddress, $0.count, off_t(change.offset)) }
            guard w == change.bytes.count else { throw failure("writing the new tags into the file failed: \(Self.errorText()); check the file with a tagger") }
        }
        guard fsync(target) == 0 else { throw failure("cannot sync the file: \(Self.errorText())") }
        guard try differences().isEmpty else { throw failure("the file does not read back as its verified copy; check it with a tagger") }
    }

    // MARK: messages

    private func failure(_ reason: String) -> TagFile.Failure { TagFile.Failure(path: path, reason: reason) }

    private func unverified(_ what: String) -> TagFile.Failure {
        failure("the tagged copy failed its check (\(what)); the file was left as it was")
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }

    private static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }

    /// A copy left by an interrupted run: `.NAME.naviscan-tag-XXXXXX`.
    static func isLeftover(_ name: String) -> Bool {
        guard name.hasPrefix("."), let range = name.range(of: temporaryMarker, options: .backwards) else { return false }
        let suffix = name[range.upperBound...]
        return suffix.count == 6 && suffix.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
}
