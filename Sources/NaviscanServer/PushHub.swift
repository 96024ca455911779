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

    func trackAnalyzed(_ relativePath: String) {
        let data = (try? JSONSerialization.data(withJSONObject: ["event": "track_analyzed", "relative_path": relativePath],
                                                options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        for continuation in clients.values { continuation.yield(text) }
    }
}
