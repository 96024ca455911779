import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NaviscanCore
import NIOCore

/// The bytes of one connection's answer that its writer has handed on but that are not yet on the
/// socket. NIO's writability flag reaches an async writer only when the event loop gets round to
/// it, and the writer's `write` returns before the event loop has even seen the bytes, so a writer
/// that produces fast (frames from a file) queues megabytes for a client that never reads (measured:
/// 4–9 MB per client, 3.8 GB for 400). A long answer therefore counts each chunk here before it
/// writes it (`reserve`) and waits for room first; `ConnectionGuardHandler`, next to the socket,
/// gives the bytes back as the socket takes them.
final class WriteWindow: Sendable {
    /// Queued bytes above which a writer waits; it resumes at half.
    static let limit = 256 << 10

    private struct State {
        var queued = 0
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = NIOLockedValueBox(State())

    /// Waits for room, then counts `bytes` about to be written.
    func reserve(_ bytes: Int) async {
        await waitForRoom()
        state.withLockedValue { $0.queued += bytes }
    }

    /// Bytes the socket took. Heads and chunk framing are given back without having been reserved,
    /// so the count stops at zero.
    func sent(_ bytes: Int) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.queued = max(0, state.queued - bytes)
            guard state.queued <= Self.limit / 2 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in ready { waiter.resume() }
    }

    /// The connection is gone: nobody waits any more (their next write fails).
    func close() {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns once the connection has room for another chunk (or is closed).
    func waitForRoom() async {
        if state.withLockedValue({ $0.queued <= Self.limit || $0.closed }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { state -> Bool in
                if state.queued <= Self.limit || state.closed { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// The request context of every route: Hummingbird's WebSocket context plus the connection, so a
/// long answer can wait on its `WriteWindow`.
struct NaviscanRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// glibc keeps freed memory in its arenas; after a crowd of long answers ends, it is handed back
/// to the system once things are quiet (at most once a second).
enum MemoryRelease {
    private static let pending = NIOLockedValueBox(false)

    static func soon(on loop: any EventLoop) {
        guard pending.withLockedValue({ state in defer { state = true }; return !state }) else { return }
        loop.scheduleTask(in: .seconds(1)) {
            pending.withLockedValue { $0 = false }
            FreeMemory.giveBack()
        }
    }
}

/// Frame files whose every value was checked, by path, size and modification time: a crowd of
/// requests for one long track validates it once (and one at a time), not once per request.
final class ValidatedFrames: Sendable {
    private let lock = NIOLockedValueBox([String: String]())
    private let validating = NIOLock()

    func validate(_ frames: VisFrameFile) throws {
        let stamp = "\(frames.byteCount)-\(frames.modificationTime)"
        if lock.withLockedValue({ $0[frames.path] == stamp }) { return }
        try validating.withLock {
            if lock.withLockedValue({ $0[frames.path] == stamp }) { return }
            try frames.validatePayload()
            lock.withLockedValue { cache in
                if cache.count > 4096 { cache.removeAll() }
                cache[frames.path] = stamp
            }
        }
    }
}
