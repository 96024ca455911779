import Foundation
import Hummingbird
import HummingbirdWebSocket
import NaviscanCore
import NaviscanLibrary
import NIOCore

/// The Navidrome companion API: DJ profiles one at a time or in bulk, and the push socket that
/// announces each track as it is analysed.
///
///     GET  /smart-dj/profile?relative_path=P
///     GET  /smart-dj/bulk-profiles?paths=P1,P2     (a comma in a path as %2C; repeated paths= are never split;
///                                                   or POST a JSON array / {"paths": […]})
///     GET  /smart-dj/beats?relative_path=P[&from=S&to=S]   (the beat grid written out: every beat and bar
///                                                   line, seconds, optionally only those from S to S)
///     WS   /ws/push                                 ({"event": "track_analyzed", "relative_path": P})
struct CompanionController {
    /// The largest POST body /smart-dj/bulk-profiles takes (10,000 long paths fit); more is 413.
    static let bulkBodyLimit = 4 << 20
    static let bulkPathLimit = 10_000

    let services: ServerServices

    func addRoutes(to routes: Routes) {
        routes.get("/smart-dj/profile", access: .companion) { request, _ in
            try await profile(services.paths.resolve(QueryValues(request)))
        }
        routes.get("/smart-dj/bulk-profiles", access: .companion, cost: .expensive) { request, _ in
            let paths = QueryValues(request).pathList("paths")
            guard !paths.isEmpty else { throw APIError.badRequest("paths is required (comma-separated, repeated, or POST a JSON array)") }
            return try await bulk(paths)
        }
        routes.post("/smart-dj/bulk-profiles", access: .companion, cost: .expensive) { request, _ in
            let body = try await request.body.collect(upTo: Self.bulkBodyLimit)
            guard let request = try? JSONDecoder().decode(BulkProfilesRequest.self, from: Data(buffer: body)) else {
                throw APIError.badRequest("the body must be a JSON array of paths or {\"paths\": [...]}")
            }
            return try await bulk(request.paths)
        }
        routes.get("/smart-dj/beats", access: .companion) { request, _ in
            let query = QueryValues(request)
            func seconds(_ name: String) throws -> Double? {
                guard let text = query.first(name) else { return nil }
                guard let value = Double(text), value.isFinite, value >= 0 else {
                    throw APIError.badRequest("\(name) must be a number of seconds, 0 or more")
                }
                return value
            }
            return try await beats(services.paths.resolve(query), from: seconds("from") ?? 0, to: seconds("to") ?? .infinity)
        }
        let hub = services.hub
        let store = services.storeHandle
        routes.webSocket("/ws/push", access: .companion) { inbound, outbound, context in
            let after = QueryValues(context.request).first("after").flatMap { Int64($0) }
            // Registered before the store is read: an event committed meanwhile arrives live as
            // well as in the replay, and is sent once (by its seq).
            let (id, events) = await hub.register()
            guard let opening = try? await PushHub.opening(after: after, store: store.current) else {
                await hub.unregister(id)
                return
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Ends when the client closes; then the writer is cancelled too.
                    do { for try await _ in inbound.messages(maxSize: 1 << 16) {} } catch {}
                }
                group.addTask {
                    for text in opening.messages { try? await outbound.write(.text(text)) }
                    for await message in events where (message.seq ?? .max) > opening.through {
                        try? await outbound.write(.text(message.text))
                    }
                }
                await group.next()
                group.cancelAll()
            }
            await hub.unregister(id)
        }
    }

    private func profile(_ path: String) async throws -> Response {
        guard let json = try await services.store.profiles(relativePaths: [path])[path] else {
            throw APIError.notFound("no profile for \(path)")
        }
        do { _ = try StoredProfile.read(Data(json.utf8)) } catch { throw await services.damaged(path, .profile, error) }
        return JSONBody.response(data: Data(json.utf8))
    }

    /// The grid of the stored profile with its beats and bar lines listed (`BeatGrid.beats`).
    private func beats(_ path: String, from: Double, to: Double) async throws -> Response {
        guard let json = try await services.store.profiles(relativePaths: [path])[path] else {
            throw APIError.notFound("no profile for \(path)")
        }
        let profile: TrackProfile
        do { profile = try StoredProfile.read(Data(json.utf8)) } catch { throw await services.damaged(path, .profile, error) }
        return JSONBody.response(BeatsAnswer(relativePath: path, bpm: profile.bpm, grid: profile.beatGrid ?? .empty, from: from, to: to))
    }

    private func bulk(_ paths: [String]) async throws -> Response {
        guard paths.count <= Self.bulkPathLimit else { throw APIError.badRequest("at most 10,000 paths per request") }
        // Answered under the paths as sent; an ambiguous tag-built path is listed as missing.
        var resolved: [String: String] = [:]
        for path in paths {
            do { resolved[path] = try await services.paths.resolve(path) } catch let error as APIError where error.status == .conflict {}
        }
        var stored = try await services.store.profiles(relativePaths: Array(Set(resolved.values)))
        // Reading up to 10,000 profiles is CPU work: off the cooperative threads (`BlockingWork`).
        let damaged = try await BlockingWork.run { [stored] in stored.filter { (try? StoredProfile.read(Data($0.value.utf8))) == nil }.map(\.key) }
        // A stored profile that is not a valid profile is left out (listed as missing) and marked.
        for path in damaged {
            stored[path] = nil
            _ = await services.damaged(path, .profile, StoredProfileError.notAProfile)
        }
        return JSONBody.response(data: try await BlockingWork.run { [resolved, stored] in
            try Self.bulkBody(paths: paths, resolved: resolved, stored: stored)
        })
    }

    /// `{"missing": [...], "profiles": {path: profile, ...}}` under the paths as sent, assembled from
    /// the stored profiles' own bytes (up to 10,000 of them: not decoded and encoded again).
    private static func bulkBody(paths: [String], resolved: [String: String], stored: [String: String]) throws -> Data {
        var found: [String: String] = [:]
        for path in paths { if let track = resolved[path], let json = stored[track] { found[path] = json } }
        var body = Data("{\"missing\":".utf8)
        body += try AnswerJSON.data(paths.filter { found[$0] == nil })
        body += Data(",\"profiles\":{".utf8)
        for (i, path) in paths.filter({ found[$0] != nil }).enumerated() {
            if i > 0 { body += Data(",".utf8) }
            body += AnswerJSON.string(path)
            body += Data(":".utf8) + Data(found[path]!.utf8)
        }
        body += Data("}}".utf8)
        return body
    }
}
