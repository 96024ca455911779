import Foundation
import Hummingbird
import NaviscanLibrary
import NaviscanStore

/// `GET /similar?relative_path=P&count=K` (more like this), `GET /mix?relative_path=P&count=K&harmonic=true`
/// (an instant mix, `SimilarTracks.mix`) and `GET /path?from=A&to=B&count=K` (a sonic path), answered in the shape of OpenSubsonic's `sonicMatch`: a list of `{"entry": {the
/// track's path and tags}, "similarity": s}`.
struct SimilarityController {
    let services: ServerServices
    let cache = SimilarityCache()

    func addRoutes(to routes: Routes) {
        routes.get("/similar", access: .companion, cost: .expensive) { request, _ in
            let query = QueryValues(request)
            let path = try await services.paths.resolve(query)
            let count = try Self.count(query, default: 10)
            let tracks = try await cache.tracks(services.store)
            return try await Self.answer { try tracks.similar(to: path, count: count) }
        }
        routes.get("/mix", access: .companion, cost: .expensive) { request, _ in
            let query = QueryValues(request)
            let path = try await services.paths.resolve(query)
            let count = try Self.count(query, default: 25)
            guard count >= 2 else { throw APIError.badRequest("count must be at least 2 for a mix (its first track and one more)") }
            let harmonic = try query.flag("harmonic")
            let tracks = try await cache.tracks(services.store)
            return try await Self.answer { try tracks.mix(from: path, count: count, harmonic: harmonic) }
        }
        routes.get("/path", access: .companion, cost: .expensive) { request, _ in
            let query = QueryValues(request)
            let from = try await services.paths.resolve(query.first("from"))
            let to = try await services.paths.resolve(query.first("to"))
            let count = try Self.count(query, default: 12)
            guard count >= 2 else { throw APIError.badRequest("count must be at least 2 for a path (its two ends)") }
            let tracks = try await cache.tracks(services.store)
            return try await Self.answer { try tracks.path(from: from, to: to, count: count) }
        }
    }

    static func count(_ query: QueryValues, default value: Int) throws -> Int {
        guard let text = query.first("count") else { return value }
        guard let count = Int(text), (1...1000).contains(count) else { throw APIError.badRequest("count must be a whole number from 1 to 1,000") }
        return count
    }

    /// The search itself runs as blocking work: a scan of every track's vector.
    static func answer(_ body: @escaping @Sendable () throws -> [SimilarTracks.Match]) async throws -> Response {
        let matches: [SimilarTracks.Match]
        do { matches = try await BlockingWork.run(body) } catch let error as SimilarityError { throw APIError.notFound(error.description) }
        return JSONBody.response(SonicMatchAnswer(matches))
    }
}

/// The similarity index, built once per store change and shared: every request that arrives while
/// a build runs waits for that build (an actor alone is reentrant: each caller arriving during the
/// await would start its own). A build that failed is forgotten, so the next request tries again.
package actor SimilarityCache {
    private let build: @Sendable (LibraryStore) throws -> SimilarTracks
    /// The store it was built from (held, so that a reopened store is never mistaken for it), the
    /// change sequence it reflects, and the build (done or in flight).
    private var current: (store: LibraryStore, sequence: Int64, build: Task<SimilarTracks, Error>)?

    package init(build: @escaping @Sendable (LibraryStore) throws -> SimilarTracks = { try SimilarTracks(store: $0) }) {
        self.build = build
    }

    package func tracks(_ store: LibraryStore) async throws -> SimilarTracks {
        let sequence = try await store.latestSequence()
        let task: Task<SimilarTracks, Error>
        // A build keyed at a later sequence (started by a request that read the store after this one) answers too.
        if let current, current.store === store, current.sequence >= sequence {
            task = current.build
        } else {
            let build = self.build
            task = Task { try await BlockingWork.run { try build(store) } }
            current = (store, sequence, task)
        }
        do {
            return try await BlockingWork.value(of: task)
        } catch {
            if current?.build == task, !(error is CancellationError) { current = nil }
            throw error
        }
    }
}
