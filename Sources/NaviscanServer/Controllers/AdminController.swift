import Foundation
import Hummingbird
import NaviscanCore

/// `GET /health`: what the store holds and what the server is doing; 503 while the store is gone.
struct AdminController {
    let services: ServerServices

    func addRoutes(to routes: Routes) {
        routes.get("/health", access: .open) { _, _ in try await health() }
    }

    private func health() async throws -> Response {
        if let reason = services.storeHandle.unavailable {
            return JSONBody.response(status: .serviceUnavailable, object: [
                "status": "store_unavailable", "error": reason, "analyzer": "\(NaviscanVersion.name) \(NaviscanVersion.version)",
            ])
        }
        let counts = try await services.store.counts()
        let maintenance = services.maintainer?.status()
        var answer: [String: Any] = [
            "status": "ok", "profile_count": counts.profiles, "vis_count": counts.vis, "failed": counts.failed,
            "vis_cache_size": await services.visSize.bytes(), "connected_clients": await services.hub.count,
            "analyzer": "\(NaviscanVersion.name) \(NaviscanVersion.version)", "library": services.library ?? "",
            "pending": await services.pending(),
            "watching": maintenance?.watching ?? false,
            "scan_state": maintenance?.state ?? "off",
            "last_scan": maintenance?.lastScan.map { ISO8601DateFormatter().string(from: $0) } ?? NSNull(),
        ]
        if let error = maintenance?.lastScanError { answer["last_scan_error"] = error }
        return JSONBody.response(object: answer)
    }
}
