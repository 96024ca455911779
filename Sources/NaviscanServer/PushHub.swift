import Foundation

/// The WebSocket clients of /ws/push and the events they are sent.
actor PushHub {
    private var clients: [UUID: AsyncStream<String>.Continuation] = [:]

    var count: Int { clients.count }

    func register() -> (UUID, AsyncStream<String>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        clients[id] = continuation
        return (id, stream)
    }

    func unregister(_ id: UUID) {
        clients.removeValue(forKey: id)?.finish()
    }

    /// `{"event": "track_analyzed", "relative_path": P}`
    func trackAnalyzed(_ relativePath: String) {
        send(["event": "track_analyzed", "relative_path": relativePath])
    }

    /// `{"event": "track_failed", "relative_path": P, "error": reason}`
    func trackFailed(_ relativePath: String, reason: String) {
        send(["event": "track_failed", "relative_path": relativePath, "error": reason])
    }

    private func send(_ event: [String: String]) {
        let data = (try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        for continuation in clients.values { continuation.yield(text) }
    }
}
