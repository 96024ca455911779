import Foundation
import Hummingbird
import NaviscanCore

/// The web page: the library (`/`), one track (`/track?relative_path=P`), and the page's script and
/// style (`/static/NAME`).
struct WebController {
    let services: ServerServices

    func addRoutes(to routes: Routes) {
        routes.get("/", access: .restricted) { _, _ in try await library() }
        routes.get("/track", access: .restricted) { request, _ in
            try await track(services.paths.resolve(QueryValues(request)))
        }
        routes.get("/static/{name}", access: .restricted) { _, context in
            try assets().file(named: context.parameters.get("name") ?? "")
        }
    }

    private func assets() throws -> WebAssets {
        guard let web = services.web else {
            throw APIError(status: .serviceUnavailable, message: "the web page's files are not installed (PREFIX/share/naviscan/web); reinstall naviscan, or set NAVISCAN_WEB_DIR")
        }
        return web
    }

    private func library() async throws -> Response {
        let web = try assets()
        let tracks = try await services.store.tracksWithTags()
        let counts = try await services.store.counts()
        let maintenance = services.maintainer?.status()
        let state = maintenance?.state ?? "off"
        let stateText = ["scanning": "scanning", "waiting": "changes seen; a scan starts once they settle", "idle": "up to date", "off": "not watching"]
        let storeBytes = (try? FileManager.default.attributesOfItem(atPath: services.layout.databasePath)[.size] as? Int64) ?? 0
        let failures = tracks.filter { $0.status == .failed }.map {
            ["path": $0.relativePath, "link": WebText.query($0.relativePath), "reason": $0.errorMessage ?? "failed"]
        }
        return web.page("library", [
            "base": services.configuration.basePath,
            "library": services.library ?? services.configuration.dataDirectory, "analyzer": "\(NaviscanVersion.name) \(NaviscanVersion.version)",
            "track_count": tracks.count, "profile_count": counts.profiles, "vis_count": counts.vis, "failed_count": counts.failed,
            "pending": await services.pending(),
            "disk_use": WebText.bytes(await services.visSize.bytes() + storeBytes), "scan_state": state, "scan_state_text": stateText[state] ?? state,
            "last_scan": maintenance?.lastScan.map(WebText.time) ?? "", "watching": maintenance?.watching ?? false,
            "has_failures": !failures.isEmpty, "failures": failures, "tracks": tracks.map(WebText.row),
        ])
    }

    private func track(_ path: String) async throws -> Response {
        let web = try assets()
        guard let record = try await services.store.track(relativePath: path) else { throw APIError.notFound("no track \(path) in the store") }
        // A stored profile this version cannot read shows no fields (the JSON API reports it as damaged).
        let profile = record.profileJSON.flatMap { try? StoredProfile.read(Data($0.utf8)) }
        return web.page("track", [
            "base": services.configuration.basePath,
            "path": path, "link": WebText.query(path), "stream": services.configuration.stream,
            "failed": record.status == .failed ? (record.errorMessage ?? "failed") : false,
            "fields": profile.map(WebText.profileFields) ?? [],
        ])
    }
}
