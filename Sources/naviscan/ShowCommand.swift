import ArgumentParser
import Foundation
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// `naviscan show PATH`: one track's stored facts and profile, found by its path in the library.
struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one track's stored profile and facts, by its path.",
        discussion: """
            PATH is the audio file (absolute, or relative to the current directory), or its path inside the \
            library. The store is found from --out or --library, the config file, or the nearest \
            folder above the file that holds .naviscan/naviscan.db.

            Examples:
              naviscan show ~/Music/Artist/Album/01\\ Track.flac
              naviscan show "Artist/Album/01 Track.flac" --library ~/Music --json
            """
    )

    @Argument(help: "The track.")
    var path: String

    @Option(help: "The music library.")
    var library: String?

    @Flag(help: "Print the stored row and the profile as JSON.")
    var json = false

    @OptionGroup var store: StoreOptions

    func run() async throws {
        let settings = try await EffectiveConfiguration.load(flags: store.flags(library: library), configFile: store.config.path)
        let absolute = StoreLocation.standardized(path)
        let configured = try? StoreLocation.resolve(libraryArgument: nil, config: settings, command: "show")
        guard let location = configured ?? OutputLayout.enclosing(file: absolute).map({ StoreLocation(library: $0.library, out: $0.layout.root) }) else {
            throw CLIError("no store found for \(path): pass --library LIBRARY or --out DIR")
        }
        try location.requireStore()
        let trackStore: LibraryStore
        do { trackStore = try LibraryStore(path: location.databasePath) } catch { throw CLIError(UserMessage.describe(error)) }
        let root = try location.library ?? trackStore.libraryIdentity().root
        var relative = path
        if let root, absolute.hasPrefix(root + "/") { relative = String(absolute.dropFirst(root.count + 1)) }
        guard let track = try await trackStore.track(relativePath: relative) else {
            throw CLIError("\(relative) is not in the store \(location.out) (library \(root ?? "unknown")); `naviscan scan` adds new files, `naviscan status` lists what is there", code: 1)
        }
        let layout = OutputLayout(root: location.out)
        if json {
            let document: TrackDocument
            do { document = try TrackDocument(track, layout: layout) } catch {
                throw CLIError("the stored profile of \(relative) cannot be read (\(error)); scan the library again to rewrite it", code: 3)
            }
            try JSONOutput.write(document)
            return
        }
        print("track:       \(track.relativePath)")
        print("status:      \(track.status.rawValue)" + (track.errorMessage.map { " (\($0))" } ?? ""))
        if let codec = track.codec, let rate = track.sampleRate, let channels = track.channels {
            print("stream:      \(codec), \(rate) Hz, \(channels) ch" + (track.duration.map { ", \(formatDuration($0))" } ?? ""))
        }
        print("analysed:    \(track.analyzedAt) by naviscan \(track.analyzerVersion)")
        if let lufs = track.lufs, let gain = track.gainDB { print(String(format: "loudness:    %.2f LUFS, gain %+.2f dB", lufs, gain)) }
        if let bpm = track.bpm { print(String(format: "tempo:       %.1f BPM (confidence %.2f)", bpm, track.bpmConfidence ?? 0)) }
        if let json = track.profileJSON, let profile = try? StoredProfile.read(Data(json.utf8)) {
            let key = profile.key.flatMap { key in
                key.musicalKey.map { "\($0.words) (\($0.camelot), Open Key \($0.openKey)), confidence " + String(format: "%.2f", key.confidence) }
            }
            print("key:         " + (key ?? "none"))
        }
        if let end = track.silenceEnd, let start = track.silenceStart {
            print(String(format: "sound:       from %.2f s to %.2f s", end, start) + (track.silent == true ? " (silent track)" : ""))
        }
        if track.profileFingerprint != nil { print("profile:     \(layout.profilePath(key: track.key))") }
        if track.visFingerprint != nil { print("frames:      \(layout.visPath(key: track.key))") }
        if let profile = track.profileJSON { print(profile) }
    }
}
