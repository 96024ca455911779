import Foundation
import Hummingbird
import NaviscanLibrary

/// `GET /similar?relative_path=P&count=K` (more like this) and `GET /path?from=A&to=B&count=K` (a
/// sonic path), answered in the shape of OpenSubsonic's `sonicMatch`: a list of `{"entry": {the
/// track's path and tags}, "similarity": s}`.
struct SimilarityController {
    let services: ServerServices
    let cache = SimilarityCache()

    func addRoutes(to routes: Routes) {
        routes.get("/similar", access: .companion) { request, _ in
            let query = QueryValues(request)
            let path = try await services.paths.resolve(query)
            let count = try Self.count(query, default: 10)
            let tracks = try await cache.tracks(services.store)
            return try Self.answer { try tracks.similar(to: path, count: count) }
        }
        routes.get("/path", access: .companion) { request, _ in
            let query = QueryValues(request)
            let from = try await services.paths.resolve(query.first("from"))
            let to = try await services.paths.resolve(query.first("to"))
            let count = try Self.count(query, default: 12)
            guard count >= 2 else { throw APIError.badRequest("count must be at least 2 for a path (its two ends)") }
            let tracks = try await cache.tracks(services.store)
            return try Self.answer { try tracks.path(from: from, to: to, count: count) }
        }
    }

    static func count(_ query: QueryValues, default value: Int) throws -> Int {
        guard let text = query.first("count") else { return value }
        guard let count = Int(text), (1...1000).contains(count) else { throw APIError.badRequest("count must be a whole number from 1 to 1,000") }
        return count
    }

    static func answer(_ body: () throws -> [SimilarTracks.Match]) throws -> Response {
        let matches: [SimilarTracks.Match]
        do { matches = try body() } catch let error as SimilarityError { throw APIError.notFound(error.description) }
        let entries: [[String: Any]] = matches.map { match in
            var entry: [String: Any] = ["path": match.relativePath, "relative_path": match.relativePath, "isDir": false,
                                        "duration": Int(match.duration.rounded())]
            if let title = match.tags.title { entry["title"] = title }
            if let artist = match.tags.artist { entry["artist"] = artist }
            if let album = match.tags.album { entry["album"] = album }
            if let track = match.tags.trackNumber { entry["track"] = track }
            if let disc = match.tags.discNumber { entry["discNumber"] = disc }
            return ["entry": entry, "similarity": match.similarity, "duplicate": match.duplicate]
        }
        return JSONBody.response(object: ["sonicMatch": entries])
    }
}

/// The similarity index, built again only when the store has changed since (or is another store).
actor SimilarityCache {
    private var built: (store: ObjectIdentifier, sequence: Int64, tracks: SimilarTracks)?

    func tracks(_ store: LibraryStore) async throws -> SimilarTracks {
        let sequence = try await store.latestSequence()
        if let built, built.store == ObjectIdentifier(store), built.sequence == sequence { return built.tracks }
        let tracks = try await Task.detached { try SimilarTracks(store: store) }.value
        built = (ObjectIdentifier(store), sequence, tracks)
        return tracks
    }
}
