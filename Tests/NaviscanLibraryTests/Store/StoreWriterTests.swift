import Foundation
import NaviscanLibrary
import NaviscanStore
import NaviscanTestSupport
import Testing

@Suite("StoreWriter: batched commits, files removed after their rows, a fault stops it")
struct StoreWriterTests {
    @Test("Rows submitted from many threads are all committed; removeAfter files go once their rows are in")
    func commitsEverything() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-writer")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let store = try LibraryStore.inMemory()
        let stale = scratch + "/stale.vis"
        FileManager.default.createFile(atPath: stale, contents: Data([1, 2, 3]))
        let writer = StoreWriter(store: store, flushPath: scratch, interval: 0.01, batchSize: 16)
        WorkPool(jobs: 4).run(Array(0..<200)) { _, n in
            #expect(writer.submit(.init(changes: [.save(storedTrack("t\(n).flac"))])))
        }
        #expect(writer.submit(.init(changes: [.delete(relativePath: "t0.flac")], removeAfter: [stale])))
        try writer.finish()
        #expect(try store.count() == 199)
        // 200 saves and the delete: each change takes a number (and its event).
        #expect(try store.latestSequence() == 201)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(!writer.submit(.init(changes: [.save(storedTrack("late.flac"))])), "a finished writer takes nothing")
    }

    @Test("A store that cannot be written: the fault is kept, later rows are refused, finish throws it")
    func faultStops() throws {
        let scratch = try FixturePaths.makeTemporaryDirectory(prefix: "naviscan-writer")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let path = OutputLayout(root: scratch).databasePath
        _ = try LibraryStore(path: path)
        let reader = try LibraryStore.readOnly(path: path)
        let kept = scratch + "/kept.vis"
        FileManager.default.createFile(atPath: kept, contents: Data([1]))
        let writer = StoreWriter(store: reader, flushPath: nil, interval: 0.001, batchSize: 1)
        writer.submit(.init(changes: [.save(storedTrack("a.flac"))], removeAfter: [kept]))
        let deadline = Date().addingTimeInterval(10)
        while writer.fault == nil, Date() < deadline { usleep(1000) }
        #expect((writer.fault as? LibraryError)?.isFault == true, "\(String(describing: writer.fault))")
        #expect(!writer.submit(.init(changes: [.save(storedTrack("b.flac"))])))
        #expect(throws: LibraryError.self) { try writer.finish() }
        #expect(FileManager.default.fileExists(atPath: kept), "files of a batch that was not committed stay")
        #expect(try reader.count() == 0)
    }
}
