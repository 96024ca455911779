import ArgumentParser
import Foundation
import Logging
import NaviscanCore
import NaviscanLibrary
import NaviscanStore

/// `naviscan tag LIBRARY`: the store's ReplayGain and BPM written into the files' own tags.
extension KeyNotation: ExpressibleByArgument {}

struct TagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag",
        abstract: "Write ReplayGain 2.0 and BPM into the files' tags, for players that read tags (Navidrome, MPD, Jellyfin, ...).",
        discussion: """
            Opt-in and never part of a scan: it writes what the last scan measured (run `naviscan scan` \
            first). Per track: REPLAYGAIN_TRACK_GAIN ("-6.86 dB", at the store's --reference-lufs) and \
            REPLAYGAIN_TRACK_PEAK, the album pair once the whole album is measured, BPM (rounded), for \
            Opus R128_TRACK_GAIN/R128_ALBUM_GAIN, and with --key the key (a key already there in another \
            notation is left as it is); in ID3v2 (MP3, keeping the tag's version), Vorbis comments (FLAC, Ogg, Opus), \
            iTunes atoms (M4A) or APEv2 (WavPack, Monkey's Audio, Musepack). An Opus header's output gain \
            is never changed. The audio is not touched, nor are other tags and pictures (docs/tags.md).

            Each file is tagged as a copy beside it, and the copy replaces it only once verified: its tags \
            read back, its decoded audio bit-identical, its owner, mode, extended attributes and ACLs the \
            file's, and the file unchanged by any other program meanwhile (checked under a lock). A file \
            with several hard links is edited in place when the new tags fit in its padding, else left \
            alone; a symbolic link only with --follow-symlinks. A failure leaves the file as it was. \
            Values already there (to the tag's precision) are not rewritten; the store records each new \
            file, so the next scan analyses nothing again. A file changed since its scan is left for the \
            next scan; a read-only file, a full disk or a file that fails its check is an error named in \
            the summary (docs/tags.md).

            Exit status: 0 when every file is tagged or already was; 1 when a file could not be tagged; \
            2 when nothing could start (no store, another scan running); 3 when the store failed.

            Examples:
              naviscan tag ~/Music --dry-run    # what would change, changing nothing
              naviscan tag ~/Music
              naviscan tag ~/Music --key --key-notation camelot
              naviscan tag /srv/music -o /var/lib/naviscan --json
            """
    )

    @Argument(help: "The music library (its store is LIBRARY/.naviscan unless --out says otherwise).")
    var library: String?

    @Flag(help: "Print what would change and change nothing.")
    var dryRun = false

    @Flag(name: .customLong("mixramp"), help: "Also write MPD's MixRamp fields (MIXRAMP_START, MIXRAMP_END) for its mixrampdb crossfades.")
    var mixRamp = false

    @Flag(name: .customLong("key"), help: "Also write the key (ID3 TKEY; INITIALKEY in Vorbis comments and APEv2; the iTunes initialkey atom), for DJ software.")
    var key = false

    @Option(name: .customLong("key-notation"), help: "How --key spells the key: standard (\"Am\", \"F#\", as Mixxx, Traktor and rekordbox read it), camelot (\"8A\") or open-key (\"1m\").")
    var keyNotation: KeyNotation = .standard

    @Flag(name: .customLong("follow-symlinks"), help: "Tag the target of a file that is a symbolic link (only a target inside the library).")
    var followSymlinks = false

    @Flag(help: "Print the summary as JSON on standard output.")
    var json = false

    @Flag(name: .shortAndLong, help: "No summary unless a file failed.")
    var quiet = false

    @OptionGroup var store: StoreOptions

    func validate() throws {
        if !key, keyNotation != .standard { throw ValidationError("--key-notation needs --key: the key is written only when asked for") }
    }

    func run() async throws {
        let loaded = try await StoreSettings.load(flags: store.flags(library: library), configFile: store.config.path,
                                                  libraryArgument: library, command: "tag")
        let location = loaded.location
        try location.requireStore()
        let libraryRoot: String
        if let given = location.library {
            libraryRoot = given
        } else if let recorded = try? LibraryStore.readOnly(path: location.databasePath).libraryIdentity().root {
            libraryRoot = recorded
        } else {
            throw CLIError("which library? Give it as `naviscan tag ~/Music`")
        }
        var options = TagWriteBack.Options(library: libraryRoot, output: location.out)
        options.dryRun = dryRun
        options.mixRamp = mixRamp
        options.keyNotation = key ? keyNotation : nil
        options.followSymlinks = followSymlinks
        options.followExternalLinks = loaded.settings.isOn(Settings.followExternalLinks)
        let summary: TagWriteBack.Summary
        do {
            summary = try TagWriteBack(options: options, logger: Logger(label: "naviscan.tag")).run()
        } catch {
            throw CLIError(UserMessage.describe(error), code: (error as? LibraryError)?.isFault == true ? 3 : 2)
        }
        if json {
            try JSONOutput.write(summary)
        } else if !quiet || !summary.failed.isEmpty {
            var text = ""
            for file in summary.tagged {
                text += "\(dryRun ? "would tag" : "tagged") \(EscapingLogHandler.escaped(file.relativePath)): "
                    + file.changes.map { "\($0.key) \($0.old ?? "(none)") -> \($0.new)" }.joined(separator: ", ") + "\n"
            }
            for failure in summary.failed { text += "failed \(EscapingLogHandler.escaped(failure.relativePath)): \(Self.words(failure.reason))\n" }
            if summary.removedLeftovers > 0 {
                text += "removed \(Self.files(summary.removedLeftovers)) left beside tracks by an interrupted naviscan tag\n"
            }
            let verb = dryRun ? "would be tagged" : "tagged"
            text += "\(Self.files(summary.tagged.count)) \(verb), \(summary.unchanged) already up to date, \(summary.failed.count) failed, "
                + "\(summary.skipped.count) skipped\(summary.skipped.isEmpty ? "" : " (" + Self.reasons(summary.skipped) + ")")\n"
            FileHandle.standardError.write(Data(text.utf8))
        }
        if !summary.failed.isEmpty { throw ExitCode(1) }
    }

    private static func files(_ count: Int) -> String { count == 1 ? "1 file" : "\(count) files" }

    private static func reasons(_ skipped: [TagWriteBack.Failure]) -> String {
        Dictionary(grouping: skipped, by: { words($0.reason) }).sorted { $0.key < $1.key }.map { "\($0.value.count) \($0.key)" }.joined(separator: "; ")
    }

    /// A reason in the command line's words: the flag or command that changes it.
    static func words(_ reason: TagWriteBack.Reason) -> String {
        switch reason {
        case .analysisFailed: "its analysis failed (`naviscan status` says why)"
        case .noProfile: "no DJ profile; scan with --dj first"
        case .folderOutsideLibrary: "\(reason) (pass \(Settings.followExternalLinks.flag) if that is where your music lives)"
        case .symlinkNotFollowed: "a symbolic link (pass --follow-symlinks to tag its target)"
        default: reason.description
        }
    }
}
