import Foundation
import GRDB
import NaviscanCore

/// The similarity read, kept whole: every eligible track's path, duration and vector as written at
/// one change sequence, in blocks of `blockTracks` (table `similarity_snapshot`, described by a
/// `meta` row). `naviscan similar` at 100,000 tracks then reads about 21 MB in a few large rows
/// instead of two scans of 100,000 small ones; a snapshot of another sequence, features version or
/// format is not read (`LibraryStore.featureTable()` scans instead).
///
/// A block, little-endian: track count n (UInt32); n durations (Float64); n vectors as stored
/// (`SonicFeatures.storedBytes` each); n pairs of Float32, each track's mean and spread of distances
/// (mutual proximity); n path lengths in bytes (UInt32); the paths' UTF-8 bytes.
enum SimilaritySnapshot {
    static let table = "similarity_snapshot"
    /// Bumped whenever the block layout changes: a store's snapshot of another format is not read.
    static let format = 2
    static let blockTracks = 4096

    /// What the `meta` row says of the blocks.
    struct Description: Codable, Equatable {
        var format: Int
        var featuresVersion: Int
        var changeSequence: Int64
        var tracks: Int
        var blocks: Int
    }

    static func createTable(_ db: Database) throws {
        try db.create(table: table) { t in
            t.primaryKey("block", .integer)
            t.column("data", .blob).notNull()
        }
    }

    /// Replaces the snapshot with `features`, read at `sequence`.
    static func write(_ features: LibraryStore.FeatureTable, sequence: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM \(table)")
        var blocks = 0
        for start in stride(from: 0, to: features.paths.count, by: blockTracks) {
            let range = start..<min(start + blockTracks, features.paths.count)
            try db.execute(sql: "INSERT INTO \(table) (block, data) VALUES (?, ?)", arguments: [blocks, encode(features, range)])
            blocks += 1
        }
        let description = Description(format: format, featuresVersion: SonicFeatures.version, changeSequence: sequence,
                                      tracks: features.paths.count, blocks: blocks)
        try LibraryStore.setMeta(MetaKey.similaritySnapshot, String(decoding: try JSONEncoder().encode(description), as: UTF8.self), db)
    }

    /// The snapshot when it is of this format and features version and was written at the store's
    /// current sequence; nil otherwise, and for any block that does not decode.
    static func read(_ db: Database) throws -> LibraryStore.FeatureTable? {
        guard let json = try LibraryStore.meta(MetaKey.similaritySnapshot, db),
              let description = try? JSONDecoder().decode(Description.self, from: Data(json.utf8)),
              description.format == format, description.featuresVersion == SonicFeatures.version,
              description.changeSequence == (try LibraryStore.sequence(db)) else { return nil }
        var features = LibraryStore.FeatureTable()
        features.paths.reserveCapacity(paths: description.tracks, bytes: description.tracks * 64)
        features.durations.reserveCapacity(description.tracks)
        features.features.reserveCapacity(description.tracks)
        let rows = try Row.fetchCursor(db, sql: "SELECT block, data FROM \(table) ORDER BY block")
        var blocks = 0
        while let row = try rows.next() {
            guard row[0] as Int == blocks,
                  try row.withUnsafeData(atIndex: 1, { data in data.map { decode($0, into: &features) } ?? false }) else { return nil }
            blocks += 1
        }
        guard blocks == description.blocks, features.paths.count == description.tracks else { return nil }
        return features
    }

    static func encode(_ features: LibraryStore.FeatureTable, _ range: Range<Int>) -> Data {
        var out = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        append(UInt32(range.count))
        for i in range { append(features.durations[i].bitPattern) }
        for i in range { out.append(features.features.stored(i)) }
        for i in range { for k in 0..<2 { append(features.proximity[2 * i + k].bitPattern) } }
        for i in range { append(UInt32(features.paths.withBytes(i) { $0.count })) }
        for i in range { features.paths.withBytes(i) { out.append(contentsOf: $0) } }
        return out
    }

    /// Appends a block's tracks; false when it is not a whole block of this format.
    static func decode(_ data: Data, into features: inout LibraryStore.FeatureTable) -> Bool {
        data.withUnsafeBytes { raw in
            func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T? {
                guard offset >= 0, offset + MemoryLayout<T>.size <= raw.count else { return nil }
                return T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
            }
            guard let n = load(0, UInt32.self).map(Int.init) else { return false }
            let size = SonicFeatures.storedBytes
            let durations = 4, vectors = durations + n * 8, proximity = vectors + n * size, lengths = proximity + n * 8, names = lengths + n * 4
            guard names <= raw.count else { return false }
            var at = names
            for i in 0..<n {
                guard let length = load(lengths + i * 4, UInt32.self).map(Int.init), at + length <= raw.count,
                      let bits = load(durations + i * 8, UInt64.self),
                      features.features.append(stored: UnsafeRawBufferPointer(rebasing: raw[(vectors + i * size)..<(vectors + (i + 1) * size)]))
                else { return false }
                // In the store's order, each path after the one before, as the tables give them.
                guard features.paths.append(utf8: UnsafeRawBufferPointer(rebasing: raw[at..<(at + length)])) else { return false }
                features.durations.append(Double(bitPattern: bits))
                for k in 0..<2 {
                    guard let value = load(proximity + i * 8 + k * 4, UInt32.self).map(Float.init(bitPattern:)), value.isFinite else { return false }
                    features.proximity.append(value)
                }
                at += length
            }
            return at == raw.count
        }
    }
}
