import Foundation
import NaviscanLibrary
import NaviscanStore

/// The WebSocket clients of /ws/push and the events they are sent.
///
/// Every event of the store carries its change sequence (`seq`). A client connects plainly and is
/// told where the store is (`hello`), or with `?after=N` (the last `seq` it saw) and is first sent
/// the events it missed from the store; when those are no longer kept it is told to reload
/// (`resync`). A client that cannot keep up is disconnected rather than silently skipped: it
/// reconnects with `after`.
actor PushHub {
    struct Message: Sendable {
        /// The event's change sequence; nil for a notice that is no change of the store.
        let seq: Int64?
        let text: String
    }

    private var clients: [UUID: AsyncStream<Message>.Continuation] = [:]

    var count: Int { clients.count }

    func register() -> (UUID, AsyncStream<Message>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Message>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        clients[id] = continuation
        return (id, stream)
    }

    func unregister(_ id: UUID) {
        clients.removeValue(forKey: id)?.finish()
    }

    /// A change of the store, as recorded there.
    func publish(_ event: LibraryEvent) {
        send(Message(seq: event.seq, text: PushMessage(event).text))
    }

    /// The store was replaced (a merge, a restore): what a client holds may be stale.
    func publishResync(seq: Int64) {
        send(Message(seq: nil, text: PushMessage.resync(seq).text))
    }

    /// A precompute that could not even open its file: nothing was stored, so it has no `seq`.
    func trackFailed(_ relativePath: String, reason: String) {
        send(Message(seq: nil, text: PushMessage(event: LibraryEvent.Kind.trackFailed.rawValue, seq: nil, relativePath: relativePath, error: reason).text))
    }

    private func send(_ message: Message) {
        for (id, continuation) in clients {
            if case .dropped = continuation.yield(message) {
                // Its buffer is full: closing the socket makes it reconnect with `after` and catch up.
                clients.removeValue(forKey: id)?.finish()
            }
        }
    }

    /// What a client connecting with `after` (nil: none) is sent before the live events, and the
    /// sequence up to which it has been told everything (live events up to it are skipped).
    static func opening(after: Int64?, store: LibraryStore) async throws -> (messages: [String], through: Int64) {
        let latest = try await store.latestSequence()
        guard let after else { return ([PushMessage.hello(latest).text], latest) }
        let first = try await store.firstKeptEvent()
        // Missed events that are no longer kept, or a number this store never gave (another store).
        if after > latest || (after < latest && (first.map { after < $0 - 1 } ?? true)) {
            return ([PushMessage.resync(latest).text], latest)
        }
        var messages = [PushMessage.hello(latest).text]
        var cursor = after
        while cursor < latest {
            let page = try await store.events(after: cursor)
            guard let last = page.last else { break }
            for event in page where event.seq <= latest { messages.append(PushMessage(event).text) }
            cursor = last.seq
        }
        return (messages, latest)
    }

}
