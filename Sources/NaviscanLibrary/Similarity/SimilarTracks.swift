import Foundation
import NaviscanCore
import NaviscanStore
import Synchronization

/// Why a similarity question has no answer.
public enum SimilarityError: Error, CustomStringConvertible, Equatable {
    /// The store has no such track.
    case unknownTrack(String)
    /// The track is stored but has no features: silent, too short, failed, or analysed without a profile.
    case noFeatures(String)
    /// The track's features were measured by a release whose features this one does not read.
    case staleFeatures(String)

    public var description: String {
        switch self {
        case .unknownTrack(let path): return "\(path) is not in the library's store; scan the library first, or check the path"
        case .noFeatures(let path):
            return "\(path) has no sound features (silent, shorter than a few seconds of sound, failed, or analysed without DJ profiles); it has no neighbours"
        case .staleFeatures(let path):
            return "\(path) has sound features of an older release; run `naviscan scan` on the library to measure them again (the rest of its analysis is kept)"
        }
    }
}

/// "More like this", instant mixes and sonic paths over one store's tracks, from an index built
/// once (`SimilarityIndex`).
public struct SimilarTracks: Sendable {
    /// One track of an answer.
    public struct Match: Sendable, Equatable {
        public var relativePath: String
        /// In [0, 1]: mutual proximity (see `SimilarityIndex`); 1 for the same recording.
        public var similarity: Double
        /// The same recording as the query in another file (same sound, same length).
        public var duplicate: Bool
        public var duration: Double
        public var tags: TrackTags
        /// The track's key, when it has one.
        public var key: MusicalKey?
    }

    /// Descriptor similarity (`SimilarityIndex.descriptorSimilarity`) at or above which two tracks of
    /// the same length and tempo are the same recording.
    public static let duplicateSimilarity = 0.99

    public let index: SimilarityIndex<SortedPaths>
    /// Per track, in the index's order: its duration and its tempo component (the same-recording test).
    private let durations: [Double]
    private let tempi: [Float]
    private let store: LibraryStore
    /// Tags as answers and mixes read them: a few hundred tracks of a query, not the library.
    private let tagCache = TagCache()

    /// The store's tracks with features; the normalisation is the store's when current, else measured
    /// here (and recorded when the store can be written).
    public init(store: LibraryStore) throws {
        var input = try store.similarityInput()
        // One track (or none) has no normalisation, and no neighbours anyway.
        let scale = input.normalisation ?? SimilarityNormalisation.identity(changeSequence: 0)
        let tempo = SonicFeatures.Group.rhythm.offset
        tempi = (0..<input.features.features.count).map { input.features.features.value($0, tempo) }
        durations = input.features.durations
        index = SimilarityIndex(keys: input.features.paths, features: input.features.features.take(), normalisation: scale,
                                proximity: input.features.proximity.isEmpty ? .measured : .given(input.features.proximity))
        self.store = store
    }

    /// Reads the tags and keys of `paths` not read yet.
    private func loadTags(_ paths: [String]) throws {
        let missing = tagCache.missing(paths)
        if !missing.isEmpty { tagCache.add(try store.tags(of: missing), keys: try store.keys(of: missing), asked: missing) }
    }

    private func tags(_ path: String) -> TrackTags { tagCache.tags(path) }
    private func key(_ path: String) -> MusicalKey? { tagCache.key(path) }

    private func check(_ path: String) throws {
        if index.contains(path) { return }
        // Not among the tracks with features: stored without them, or not stored at all.
        guard let record = try store.track(relativePath: path), record.missingSince == nil else { throw SimilarityError.unknownTrack(path) }
        if let version = record.featuresVersion, version != SonicFeatures.version { throw SimilarityError.staleFeatures(path) }
        throw SimilarityError.noFeatures(path)
    }

    private func match(_ neighbour: SimilarityIndex<SortedPaths>.Neighbour, query: String) -> Match {
        let duration = index.position(of: neighbour.id).map { durations[$0] } ?? 0
        let duplicate = neighbour.id != query && isSameRecording(neighbour.id, query)
        // The same recording is the same sound, whatever the library around it makes of its distance.
        let similarity = duplicate ? 1 : (neighbour.similarity * 1000).rounded() / 1000
        return Match(relativePath: neighbour.id, similarity: similarity, duplicate: duplicate,
                     duration: duration, tags: tags(neighbour.id), key: key(neighbour.id))
    }

    /// The `count` tracks that sound most like `path`, most similar first; never `path` itself.
    public func similar(to path: String, count: Int) throws -> [Match] {
        try check(path)
        let neighbours = index.nearest(to: path, count: count) ?? []
        try loadTags(neighbours.map(\.id))
        return neighbours.map { match($0, query: path) }
    }

    /// An instant mix of `count` tracks (the seed first): tracks like the seed, each next one near
    /// the one before it and still near the seed, at most max(2, count / 8) from one album and the same
    /// artist not twice in a row while another is at hand; recordings the same as one already in
    /// the mix are left out. `harmonic`: each next track is in a key that mixes with the one before
    /// (the same, a fifth either way, the relative key: `MusicalKey.isHarmonicNeighbour`), or has
    /// no key, whenever the seed's neighbours hold one; the sonic order decides among those.
    public func mix(from seed: String, count: Int, harmonic: Bool = false) throws -> [Match] {
        try check(seed)
        try loadTags([seed])
        guard count > 1 else { return [match(.init(id: seed, similarity: 1, distance: 0), query: seed)] }
        let pool = index.nearest(to: seed, count: min(index.count, max(4 * count, 50))) ?? []
        try loadTags(pool.map(\.id))
        let cap = max(2, (count + 7) / 8)
        var chosen: [Match] = [match(.init(id: seed, similarity: 1, distance: 0), query: seed)]
        var used: Set<String> = [seed]
        var perAlbum: [String: Int] = [albumKey(seed): 1]
        var current = seed
        while chosen.count < count {
            var best: (score: Float, neighbour: SimilarityIndex<SortedPaths>.Neighbour)?
            let currentKey = key(current)
            // In key first (when asked), then the album and artist rules relaxed, then out of key.
            let passes: [(inKey: Bool, relaxed: Bool)] = harmonic && currentKey != nil
                ? [(true, false), (true, true), (false, false), (false, true)] : [(false, false), (false, true)]
            for (inKey, relaxed) in passes {
                for candidate in pool where !used.contains(candidate.id) {
                    if inKey, let currentKey, let next = key(candidate.id), !next.isHarmonicNeighbour(of: currentKey) { continue }
                    if chosen.contains(where: { isSameRecording(candidate.id, $0.relativePath) }) { continue }
                    if !relaxed, perAlbum[albumKey(candidate.id), default: 0] >= cap { continue }
                    let step = index.distance(current, candidate.id) ?? .infinity
                    var score = step + 0.5 * candidate.distance
                    if !relaxed, artist(candidate.id) == artist(current), artist(current) != nil { score += index.normalisation.halfSimilarDistance }
                    if best == nil || score < best!.score { best = (score, candidate) }
                }
                if best != nil { break }
            }
            guard let next = best?.neighbour else { break }
            chosen.append(match(next, query: seed))
            used.insert(next.id)
            perAlbum[albumKey(next.id), default: 0] += 1
            current = next.id
        }
        return chosen
    }

    /// A sonic path of `count` tracks from `from` to `to`, both included, easing from one sound to the other.
    public func path(from: String, to: String, count: Int) throws -> [Match] {
        try check(from)
        try check(to)
        let steps = max(2, count)
        guard let a = index.position(of: from), let b = index.position(of: to) else { return [] }
        let tracks = index.path(from: from, to: to, steps: steps, allowedRow: { candidate in
            !isSameRecording(candidate, a) && !isSameRecording(candidate, b)
        }) ?? []
        try loadTags(tracks.map(\.id))
        return tracks.map { match($0, query: from) }
    }

    /// The same recording: the same sound (descriptor similarity ≥ 0.99), the same length (±0.5 s: an
    /// encoder's padding) and the same tempo (±1 %): tracks of one band and kit at other tempi are
    /// as alike in sound, not in tempo.
    private func isSameRecording(_ a: String, _ b: String) -> Bool {
        guard let x = index.position(of: a), let y = index.position(of: b) else { return a.utf8.elementsEqual(b.utf8) }
        return isSameRecording(x, y)
    }

    /// The same, for rows of the index.
    private func isSameRecording(_ x: Int, _ y: Int) -> Bool {
        x == y || (index.descriptorSimilarity(x, y) >= Self.duplicateSimilarity && abs(durations[x] - durations[y]) <= 0.5
            && abs(tempi[x] - tempi[y]) < 0.015)
    }

    /// The album as the album pass groups it (one album, not one disc).
    private func albumKey(_ path: String) -> String {
        AlbumGain.albumKey(tags: tags(path), relativePath: path, perDisc: false)
    }

    private func artist(_ path: String) -> String? {
        (tags(path).artist ?? tags(path).albumArtist)?.lowercased()
    }

    /// An M3U8 playlist as written, and the tracks it had to leave out.
    public struct Playlist: Sendable {
        public var bytes: [UInt8]
        /// Tracks whose path holds a line break (CR or LF): an M3U line cannot carry it, since
        /// neither ffmpeg's reader nor mpv's nor Navidrome's decodes any escape in a path line.
        public var omitted: [String]
    }

    /// An extended M3U playlist of `matches`, each entry a path relative to the playlist's folder (as
    /// Navidrome's playlist import and every player resolve them), written with the names' own bytes.
    /// Every line that is not a directive is an entry: a path starting with `#` gets `./` (else it
    /// reads as a comment or directive), and the `#EXTINF` label has its control characters made
    /// spaces (a CR or LF in a tag would end the line and start a forged entry).
    public static func m3u8(_ matches: [Match], library: String, playlist: String) -> Playlist {
        let folder = (playlist as NSString).deletingLastPathComponent
        var out = Array("#EXTM3U\n".utf8)
        var omitted: [String] = []
        for entry in matches {
            var path = SystemPath.bytes(of: relativePath(from: folder, to: library + "/" + entry.relativePath))
            if path.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) {
                omitted.append(entry.relativePath)
                continue
            }
            if path.first == UInt8(ascii: "#") { path = Array("./".utf8) + path }
            let title = entry.tags.title ?? ((entry.relativePath as NSString).lastPathComponent as NSString).deletingPathExtension
            let label = entry.tags.artist.map { "\($0) - \(title)" } ?? title
            let oneLine = String(String.UnicodeScalarView(label.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
            out += Array("#EXTINF:\(Int(entry.duration.rounded())),\(oneLine)\n".utf8)
            out += path
            out.append(UInt8(ascii: "\n"))
        }
        return Playlist(bytes: out, omitted: omitted)
    }

    /// `target` relative to `folder` (both absolute): `../Music/A/b.flac`.
    static func relativePath(from folder: String, to target: String) -> String {
        let base = folder.split(separator: "/").map(String.init)
        let parts = target.split(separator: "/").map(String.init)
        var common = 0
        while common < base.count, common < parts.count - 1, base[common] == parts[common] { common += 1 }
        return (Array(repeating: "..", count: base.count - common) + parts[common...]).joined(separator: "/")
    }
}

/// The tags a `SimilarTracks` has read, shared by its copies and the server's concurrent queries.
private final class TagCache: Sendable {
    private let known = Mutex<[String: (tags: TrackTags, key: MusicalKey?)]>([:])

    func missing(_ paths: [String]) -> [String] { known.withLock { known in paths.filter { known[$0] == nil } } }

    /// `asked` paths without tags or a key are remembered as having none.
    func add(_ tags: [String: TrackTags], keys: [String: MusicalKey], asked: [String]) {
        known.withLock { known in for path in asked { known[path] = (tags[path] ?? TrackTags(), keys[path]) } }
    }

    func tags(_ path: String) -> TrackTags { known.withLock { $0[path]?.tags } ?? TrackTags() }
    func key(_ path: String) -> MusicalKey? { known.withLock { $0[path]?.key } }
}
