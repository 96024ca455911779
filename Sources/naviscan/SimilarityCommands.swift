import ArgumentParser
import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// The store and library a similarity command works on, and the tracks it names.
struct SimilarityOptions: ParsableArguments {
    @Argument(help: "The music library (its store is LIBRARY/.naviscan unless --out says otherwise).")
    var library: String

    @Flag(help: "Print the answer as JSON on standard output.")
    var json = false

    // Not -o/--out here: mix and path write their playlist with --out, as players' tools do.
    @Option(name: .customLong("data"), help: ArgumentHelp("The scan's output directory (default: LIBRARY/.naviscan).", valueName: "dir"))
    var data: String?

    @OptionGroup var config: ConfigFileOption

    /// The library's tracks by sound, the library's root and the store's output folder.
    func open(command: String) async throws -> (SimilarTracks, root: String, storeFolder: String) {
        var flags: [String: SettingValue] = [Settings.library.key: .string(library)]
        if let data { flags[Settings.out.key] = .string(data) }
        let loaded = try await StoreSettings.load(flags: flags, configFile: config.path, libraryArgument: library, command: command)
        let location = loaded.location
        try location.requireStore()
        do {
            let store = try LibraryStore.forQueries(path: location.databasePath)
            return (try SimilarTracks(store: store), location.library ?? StoreLocation.standardized(library), location.out)
        } catch {
            throw CLIError(UserMessage.describe(error), code: (error as? LibraryError)?.isFault == true ? 3 : 2)
        }
    }

    /// A track argument as a library-relative path: a full path under the library (or a path from
    /// the current folder to a file in it) loses the library's part; anything else is taken as
    /// relative to the library already.
    static func relative(_ track: String, root: String) -> String {
        let absolute = StoreLocation.standardized(track)
        if absolute.hasPrefix(root + "/"), track.hasPrefix("/") || FileManager.default.fileExists(atPath: absolute) {
            return String(absolute.dropFirst(root.count + 1))
        }
        return track
    }

    /// Runs `body`, turning "no such track" and "no features" into exit status 1 with the reason.
    static func answering<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SimilarityError {
            throw CLIError(error.description, code: 1)
        }
    }

    /// `omitted`: the tracks a written playlist left out (nil when none was written).
    func print(_ matches: [SimilarTracks.Match], omitted: Set<String>? = nil, header: String) throws {
        if json {
            try JSONOutput.write(matches.map { m in MatchOutput(m, inPlaylist: omitted.map { !$0.contains(m.relativePath) }) })
            return
        }
        var text = header + "\n"
        for (i, m) in matches.enumerated() {
            let label = [m.tags.artist, m.tags.title].compactMap { $0 }.joined(separator: " - ")
            let key = m.key?.camelot ?? "-"
            text += String(format: "%3d  %.3f  ", i + 1, m.similarity) + key + String(repeating: " ", count: max(1, 5 - key.count))
                + EscapingLogHandler.escaped(m.relativePath)
                + (label.isEmpty ? "" : "  (\(label))") + (m.duplicate ? "  [same recording]" : "")
                + (omitted?.contains(m.relativePath) == true ? "  [not in the playlist]" : "") + "\n"
        }
        if matches.isEmpty { text += "  (no other track with sound features in this library)\n" }
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// One track of an answer, as `--json` prints it.
struct MatchOutput: Encodable {
    let relativePath: String
    let similarity: Double
    let duplicate: Bool
    let duration: Double
    let title: String?
    let artist: String?
    let album: String?
    /// Camelot ("8A"), null for a track without a key.
    let key: String?
    /// Whether the written playlist lists the track; absent when no playlist was written.
    let inPlaylist: Bool?

    init(_ match: SimilarTracks.Match, inPlaylist: Bool? = nil) {
        self.inPlaylist = inPlaylist
        relativePath = match.relativePath
        similarity = match.similarity
        duplicate = match.duplicate
        duration = (match.duration * 100).rounded() / 100
        title = match.tags.title
        artist = match.tags.artist
        album = match.tags.album
        key = match.key?.camelot
    }

    enum CodingKeys: String, CodingKey { case relativePath = "relative_path", similarity, duplicate, duration, title, artist, album, key, inPlaylist = "in_playlist" }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(relativePath, forKey: .relativePath)
        try c.encode(similarity, forKey: .similarity)
        try c.encode(duplicate, forKey: .duplicate)
        try c.encode(duration, forKey: .duration)
        try c.encode(title, forKey: .title)
        try c.encode(artist, forKey: .artist)
        try c.encode(album, forKey: .album)
        try c.encode(key, forKey: .key)
        try c.encodeIfPresent(inPlaylist, forKey: .inPlaylist)
    }
}

/// `naviscan similar LIBRARY TRACK`: the tracks that sound most like one track.
struct SimilarCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "similar",
        abstract: "List the tracks that sound most like a track (from the features a --dj scan stores).",
        discussion: """
            Most similar first, with a similarity in [0, 1]: the chance that each of the two is nearer the \
            other than a track of this library usually is (mutual proximity; 0.25 for two tracks at their \
            usual distance). Never the track itself; the same recording in another file is marked \
            [same recording], similarity 1. Tracks that are silent, shorter than a few seconds of sound \
            or failed have no features and are never listed (docs/similarity.md).

            Exit status: 0 with an answer (an empty list for a library of one track); 1 when the track is \
            not in the store or has no features; 2 when there is no store.

            Examples:
              naviscan similar ~/Music "Artist/Album/01 Track.flac"
              naviscan similar ~/Music ~/Music/Artist/Album/01\\ Track.flac --count 20 --json
            """
    )

    @OptionGroup var options: SimilarityOptions

    @Argument(help: "The track: its path in the library, or its full path.")
    var track: String

    @Option(help: "How many tracks to list (1 to 1,000).")
    var count = 10

    func validate() throws {
        guard (1...1000).contains(count) else { throw ValidationError("--count must be between 1 and 1,000, not \(count)") }
    }

    func run() async throws {
        let (tracks, root, _) = try await options.open(command: "similar")
        let path = SimilarityOptions.relative(track, root: root)
        let matches = try SimilarityOptions.answering { try tracks.similar(to: path, count: count) }
        try options.print(matches, header: "like \(EscapingLogHandler.escaped(path)):")
    }
}

/// `naviscan mix LIBRARY TRACK --out mix.m3u8`: an instant mix as a playlist.
struct MixCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mix",
        abstract: "Write an instant mix: the track, then tracks like it in a smooth order, as an M3U8 playlist.",
        discussion: """
            Each next track is near the one before it and still near the first; one album gives at most \
            an eighth of the mix (two at least), one artist does not play twice in a row while another \
            fits, and the same recording is never in twice. With --harmonic each next track is also in a \
            key that mixes with the one before (Camelot: the same number, one either way, or the other \
            letter), whenever tracks like the first hold one. The playlist's paths are relative to its own \
            folder, so Navidrome's playlist import (a .m3u8 inside its music folder) and every player read it.

            Examples:
              naviscan mix ~/Music "Artist/Album/01 Track.flac" --out ~/Music/Playlists/like-track.m3u8
              naviscan mix ~/Music "Artist/Album/01 Track.flac" --count 40 --json
              naviscan mix ~/Music "Artist/Album/01 Track.flac" --harmonic --out ~/Music/Playlists/in-key.m3u8
            """
    )

    @OptionGroup var options: SimilarityOptions

    @Argument(help: "The track the mix starts from.")
    var track: String

    @Option(help: "Tracks in the mix, the first included (2 to 1,000).")
    var count = 25

    @Flag(help: "Keep each step in a key that mixes with the one before (the same, a fifth either way, the relative key), where the library allows.")
    var harmonic = false

    @OptionGroup var playlist: PlaylistOutput

    func validate() throws {
        guard (2...1000).contains(count) else { throw ValidationError("--count must be between 2 and 1,000, not \(count)") }
    }

    func run() async throws {
        let (tracks, root, storeFolder) = try await options.open(command: "mix")
        try playlist.check(storeFolder: storeFolder)
        let path = SimilarityOptions.relative(track, root: root)
        let mix = try SimilarityOptions.answering { try tracks.mix(from: path, count: count, harmonic: harmonic) }
        let omitted = try playlist.write(mix, root: root)
        try options.print(mix, omitted: omitted, header: "mix from \(EscapingLogHandler.escaped(path)):")
    }
}

/// `naviscan path LIBRARY A B`: tracks easing from one sound to another.
struct PathCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Write a sonic path: tracks that ease from one track's sound to another's.",
        discussion: """
            The first track, then tracks each nearest to a point moving evenly from the first track's \
            features to the last's, then the last track; the same recording as either end is left out.

            Examples:
              naviscan path ~/Music "Ambient/01.flac" "Drum and Bass/07.flac" --count 12 --out ~/Music/Playlists/path.m3u8
            """
    )

    @OptionGroup var options: SimilarityOptions

    @Argument(help: "The track the path starts from.")
    var from: String

    @Argument(help: "The track the path ends with.")
    var to: String

    @Option(help: "Tracks on the path, both ends included (2 to 1,000).")
    var count = 12

    @OptionGroup var playlist: PlaylistOutput

    func validate() throws {
        guard (2...1000).contains(count) else { throw ValidationError("--count must be between 2 and 1,000, not \(count)") }
    }

    func run() async throws {
        let (tracks, root, storeFolder) = try await options.open(command: "path")
        try playlist.check(storeFolder: storeFolder)
        let a = SimilarityOptions.relative(from, root: root), b = SimilarityOptions.relative(to, root: root)
        let steps = try SimilarityOptions.answering { try tracks.path(from: a, to: b, count: count) }
        let omitted = try playlist.write(steps, root: root)
        try options.print(steps, omitted: omitted, header: "from \(EscapingLogHandler.escaped(a)) to \(EscapingLogHandler.escaped(b)):")
    }
}

/// Where mix and path write their playlist (`--out`), and `--force`.
struct PlaylistOutput: ParsableArguments {
    @Option(name: [.customShort("o"), .customLong("out")], help: ArgumentHelp("The M3U8 playlist to write (else the list is only printed).", valueName: "playlist.m3u8"))
    var path: String?

    @Flag(help: "Write the playlist over an existing file that is not a playlist, or inside the store's folder.")
    var force = false

    /// Refuses, before any work, a target that is not a playlist or lies in the store's folder (`PlaylistTarget`).
    func check(storeFolder: String) throws {
        guard let path, !force else { return }
        switch PlaylistTarget.refusal(path: StoreLocation.standardized(path), storeFolder: storeFolder) {
        case .insideStore(let target, let folder)?:
            throw CLIError("\(target) is inside the store's folder \(folder), where naviscan keeps the store and its outputs; "
                + "write the playlist elsewhere (e.g. in the library), or pass --force", code: 2)
        case .notAPlaylist(let target)?:
            throw CLIError("\(target) exists and is not a playlist (a playlist is text that starts with #EXTM3U, or whose every line "
                + "is a # comment or an audio file's path); choose another --out, or pass --force to replace it", code: 2)
        case nil: return
        }
    }

    /// Writes `matches` as an M3U8 playlist at `path` (temp name, synced, renamed), when given, and
    /// says what it wrote and which tracks it left out; nil when no playlist was asked for.
    func write(_ matches: [SimilarTracks.Match], root: String) throws -> Set<String>? {
        guard let path else { return nil }
        let target = StoreLocation.standardized(path)
        let playlist = SimilarTracks.m3u8(matches, library: root, playlist: target)
        do {
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try AtomicFile.write(playlist.bytes, to: target)
        } catch {
            throw CLIError("cannot write the playlist \(target): \(UserMessage.describe(error)); choose a folder you can write to", code: 2)
        }
        var report = ""
        for omitted in playlist.omitted {
            report += "left \(EscapingLogHandler.escaped(omitted)) out of the playlist: its path holds a line break, which no M3U line can carry; rename the file to list it\n"
        }
        report += "wrote \(matches.count - playlist.omitted.count) tracks to \(target)\n"
        FileHandle.standardError.write(Data(report.utf8))
        return Set(playlist.omitted)
    }
}
