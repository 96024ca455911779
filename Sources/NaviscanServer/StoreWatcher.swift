import Foundation
import Logging
import NaviscanLibrary
import ServiceLifecycle

/// Follows the store's change sequence (stamped at commit, in commit order) and pushes one event
/// per row written since the last look: by a scan running beside the server or by a precompute.
/// Because it remembers a sequence number, not a time, no commit can slip past it, however many
/// workers commit and in whatever order they finish.
struct StoreWatcher: Service {
    let store: StoreHandle
    let hub: PushHub
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Graceful shutdown does not cancel a service by itself: stop polling when it begins.
        try await cancelWhenGracefulShutdown { await poll() }
        // Precompute's commits since the last scan: into the main file before the server exits.
        do { try store.current.checkpoint() } catch { logger.warning("could not fold the store's log into its main file", metadata: ["error": "\(error)"]) }
    }

    private func poll() async {
        var last = (try? await store.current.latestSequence()) ?? 0
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            // Notices an outage (or its end) even when no request asks.
            if store.unavailable != nil { continue }
            do {
                while true {
                    let changes = try await store.current.changes(after: last)
                    for change in changes {
                        switch change.status {
                        case .ok: await hub.trackAnalyzed(change.relativePath)
                        case .failed: await hub.trackFailed(change.relativePath, reason: change.error ?? "failed")
                        }
                        last = change.seq
                    }
                    if changes.count < 1000 { break }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("store poll failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
