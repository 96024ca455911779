import Foundation
import Hummingbird
import NaviscanCore
import NaviscanLibrary

/// Turns the path a client sends into the library-relative path of a stored track. Clients of
/// Navidrome send what Navidrome reported, which is one of:
///  - the library-relative path (naviscan's own, or Navidrome's with "Report Real Path" on and the
///    same music folder);
///  - an absolute path on Navidrome's machine ("Report Real Path" on): `/music/Artist/…`, mapped by
///    `--navidrome-music-folder /music`;
///  - the path Navidrome builds from the tags when "Report Real Path" is off (its default):
///    `Album Artist/Album/DD-TT - Title.ext`. These are found through an index of the stored tags,
///    rebuilt when the store changes; two tracks with the same built path answer 409 with both.
actor TrackPaths {
    let store: StoreHandle
    /// Navidrome's music folder as its absolute paths start, without a trailing slash.
    let navidromeMusicFolder: String?
    private var index: [String: [String]] = [:]
    private var indexedSequence: Int64 = -1

    init(store: StoreHandle, navidromeMusicFolder: String?) {
        self.store = store
        self.navidromeMusicFolder = navidromeMusicFolder.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// The stored track `raw` names; a valid path naviscan does not hold comes back as it is (the
    /// endpoint then answers 404).
    func resolve(_ raw: String?) async throws -> String {
        guard var path = raw, !path.isEmpty else { throw APIError.badRequest("relative_path is required") }
        if path.hasPrefix("/") {
            guard let folder = navidromeMusicFolder, path.hasPrefix(folder + "/") else {
                throw APIError.badRequest("relative_path must be relative to the library, not absolute"
                    + (navidromeMusicFolder == nil ? " (for Navidrome's real paths, start serve with --navidrome-music-folder, e.g. /music)" : ""))
            }
            path = String(path.dropFirst(folder.count + 1))
        }
        path = try RelativePath.validate(path)
        let current = store.current
        if try await current.track(relativePath: path) != nil { return path }
        let sequence = try await current.latestSequence()
        if sequence != indexedSequence {
            index = Self.index(try await current.tracksWithTags())
            indexedSequence = sequence
        }
        let matches = index[path] ?? []
        if matches.count > 1 {
            throw APIError(status: .conflict, message: "\(path) is Navidrome's tag-built path of \(matches.count) tracks; ask for one of them by its own path",
                           candidates: matches)
        }
        return matches.first ?? path
    }

    static func index(_ tracks: [TrackRecord]) -> [String: [String]] {
        var index: [String: [String]] = [:]
        for track in tracks where track.missingSince == nil {
            index[navidromePath(relativePath: track.relativePath, tags: track.tags), default: []].append(track.relativePath)
        }
        return index
    }

    /// The path Navidrome reports for a track when "Report Real Path" is off: album artist (else
    /// the artist), album, then `DD-` when there is a disc number, `TT - ` when there is a track
    /// number, the title (else the file name) and the extension in lower case; `/` inside a name
    /// becomes `_`.
    static func navidromePath(relativePath: String, tags: TrackTags?) -> String {
        func clean(_ name: String) -> String { name.replacingOccurrences(of: "/", with: "_") }
        let file = (relativePath as NSString).lastPathComponent
        let albumArtist = nonEmpty(tags?.albumArtist) ?? nonEmpty(tags?.artist) ?? "[Unknown Artist]"
        let album = nonEmpty(tags?.album) ?? "[Unknown Album]"
        let title = nonEmpty(tags?.title) ?? (file as NSString).deletingPathExtension
        var name = ""
        if let disc = tags?.discNumber, disc != 0 { name += String(format: "%02d-", disc) }
        if let track = tags?.trackNumber, track != 0 { name += String(format: "%02d - ", track) }
        name += clean(title) + "." + (file as NSString).pathExtension.lowercased()
        return clean(albumArtist) + "/" + clean(album) + "/" + name
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }
}

/// A request's query, decoded as browsers and form encoders send it: `+` is a space, `%XX` a byte.
struct QueryValues {
    private let pairs: [(name: String, value: String)]

    init(_ request: Request) {
        pairs = (request.uri.query ?? "").split(separator: "&").map { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decode(kv[0]), kv.count > 1 ? Self.decode(kv[1]) : "")
        }
        rawPairs = (request.uri.query ?? "").split(separator: "&").map { part in
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decode(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        }
    }

    private let rawPairs: [(name: String, value: String)]

    func first(_ name: String) -> String? { pairs.first { $0.name == name }?.value }
    func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    /// The companion API's `paths=P1,P2`: one parameter is split on its literal commas (a comma
    /// inside a path is sent as %2C); repeated parameters are one path each and never split.
    func pathList(_ name: String) -> [String] {
        let raw = rawPairs.filter { $0.name == name }.map(\.value)
        if raw.count == 1 { return raw[0].split(separator: ",").map { Self.decode($0) } }
        return raw.map { Self.decode(Substring($0)) }
    }

    static func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
