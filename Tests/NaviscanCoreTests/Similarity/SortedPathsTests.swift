import NaviscanCore
import Testing

@Suite("SortedPaths: a store's paths in byte order, found by binary search")
struct SortedPathsTests {
    @Test("Every path is found at its place, by its bytes (composed and decomposed ö are two paths); a missing one, a prefix and an out-of-order append are not")
    func lookup() {
        let names = ["b.flac", "o\u{308}.flac", "ö.flac", "Z.flac", "ß.flac", "a/ä.flac", "a.flac", "", "a", "日本/曲.ogg"]
        let paths = SortedPaths(names + ["a.flac"])
        let bytes = names.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(paths.count == names.count)
        #expect(paths.map { Array($0.utf8) } == bytes)
        for name in names {
            let at = paths.position(of: name)
            #expect(at.map { Array(paths[$0].utf8) } == Array(name.utf8), "\(name)")
        }
        #expect(paths.position(of: "a.fla") == nil)
        #expect(paths.position(of: "c.flac") == nil)
        #expect(paths.position(of: "0") == nil)

        var growing = SortedPaths()
        let appended = [growing.append("b"), growing.append("a"), growing.append("b"), growing.append("bb")]
        #expect(appended == [true, false, false, true])
        #expect(Array(growing) == ["b", "bb"])
    }
}
