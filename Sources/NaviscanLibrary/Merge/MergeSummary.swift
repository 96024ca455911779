import Foundation

/// What a merge did.
public struct MergeSummary: Encodable, Sendable {
    /// The shards the output holds now ("0,1,3/4"); nil when it holds the whole library.
    public var coverage: String?
    /// Tracks in the output store after the merge.
    public var tracks = 0
    /// Tracks whose rows and files were copied in (new, or changed since the last merge).
    public var written = 0
    /// Tracks the output already held exactly as their shard does.
    public var unchanged = 0
    /// Tracks of the merged shards gone from the shard stores, removed from the output.
    public var removed = 0
    /// Output files hard-linked (same file system) and copied (another one).
    public var filesLinked = 0
    public var filesCopied = 0

    enum CodingKeys: String, CodingKey {
        case coverage, tracks, written, unchanged, removed, filesLinked = "files_linked", filesCopied = "files_copied"
    }
}
