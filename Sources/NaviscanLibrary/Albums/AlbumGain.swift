import Foundation
import NaviscanCore
import NaviscanStore

/// Album loudness and ReplayGain album gain, measured from the store alone: each member's gating
/// histogram (kept when it was analysed) is gated together with the others', as libebur128's
/// `ebur128_loudness_global_multiple` gates several tracks' blocks, so nothing is decoded again.
///
/// `recompute` is the one entry point: run after every scan (and after anything else that changes
/// tracks, such as merging shards). It groups the stored tracks into albums, finds the albums whose
/// members changed since it last ran (by a digest of their paths and change sequences), measures
/// those, and rewrites their members' profiles (file and stored copy) with the album values. It also
/// writes the profile files a scan left to it (rows without a profile stamp): a new track's profile
/// is written once, with its album's values.
public enum AlbumGain {
    /// The album pass's version (its stage in docs/upgrades.md): bump it when album loudness, gain or
    /// peak change. Every album is then measured again, from the stored histograms, with no decode.
    public static let version = 1
    public struct Outcome: Sendable, Equatable {
        /// Albums measured again because a member was added, changed or removed.
        public var albumsMeasured = 0
        /// Member profiles rewritten with new album values.
        public var profilesRewritten = 0
        /// Albums with no member left, forgotten.
        public var albumsRemoved = 0
    }

    /// The album a track belongs to: album artist (else artist) and album tag, plus the disc number
    /// when `perDisc`; without an album tag, the folder the file is in.
    public static func albumKey(tags: TrackTags?, relativePath: String, perDisc: Bool) -> String {
        if let album = tags?.album, !album.isEmpty {
            let artist = tags?.albumArtist ?? tags?.artist ?? ""
            let disc = perDisc ? tags?.discNumber.map { " — disc \($0)" } ?? "" : ""
            return "album: \(artist) — \(album)\(disc)"
        }
        let folder = relativePath.lastIndex(of: "/").map { String(relativePath[..<$0]) } ?? "."
        return "folder: \(folder)"
    }

    /// `jobs`: albums measured at once (each reads its members and rewrites their profiles).
    /// `version`: this build's album pass (a test changes it to see what an upgrade does).
    public static func recompute(store: LibraryStore, layout: OutputLayout, albumPerDisc: Bool, jobs: Int = 1,
                                 version: Int = AlbumGain.version) throws -> Outcome {
        // Version 1 is what 0.5.9 recorded, with no version in the rule or the digests.
        let rule = (albumPerDisc ? "per-disc" : "per-album") + (version == 1 ? "" : " v\(version)")
        if try store.albumsMeasured(rule: rule) { return Outcome() }
        let outcome = try measureChangedAlbums(store: store, layout: layout, albumPerDisc: albumPerDisc, jobs: jobs, version: version)
        try store.recordAlbumsMeasured(rule: rule)
        return outcome
    }

    private static func measureChangedAlbums(store: LibraryStore, layout: OutputLayout, albumPerDisc: Bool, jobs: Int, version: Int) throws -> Outcome {
        let albums = Dictionary(grouping: try store.albumMembers()) {
            albumKey(tags: $0.tags, relativePath: $0.relativePath, perDisc: albumPerDisc)
        }
        let stored = try store.albumDigests()
        nonisolated(unsafe) var outcome = Outcome()  // guarded by `lock` below
        let removed = stored.keys.filter { albums[$0] == nil }
        outcome.albumsRemoved = removed.count
        try store.removeAlbums(removed)
        let changed = albums.filter { stored[$0.key] != digest($0.value.map { ($0.relativePath, $0.seq) }, version: version) }.sorted { $0.key < $1.key }
        // Albums are measured `jobs` at a time; the store writer flushes their rewritten profiles
        // and commits them in batches on its own thread, beside the measuring.
        let writer = StoreWriter(store: store, flushPath: layout.root)
        let lock = NSLock()
        // Both guarded by `lock`.
        nonisolated(unsafe) var failure: Error?
        WorkPool(jobs: jobs).run(changed, shouldStop: { lock.withLock { failure != nil } || writer.fault != nil }) { _, album in
            do {
                let measured = try measure(album: album.key, members: album.value.map(\.relativePath), store: store, layout: layout,
                                           version: version)
                let changes = measured.rewrites.map { StoreChange.updateProfile(relativePath: $0.relativePath, json: $0.json, stamp: $0.stamp) }
                guard writer.submit(.init(changes: changes + [.saveAlbum(measured.update)])) else { return }
                lock.withLock {
                    outcome.albumsMeasured += 1
                    outcome.profilesRewritten += measured.rewrites.count
                }
            } catch {
                lock.withLock { failure = failure ?? error }
            }
        }
        try writer.finish()
        if let failure { throw failure }
        return outcome
    }

    /// The digest an album records of the members it was measured from: their paths and change
    /// sequences, and the album pass's version after the first.
    package static func digest(_ members: [(relativePath: String, seq: Int64)], version: Int = AlbumGain.version) -> String {
        var hasher = FNV1a64()
        if version != 1 { hasher.add("album pass v\(version)\n") }
        for member in members.sorted(by: { $0.relativePath < $1.relativePath }) {
            hasher.add("\(member.relativePath)\u{0}\(member.seq)\n")
        }
        return CFormat.string("%016llx", hasher.value)
    }

    /// One album's new values and its members' rewritten profiles, written but not yet recorded.
    private struct Measured {
        var update: AlbumUpdate
        var rewrites: [(relativePath: String, json: String, stamp: String?)]
    }

    /// Measures one album and writes the profiles of the members whose profile changes or whose file
    /// is still to write.
    private static func measure(album key: String, members: [String], store: LibraryStore, layout: OutputLayout, version: Int) throws -> Measured {
        struct Loaded { var relativePath: String; var fileKey: String; var profile: TrackProfile; var histogram: LoudnessHistogram?; var fileWritten: Bool }
        let loaded: [Loaded] = try store.albumInputs(members).compactMap { input in
            guard let profile = try? StoredProfile.read(Data(input.profileJSON.utf8)) else { return nil }
            // A histogram this version cannot read leaves the track out of its album's loudness.
            let histogram = input.gatingHistogram.flatMap { try? LoudnessHistogram(encoded: $0) }
            return Loaded(relativePath: input.relativePath, fileKey: input.key, profile: profile, histogram: histogram,
                          fileWritten: input.profileFileWritten)
        }
        let measured = loaded.filter { !$0.profile.silent && $0.histogram != nil }
        let lufs = LoudnessHistogram.integratedLoudness(of: measured.compactMap(\.histogram)).map { ($0 * 1000).rounded() / 1000 }
        let peak = measured.compactMap { $0.profile.replayGain?.trackPeak }.max()
        let album = TrackProfile.Album(key: key, lufs: lufs, tracks: measured.count, silentTracks: loaded.filter(\.profile.silent).count)

        var madeDirectories: Set<String> = []
        var result = Measured(update: AlbumUpdate(members: members, record: AlbumRecord(
            key: key, membersDigest: "", lufs: lufs, peak: peak, tracks: album.tracks, silentTracks: album.silentTracks),
            digest: { Self.digest($0, version: version) }), rewrites: [])
        for member in loaded {
            var profile = member.profile
            var gain = profile.replayGain ?? TrackProfile.ReplayGain()
            gain.albumGain = lufs.map { ((profile.referenceLUFS - $0) * 100).rounded() / 100 }
            gain.albumPeak = peak
            profile.replayGain = gain
            profile.album = album
            guard profile != member.profile || !member.fileWritten else { continue }
            let data = try profile.jsonData()
            let path = layout.profilePath(key: member.fileKey)
            do {
                let directory = OutputLayout.directory(of: path)
                if madeDirectories.insert(directory).inserted { try OutputLayout.createDirectory(directory) }
                try AtomicFile.write(data, to: path, durability: .deferred)
            } catch {
                throw LibraryError.fault(error) ?? error
            }
            result.rewrites.append((member.relativePath, String(decoding: data, as: UTF8.self), OutputStamp.of(path: path)))
        }
        return result
    }
}

