import Foundation
import Logging
import NaviscanLibrary
import ServiceLifecycle

/// Follows the store's events (numbered with its change sequence, recorded in the transaction of
/// each change) and pushes each once: from a scan running beside the server, a precompute or a
/// merge. Because it remembers a sequence number, not a time, no commit can slip past it, however
/// many workers commit and in whatever order they finish.
struct StoreWatcher: Service {
    let store: StoreHandle
    let hub: PushHub
    let interval: Duration
    let logger: Logger

    func run() async throws {
        // Graceful shutdown does not cancel a service by itself: stop polling when it begins.
        await cancelWhenGracefulShutdown { await poll() }
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
                let latest = try await store.current.latestSequence()
                if latest < last {
                    // Another store file at the path (a merge's result, a restore): numbers restart.
                    last = latest
                    await hub.publishResync(seq: latest)
                    continue
                }
                while last < latest {
                    let events = try await store.current.events(after: last)
                    for event in events { await hub.publish(event) }
                    // Numbers without an event (a store from before events were kept) are skipped.
                    last = events.last?.seq ?? latest
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("store poll failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
