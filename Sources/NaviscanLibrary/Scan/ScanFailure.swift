import Foundation

/// A track that could not be analysed, and why.
public struct ScanFailure: Codable, Sendable, Equatable {
    public var relativePath: String
    public var reason: String
    /// The failure was recorded by an earlier run and the file has not changed since.
    public var known: Bool

    public init(relativePath: String, reason: String, known: Bool = false) {
        self.relativePath = relativePath
        self.reason = reason
        self.known = known
    }

    enum CodingKeys: String, CodingKey { case relativePath = "relative_path", reason, known }
}
