import Foundation
import Hummingbird
import NaviscanCore
import NaviscanLibrary

/// `GET /health`: what the store holds and what the server is doing; 503 while the store is gone.
struct AdminController {
    let services: ServerServices

    func addRoutes(to routes: Routes) {
        routes.get("/health", access: .open) { _, _ in try await health() }
    }

    private func health() async throws -> Response {
        if let reason = services.storeHandle.unavailable {
            return JSONBody.response(status: .serviceUnavailable,
                                     StoreUnavailableAnswer(error: reason, analyzer: "\(NaviscanVersion.name) \(NaviscanVersion.version)"))
        }
        let counts = try await services.store.counts()
        let maintenance = services.maintainer?.status()
        return JSONBody.response(HealthAnswer(
            analyzer: "\(NaviscanVersion.name) \(NaviscanVersion.version)", library: services.library ?? "",
            profileCount: counts.profiles, visCount: counts.vis, failed: counts.failed,
            visCacheSize: Int64(await services.visSize.bytes()), connectedClients: await services.hub.count,
            pending: await services.pending(), watching: maintenance?.watching ?? false, scanState: maintenance?.state ?? "off",
            lastScan: maintenance?.lastScan.map { ISO8601DateFormatter().string(from: $0) }, lastScanError: maintenance?.lastScanError))
    }
}
