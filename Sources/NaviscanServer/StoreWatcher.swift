import Foundation
import Logging
import NaviscanLibrary
import ServiceLifecycle

/// Polls the store for tracks analysed since the last look (by a scan running beside the server, or
/// by a precompute) and pushes one event per track.
struct StoreWatcher: Service {
    let store: TrackStore
    let hub: PushHub
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Graceful shutdown does not cancel a service by itself: stop polling when it begins.
        try await cancelWhenGracefulShutdown { await poll() }
    }

    private func poll() async {
        var last = Date().timeIntervalSince1970
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            do {
                for change in try await store.analysedSince(last) {
                    await hub.trackAnalyzed(change.relativePath)
                    last = max(last, change.changedAt)
                }
            } catch {
                logger.warning("store poll failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
