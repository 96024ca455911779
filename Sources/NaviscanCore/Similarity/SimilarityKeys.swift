import Foundation

/// The names of a `SimilarityIndex`'s rows: row i is `keys[i]`, and `position(of:)` finds a row.
public protocol SimilarityKeys: Sendable {
    associatedtype Key: Hashable & Sendable
    var count: Int { get }
    subscript(position: Int) -> Key { get }
    func position(of key: Key) -> Int?
}

/// Any keys, found through a dictionary (the first of equal keys wins).
public struct HashedKeys<Key: Hashable & Sendable>: SimilarityKeys {
    public let keys: [Key]
    private let positions: [Key: Int]

    public init(_ keys: [Key]) {
        self.keys = keys
        var positions = [Key: Int](minimumCapacity: keys.count)
        for (i, key) in keys.enumerated() where positions[key] == nil { positions[key] = i }
        self.positions = positions
    }

    public var count: Int { keys.count }
    public subscript(position: Int) -> Key { keys[position] }
    public func position(of key: Key) -> Int? { positions[key] }
}

/// Paths in strictly increasing byte order (SQLite's BINARY order, the store's), kept as their
/// UTF-8 bytes one after another and found by binary search: a store's 100,000 paths cost one
/// buffer, not 100,000 strings and a dictionary. A String is made only for a path asked for.
/// Paths are told apart by their bytes: "ö" and "o" + U+0308 are two files on disk.
public struct SortedPaths: SimilarityKeys, Equatable {
    private var bytes: [UInt8] = []
    /// Where each path ends in `bytes`.
    private var ends: [Int] = []

    public init() {}

    /// Paths given in any order: sorted here, the first of equal byte strings kept.
    public init(_ paths: [String]) {
        let sorted = paths.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        for path in sorted { _ = path.withUnsafeBytes { append(utf8: $0) } }
    }

    public mutating func reserveCapacity(paths: Int, bytes: Int) {
        ends.reserveCapacity(paths)
        self.bytes.reserveCapacity(bytes)
    }

    public var count: Int { ends.count }

    /// Appends a path's UTF-8 bytes; false, appending nothing, unless they sort after the last path's.
    @discardableResult
    public mutating func append(utf8 path: UnsafeRawBufferPointer) -> Bool {
        if let last = ends.indices.last, withBytes(last, { Self.compare($0, path) }) >= 0 { return false }
        bytes.append(contentsOf: path)
        ends.append(bytes.count)
        return true
    }

    @discardableResult
    public mutating func append(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { append(utf8: UnsafeRawBufferPointer($0)) }
    }

    public subscript(position: Int) -> String {
        withBytes(position) { String(decoding: $0, as: UTF8.self) }
    }

    /// The UTF-8 bytes of path `position`.
    public func withBytes<T>(_ position: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let start = position == 0 ? 0 : ends[position - 1]
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<ends[position]])) }
    }

    public func position(of key: String) -> Int? {
        var key = key
        return key.withUTF8 { key in
            var low = 0, high = count
            while low < high {
                let middle = (low + high) / 2
                let order = withBytes(middle) { Self.compare($0, UnsafeRawBufferPointer(key)) }
                if order == 0 { return middle }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// Byte order: negative when `a` sorts before `b`, 0 for the same bytes.
    public static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = Swift.min(a.count, b.count)
        let order = common == 0 ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, common))
        return order != 0 ? order : a.count - b.count
    }
}

extension SortedPaths: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
}
