import Foundation

// Value types the store and the library both name: below both.

/// One candidate audio file found under the library root.
public struct LibraryFile: Sendable, Equatable {
    /// Path relative to the library root, '/'-separated: the track's identity in the store and the API.
    public let relativePath: String
    public let path: String
    public let size: Int64
    /// Modification time, seconds since 1970 (nanosecond precision where the file system has it).
    public let mtime: Double

    public init(relativePath: String, path: String, size: Int64, mtime: Double) {
        self.relativePath = relativePath
        self.path = path
        self.size = size
        self.mtime = mtime
    }
}

/// The library's identity as the store recorded it at the last trusted scan.
public struct LibraryIdentity: Sendable, Hashable {
    public var root: String?
    public var device: UInt64?

    public init(root: String?, device: UInt64?) {
        self.root = root
        self.device = device
    }
}

/// An album measured from `members`, to record once their rewritten rows are committed: its digest
/// is taken from the members' rows in the same transaction (`LibraryStore.commitTracks`).
public struct AlbumUpdate: Sendable {
    /// The digest of the members' rows (path and change sequence): the album pass's own rule,
    /// applied by the store inside the commit that assigns the rows' new sequence numbers.
    public typealias Digest = @Sendable ([(relativePath: String, seq: Int64)]) -> String

    package let members: [String]
    package let record: AlbumRecord
    package let digest: Digest

    package init(members: [String], record: AlbumRecord, digest: @escaping Digest) {
        self.members = members
        self.record = record
        self.digest = digest
    }
}
