import Foundation
import NaviscanCore
import NaviscanTestSupport
import Testing

@Suite("AtomicFile: the new content under its name, or the old, never a torn file")
struct AtomicFileTests {
    func files(_ directory: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted() }

    @Test("A commit replaces the old content in one rename and leaves no temporary file; both durabilities")
    func replaces() throws {
        let dir = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-atomic")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/track.json"
        try AtomicFile.write(Data("old".utf8), to: path)
        try AtomicFile.write(Data("new content".utf8), to: path, durability: .deferred)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new content")
        #expect(files(dir) == ["track.json"])
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o644)

        // Writes at offsets (a header patched after the body) land where asked.
        let file = try AtomicFile(destination: path)
        try Data("xxxxBODY".utf8).withUnsafeBytes { try file.write($0) }
        try Data("HEAD".utf8).withUnsafeBytes { try file.write($0, at: 0) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new content", "nothing changes before the commit")
        try file.commit()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "HEADBODY")
    }

    @Test("A file never committed (an error, a cancelled track) leaves the old content and no temporary file")
    func abandoned() throws {
        let dir = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-atomic")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/frames.vis"
        try AtomicFile.write(Data("kept".utf8), to: path)
        do {
            let file = try AtomicFile(destination: path)
            try Data("half".utf8).withUnsafeBytes { try file.write($0) }
            #expect(files(dir).count == 2)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "kept")
        #expect(files(dir) == ["frames.vis"])
    }

    @Test("A folder that is gone is an OutputFileError naming the file and the cause")
    func missingFolder() throws {
        let dir = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-atomic")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/gone/x.json"
        do {
            try AtomicFile.write(Data("x".utf8), to: path)
            Issue.record("writing into a missing folder succeeded")
        } catch let error as OutputFileError {
            #expect(error.path == path && error.code == ENOENT, "\(error)")
        }
    }
}
