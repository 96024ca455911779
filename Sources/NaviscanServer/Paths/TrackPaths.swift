import Foundation
import Hummingbird
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

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
    /// Navidrome's database, for the song IDs its clients send.
    let navidromeDatabase: NavidromeDatabase?
    let settingNames: SettingNames
    private var index: [String: [String]] = [:]
    private var indexedSequence: Int64 = -1

    init(store: StoreHandle, navidromeMusicFolder: String?, navidromeDatabase: NavidromeDatabase? = nil, settingNames: SettingNames = SettingNames()) {
        self.store = store
        self.settingNames = settingNames
        self.navidromeMusicFolder = navidromeMusicFolder.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.navidromeDatabase = navidromeDatabase
    }

    /// The track a request names: `relative_path=P` (any of the forms above), or `id=ID`, a
    /// Navidrome song ID (with `--navidrome-db`).
    func resolve(_ query: QueryValues) async throws -> String {
        if let id = query.first("id"), query.first("relative_path") == nil {
            guard !id.isEmpty else { throw APIError.badRequest("id is empty") }
            guard let path = try await songPath(id: id) else {
                throw APIError.notFound(navidromeDatabase == nil
                    ? "id=\(id) names a Navidrome song, and this server was started without \(settingNames.navidromeDatabase) (Navidrome's navidrome.db) to look it up"
                    : "no song \(id) in Navidrome's database \(navidromeDatabase!.path)")
            }
            return path
        }
        return try await resolve(query.first("relative_path"))
    }

    /// The stored track `raw` names; a valid path naviscan does not hold comes back as it is (the
    /// endpoint then answers 404).
    func resolve(_ raw: String?) async throws -> String {
        guard var path = raw, !path.isEmpty else { throw APIError.badRequest("relative_path is required") }
        if path.hasPrefix("/") {
            guard let folder = navidromeMusicFolder, path.hasPrefix(folder + "/") else {
                throw APIError.badRequest("relative_path must be relative to the library, not absolute"
                    + (navidromeMusicFolder == nil ? " (for Navidrome's real paths, start serve with \(settingNames.navidromeMusicFolder), e.g. /music)" : ""))
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
        if let match = matches.first { return match }
        // A Navidrome song ID where a path was expected (a bulk list from a client that has only IDs).
        if !path.contains("/"), let song = try await songPath(id: path) { return song }
        return path
    }

    /// The library-relative path of Navidrome song `id`, when Navidrome's database is known and has it.
    private func songPath(id: String) async throws -> String? {
        guard let database = navidromeDatabase else { return nil }
        let song: NavidromeDatabase.Song?
        do { song = try database.song(id: id) } catch {
            throw APIError(status: .serviceUnavailable, message: "\(error)")
        }
        guard let song else { return nil }
        guard let relative = NavidromeDatabase.relativePath(of: song, musicFolder: navidromeMusicFolder) else {
            throw APIError.notFound("Navidrome's song \(id) is \(song.path), outside its library folder; start serve with \(settingNames.navidromeMusicFolder) set to Navidrome's music folder")
        }
        return try RelativePath.validate(relative)
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

    /// A yes/no parameter: absent or false/0 is no; present bare, true or 1 is yes; anything else is refused.
    func flag(_ name: String) throws -> Bool {
        guard let value = first(name) else { return false }
        switch value.lowercased() {
        case "", "true", "1": return true
        case "false", "0": return false
        default: throw APIError.badRequest("\(name) must be true or false")
        }
    }

    /// The companion API's `paths=P1,P2`: one parameter is split on its literal commas (a comma
    /// inside a path is sent as %2C); repeated parameters are one path each and never split.
    func pathList(_ name: String) -> [String] {
        let raw = rawPairs.filter { $0.name == name }.map(\.value)
        if raw.count == 1 { return raw[0].split(separator: ",").map { Self.decode($0) } }
        return raw.map { Self.decode(Substring($0)) }
    }

    /// `+` is a space (as browsers send forms); `%XX` is a byte. The bytes are read the way file
    /// names are (`SystemPath`): a name that is not UTF-8, sent as its own bytes (`%E9`), finds the
    /// same track as its escaped form in naviscan's answers (U+F7E9, sent as `%EF%9F%A9`). A `%`
    /// not followed by two hex digits is kept as it is.
    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var utf8 = text.utf8[...]
        while let byte = utf8.first {
            utf8 = utf8.dropFirst()
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), utf8.count >= 2,
                      let high = hexValue(utf8[utf8.startIndex]), let low = hexValue(utf8[utf8.index(after: utf8.startIndex)]) {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return bytes.withUnsafeBufferPointer { SystemPath.string(fromBytes: $0) }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
