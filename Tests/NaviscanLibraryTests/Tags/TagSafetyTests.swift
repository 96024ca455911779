import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanTestSupport
import Testing

/// `naviscan tag` on a self-hoster's bad day, on real file systems: a full disk (a small tmpfs), a
/// FLAC comment at the format's limit, another tagger writing at the same moment, ACLs and
/// extended attributes, hard and symbolic links, a folder swapped for a link, an ID3v2.3 tag, a
/// long name, copies left by a killed run. Every case checks the decoded audio; files are prepared
/// and read back with mutagen (scripts/ci/tagfixture.py, tagdump.py), not with TagLib.
@Suite("naviscan tag never harms a file", .serialized)
struct TagSafetyTests {
    /// A library of a few fixture files, its store beside it (not inside: the full-disk case fills
    /// the library's disk).
    struct Library {
        let root: String
        var music: String { root + "/Music" }
        var out: String { root + "/store" }

        init(_ files: [String: String]) throws {
            root = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-tagsafe")
            for (path, fixture) in files { try add(path, from: fixture) }
        }

        func add(_ path: String, from fixture: String) throws {
            let target = music + "/" + path
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: FixturePaths.fixture(fixture), toPath: target)
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }

        func scan() throws {
            let run = try NaviscanProcess.run(["scan", music, "-o", out, "-q"])
            #expect(run.status == 0, "\(run.stderr)")
        }

        func tag(_ extra: [String] = [], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
            try NaviscanProcess.run(["tag", music, "-o", out] + extra, environment: environment)
        }

        func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: music + "/" + path)) }

        func audio(_ path: String) throws -> DecodedAudioDigest { try DecodedAudioDigest.of(path: music + "/" + path) }

        /// Hidden files beside the music (a copy left behind would be one).
        func hiddenFiles(in folder: String) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: music + "/" + folder).filter { $0.hasPrefix(".") }
        }

        func tags(_ path: String) throws -> [String: String] {
            let run = try python("tagdump.py", [music + "/" + path])
            #expect(run.status == 0, "\(run.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: [String: Any]]
            return (object?.values.first ?? [:]).mapValues { "\($0)" }
        }
    }

    static func python(_ script: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try NaviscanProcess.run([FixturePaths.fixturesDirectory + "/../scripts/ci/" + script] + arguments, program: "/usr/bin/python3")
    }

    static func prepare(_ arguments: [String]) throws {
        let run = try python("tagfixture.py", arguments)
        #expect(run.status == 0, "\(run.stderr)")
    }

    static var isRoot: Bool { geteuid() == 0 }

    @Test("A full disk (FLAC without padding on a tmpfs with room for one copy): refused before writing; and when a write is let start anyway, the copy's check catches TagLib's silent short write", .enabled(if: isRoot, "mounting a tmpfs needs root"))
    func fullDisk() throws {
        let lib = try Library([:])
        defer { lib.remove() }
        let mount = lib.root + "/small"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let mounted = try NaviscanProcess.run(["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount], program: "/bin/mount")
        try #require(mounted.status == 0, "\(mounted.stderr)")
        defer { _ = try? NaviscanProcess.run([mount], program: "/bin/umount") }
        try FileManager.default.createSymbolicLink(atPath: lib.music, withDestinationPath: mount)
        try lib.add("Album/full.flac", from: "formats/tagged.flac")
        try Self.prepare(["no-padding", lib.music + "/Album/full.flac"])
        try lib.scan()
        // Fill the disk until it holds one more copy of the file and not a block more.
        let size = try lib.bytes("Album/full.flac").count
        var info = statvfs()
        #expect(statvfs(mount, &info) == 0)
        let free = Int(info.f_bavail) * Int(info.f_frsize)
        let blocks = (size + Int(info.f_frsize) - 1) / Int(info.f_frsize) * Int(info.f_frsize)
        try Data(count: free - blocks).write(to: URL(fileURLWithPath: mount + "/filler"))
        let before = try lib.bytes("Album/full.flac")
        let audio = try lib.audio("Album/full.flac")

        let refused = try lib.tag()
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("failed Album/full.flac: not enough free space beside it"), "\(refused.stderr)")
        #expect(refused.stderr.contains("0 files tagged"), "\(refused.stderr)")
        #expect(try lib.bytes("Album/full.flac") == before)
        #expect(try lib.hiddenFiles(in: "Album").isEmpty)

        let caught = try lib.tag(environment: ["NAVISCAN_TEST_TAG_IGNORE_FREE_SPACE": "1"])
        #expect(caught.status == 1)
        #expect(caught.stderr.contains("failed Album/full.flac: the tagged copy failed its check"), "\(caught.stderr)")
        #expect(try lib.bytes("Album/full.flac") == before)
        #expect(try lib.audio("Album/full.flac") == audio)
        #expect(try lib.hiddenFiles(in: "Album").isEmpty)
        // Nothing recorded as tagged: the next scan finds the file as it was analysed.
        let scan = try NaviscanProcess.run(["scan", lib.music, "-o", lib.out, "--json", "-q"])
        #expect(scan.stdout.contains("\"unchanged\" : 1") || scan.stdout.contains("\"unchanged\":1"), "\(scan.stdout)")
    }

    @Test("A FLAC whose Vorbis comment is 100 bytes short of 16 MiB is refused, byte-identical and still decoding (its block length would wrap)")
    func commentAtFlacLimit() throws {
        let lib = try Library(["Album/lyrics.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try Self.prepare(["big-comment", lib.music + "/Album/lyrics.flac", String(0xFFFFFF - 100)])
        try lib.scan()
        let before = try lib.bytes("Album/lyrics.flac")
        let run = try lib.tag()
        #expect(run.status == 1)
        #expect(run.stderr.contains("16 MiB block limit"), "\(run.stderr)")
        #expect(try lib.bytes("Album/lyrics.flac") == before)
        #expect(try lib.audio("Album/lyrics.flac").frames > 0)
    }

    @Test("Another tagger editing the file between the copy and the rename: naviscan drops its copy, keeps the other edit and says so")
    func concurrentEdit() throws {
        let lib = try Library(["Album/edited.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try lib.scan()
        let fifo = lib.root + "/commit.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let (process, _, stderrPipe) = try NaviscanProcess.start(["tag", lib.music, "-o", lib.out],
                                                                 environment: ["NAVISCAN_TEST_TAG_COMMIT_FIFO": fifo])
        // Wait (on the FIFO, not on a clock) until the write-back is about to commit.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        var line = [UInt8]()
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning, Date() < deadline, !line.contains(UInt8(ascii: "\n")) {
            var poller = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 500) > 0 else { continue }
            var byte: UInt8 = 0
            while read(reader, &byte, 1) == 1 { line.append(byte) }
        }
        close(reader)
        try #require(line.contains(UInt8(ascii: "\n")), "the write-back never reached its commit")
        #expect(String(decoding: line, as: UTF8.self).hasSuffix("Album/edited.flac\n"))
        // The other tagger writes now; then the write-back goes on.
        let edit = try Self.python("tagdump.py", ["--set-album", "Edited Elsewhere", "Someone", lib.music + "/Album/edited.flac"])
        #expect(edit.status == 0, "\(edit.stderr)")
        let edited = try lib.bytes("Album/edited.flac")
        let writer = open(fifo, O_WRONLY)
        close(writer)
        process.waitUntilExit()
        let stderr = String(decoding: stderrPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 1)
        #expect(stderr.contains("failed Album/edited.flac: it changed while naviscan was tagging it"), "\(stderr)")
        #expect(try lib.bytes("Album/edited.flac") == edited, "the other tagger's edit was reverted")
        #expect(try lib.tags("Album/edited.flac")["ALBUM"] == "Edited Elsewhere")
        #expect(try lib.hiddenFiles(in: "Album").isEmpty)
    }

    @Test("A POSIX ACL (Navidrome's user may read) and a user.* attribute stay on the tagged file, with its mode")
    func aclAndAttributes() throws {
        let lib = try Library(["Album/shared.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try lib.scan()
        let path = lib.music + "/Album/shared.flac"
        try Self.prepare(["share", path])
        let attributes = try Self.attributes(path)
        var before = stat()
        #expect(stat(path, &before) == 0)
        let audio = try lib.audio("Album/shared.flac")

        let run = try lib.tag()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try lib.tags("Album/shared.flac")["REPLAYGAIN_TRACK_GAIN"] != nil)
        var after = stat()
        #expect(stat(path, &after) == 0)
        #expect(after.st_ino != before.st_ino, "not a rewrite: the test proves nothing")
        #expect(after.st_mode == before.st_mode && after.st_uid == before.st_uid && after.st_gid == before.st_gid)
        #expect(try Self.attributes(path) == attributes)
        #expect(attributes.keys.sorted() == ["system.posix_acl_access", "user.navidrome.note"])
        #expect(try lib.audio("Album/shared.flac") == audio)
    }

    @Test("An album folder swapped for a link to another disk after the scan is not written through; the rest of the library is tagged")
    func folderSwappedForLink() throws {
        let lib = try Library(["Inside/a.flac": "formats/tagged.flac", "Swapped/b.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try lib.scan()
        let elsewhere = lib.root + "/other-disk"
        try FileManager.default.moveItem(atPath: lib.music + "/Swapped", toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: lib.music + "/Swapped", withDestinationPath: elsewhere)
        let before = try Data(contentsOf: URL(fileURLWithPath: elsewhere + "/b.flac"))
        let run = try lib.tag()
        #expect(run.status == 1)
        #expect(run.stderr.contains("failed Swapped/b.flac: its folder now leads outside the library"), "\(run.stderr)")
        #expect(run.stderr.contains("1 file tagged"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: elsewhere + "/b.flac")) == before)
    }

    @Test("Hard links stay one file: an MP3 whose new tags fit its padding is edited in place; a FLAC without padding is left whole with a message")
    func hardLinks() throws {
        let lib = try Library(["Album/linked.mp3": "formats/tagged.mp3", "Album/tight.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        // mutagen's save gives the MP3's tag room to spare; the FLAC has none.
        #expect(try Self.python("tagdump.py", ["--set-album", "Linked", "Seeder", lib.music + "/Album/linked.mp3"]).status == 0)
        try Self.prepare(["no-padding", lib.music + "/Album/tight.flac"])
        let seeding = lib.root + "/seeding"
        try FileManager.default.createDirectory(atPath: seeding, withIntermediateDirectories: true)
        #expect(link(lib.music + "/Album/linked.mp3", seeding + "/linked.mp3") == 0)
        #expect(link(lib.music + "/Album/tight.flac", seeding + "/tight.flac") == 0)
        try lib.scan()
        let audio = try lib.audio("Album/linked.mp3")
        let tight = try lib.bytes("Album/tight.flac")

        let run = try lib.tag()
        #expect(run.status == 1)
        #expect(run.stderr.contains("failed Album/tight.flac: it has 2 hard links and the new tags do not fit"), "\(run.stderr)")
        var inLibrary = stat(), seeded = stat()
        #expect(stat(lib.music + "/Album/linked.mp3", &inLibrary) == 0 && stat(seeding + "/linked.mp3", &seeded) == 0)
        #expect(inLibrary.st_ino == seeded.st_ino && inLibrary.st_nlink == 2, "the hard link was split")
        let seededTags = try Self.python("tagdump.py", [seeding + "/linked.mp3"]).stdout
        #expect(seededTags.contains("REPLAYGAIN_TRACK_GAIN"), "\(seededTags)")
        #expect(try lib.audio("Album/linked.mp3") == audio)
        #expect(try lib.bytes("Album/tight.flac") == tight)
        #expect(try Data(contentsOf: URL(fileURLWithPath: seeding + "/tight.flac")) == tight)
    }

    @Test("A file that is a symbolic link stays a link: skipped by default, its target written through with --follow-symlinks")
    func fileSymlink() throws {
        // The target sits in a hidden folder, which the scan skips: the link is the only track.
        let lib = try Library([".hidden/real.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try FileManager.default.createDirectory(atPath: lib.music + "/Links", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: lib.music + "/Links/alias.flac", withDestinationPath: "../.hidden/real.flac")
        try lib.scan()
        let before = try lib.bytes(".hidden/real.flac")
        let skipped = try lib.tag()
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.stderr.contains("1 a symbolic link (pass --follow-symlinks to tag its target)"), "\(skipped.stderr)")
        #expect(try lib.bytes(".hidden/real.flac") == before)

        let followed = try lib.tag(["--follow-symlinks"])
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(followed.stderr.contains("1 file tagged"), "\(followed.stderr)")
        var info = stat()
        #expect(lstat(lib.music + "/Links/alias.flac", &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "the link became a copy")
        #expect(try lib.tags(".hidden/real.flac")["REPLAYGAIN_TRACK_GAIN"] != nil)
    }

    @Test("An ID3v2.3 tag stays ID3v2.3 with every other frame byte for byte (RVAD, TRDA, TSIZ, TYER, a '(17)Rock' genre, a picture)")
    func id3v23() throws {
        let lib = try Library(["Album/legacy.mp3": "formats/tagged.mp3"])
        defer { lib.remove() }
        try Self.prepare(["id3v23", lib.music + "/Album/legacy.mp3"])
        try lib.scan()
        let audio = try lib.audio("Album/legacy.mp3")
        let before = try Self.frames(lib.music + "/Album/legacy.mp3")
        #expect(before.version == "2.3")
        let run = try lib.tag()
        #expect(run.status == 0, "\(run.stderr)")
        let after = try Self.frames(lib.music + "/Album/legacy.mp3")
        #expect(after.version == "2.3")
        #expect(Array(after.frames.prefix(before.frames.count)) == before.frames, "a frame changed")
        let added = after.frames.dropFirst(before.frames.count)
        #expect(!added.isEmpty && added.allSatisfy { $0[0] == "TXXX" || $0[0] == "TBPM" }, "\(added)")
        #expect(Set(before.frames.map { $0[0] }).isSuperset(of: ["RVAD", "TRDA", "TSIZ", "TYER", "TCON", "APIC"]))
        #expect(try lib.tags("Album/legacy.mp3")["REPLAYGAIN_TRACK_GAIN"]?.hasSuffix(" dB") == true)
        #expect(try lib.audio("Album/legacy.mp3") == audio)
        #expect(try lib.tag().stderr.contains("0 files tagged, 1 already up to date"))
    }

    @Test("A 250-byte file name is tagged (its copy's name fits the folder's limit)")
    func longName() throws {
        let name = String(repeating: "n", count: 245) + ".flac"
        let lib = try Library(["Album/" + name: "formats/tagged.flac"])
        defer { lib.remove() }
        try lib.scan()
        let run = try lib.tag()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("1 file tagged"), "\(run.stderr)")
        #expect(try lib.hiddenFiles(in: "Album").isEmpty)
    }

    @Test("Copies left by a killed run are recognised and removed by the next one; a look-alike name is not touched")
    func leftoverCopies() throws {
        let lib = try Library(["Album/a.flac": "formats/tagged.flac"])
        defer { lib.remove() }
        try lib.scan()
        let leftover = lib.music + "/Album/.a.flac.naviscan-tag-Xy12Zq"
        let lookAlike = lib.music + "/Album/.a.flac.naviscan-tag-keep"
        try lib.bytes("Album/a.flac").write(to: URL(fileURLWithPath: leftover))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: lookAlike))
        let run = try lib.tag()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("removed 1 file left beside tracks by an interrupted naviscan tag"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(FileManager.default.fileExists(atPath: lookAlike))
    }

    // MARK: helpers

    /// Every extended attribute, as the kernel lists it (through Python's os.listxattr).
    static func attributes(_ path: String) throws -> [String: String] {
        let run = try python("tagfixture.py", ["xattrs", path])
        try #require(run.status == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: String])
    }

    static func frames(_ path: String) throws -> (version: String, frames: [[String]]) {
        let run = try python("tagfixture.py", ["frames", path])
        try #require(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        return (object["version"] as? String ?? "", object["frames"] as? [[String]] ?? [])
    }
}
