#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// How long a connection may take for each step, and how many may be open at once.
public struct ConnectionLimits: Sendable {
    /// From accepting a connection to its first complete request head (slowloris).
    public var requestHeadTimeout: TimeAmount = .seconds(10)
    /// From the end of a response to the next complete request head on a keep-alive connection.
    public var idleTimeout: TimeAmount = .seconds(30)
    /// From a request head to the end of its body.
    public var requestBodyTimeout: TimeAmount = .seconds(30)
    /// The most connections open at once; `effective` lowers it to what the descriptor limit allows.
    public var maxConnections = 4096

    public init() {}

    /// Connections the process can hold: each streaming answer needs a socket and an open file, and
    /// some descriptors stay for the store, the log and the event loops.
    public func effectiveMaxConnections(descriptorLimit: Int = ConnectionLimits.raiseDescriptorLimit()) -> Int {
        max(16, min(maxConnections, (descriptorLimit - 64) / 2))
    }

    /// Beyond this many open connections, each new one closes the connection that has waited longest
    /// for a request, so a crowd of idle sockets cannot keep real clients out.
    public func evictionThreshold(maxConnections: Int) -> Int {
        maxConnections - max(8, maxConnections / 16)
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit (as most servers do) and returns it.
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = min(limit.rlim_max, 1 << 20)
            if setrlimit(RLIMIT_NOFILE_VALUE, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}

#if canImport(Glibc)
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
private let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
#endif

/// Every open connection, with whether it is waiting for a request (and could be closed without
/// harming anyone). Shared by all event loops, so it is locked.
final class ConnectionRegistry: Sendable {
    private struct Entry { let channel: any Channel; let serial: Int; var waiting: Bool }
    private struct State { var entries: [ObjectIdentifier: Entry] = [:]; var serial = 0 }
    private let state = NIOLockedValueBox(State())
    let evictionThreshold: Int

    init(evictionThreshold: Int) { self.evictionThreshold = evictionThreshold }

    var count: Int { state.withLockedValue { $0.entries.count } }

    /// Registers a connection; at the threshold, closes the longest-waiting idle one.
    func opened(_ channel: any Channel) {
        let victim: (any Channel)? = state.withLockedValue { state in
            state.serial += 1
            state.entries[ObjectIdentifier(channel)] = Entry(channel: channel, serial: state.serial, waiting: true)
            guard state.entries.count > evictionThreshold else { return nil }
            let id = ObjectIdentifier(channel)
            let oldest = state.entries.filter { $0.key != id && $0.value.waiting }.min { $0.value.serial < $1.value.serial }
            guard let oldest else { return nil }
            state.entries[oldest.key] = nil
            return oldest.value.channel
        }
        victim?.close(promise: nil)
    }

    func setWaiting(_ channel: any Channel, _ waiting: Bool) {
        state.withLockedValue { $0.entries[ObjectIdentifier(channel)]?.waiting = waiting }
    }

    func closed(_ channel: any Channel) {
        _ = state.withLockedValue { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// The first handler of every connection, on raw bytes: registers it, and closes it when a request
/// head (or body) takes too long. `RequestActivityHandler`, behind the HTTP decoder, tells it where
/// each request starts and ends; a WebSocket upgrade (a `101` answer) ends the timing for good.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private enum Phase { case waitingForHead, readingBody, responding, upgraded }
    private let limits: ConnectionLimits
    private let registry: ConnectionRegistry
    private var phase = Phase.waitingForHead
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    private var registered = false
    private var lastFour: UInt32 = 0

    init(limits: ConnectionLimits, registry: ConnectionRegistry) {
        self.limits = limits
        self.registry = registry
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop(context)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop(context)
        self.context = nil
    }

    /// The end of a request head ("\r\n\r\n") is seen here on the raw bytes: Hummingbird only adds
    /// the HTTP-level handlers once it has decided about a WebSocket upgrade, which on a busy
    /// machine can take longer than the head timeout.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if phase == .waitingForHead {
            let ended = unwrapInboundIn(data).withUnsafeReadableBytes { bytes in
                for byte in bytes {
                    lastFour = lastFour << 8 | UInt32(byte)
                    if lastFour == 0x0D0A_0D0A { return true }
                }
                return false
            }
            if ended { requestHeadReceived() }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if phase != .upgraded, Self.isSwitchingProtocols(unwrapOutboundIn(data)) {
            phase = .upgraded
            deadline?.cancel()
            registry.setWaiting(context.channel, false)
        }
        context.write(data, promise: promise)
    }

    private static let switchingProtocols = Array("HTTP/1.1 101".utf8)
    private static func isSwitchingProtocols(_ buffer: ByteBuffer) -> Bool {
        buffer.readableBytes >= switchingProtocols.count
            && buffer.getBytes(at: buffer.readerIndex, length: switchingProtocols.count) == switchingProtocols
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        registry.opened(context.channel)
        arm(limits.requestHeadTimeout, context)
    }

    private func stop(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        if registered { registry.closed(context.channel) }
        registered = false
    }

    private func arm(_ timeout: TimeAmount, _ context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    // Called by RequestActivityHandler on the same event loop.

    func requestHeadReceived() {
        guard let context, phase != .upgraded else { return }
        phase = .readingBody
        registry.setWaiting(context.channel, false)
        arm(limits.requestBodyTimeout, context)
    }

    func requestEnded() {
        guard phase == .readingBody else { return }
        phase = .responding
        deadline?.cancel()
        deadline = nil
    }

    func responseEnded() {
        guard let context, phase != .upgraded else { return }
        phase = .waitingForHead
        lastFour = 0
        registry.setWaiting(context.channel, true)
        arm(limits.idleTimeout, context)
    }
}

/// Behind the HTTP decoder: reports request heads, request ends and response ends to the
/// connection's `ConnectionGuardHandler`.
final class RequestActivityHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    private var connection: ConnectionGuardHandler?

    func handlerAdded(context: ChannelHandlerContext) {
        connection = try? context.pipeline.syncOperations.handler(type: ConnectionGuardHandler.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: connection?.requestHeadReceived()
        case .body: break
        case .end: connection?.requestEnded()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { connection?.responseEnded() }
        context.write(data, promise: promise)
    }
}

/// Wraps a child channel so `ConnectionGuardHandler` is the first handler of every connection,
/// before any HTTP parsing (Hummingbird's own handlers only appear once a first request head is in).
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let limits: ConnectionLimits
    let registry: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuardHandler(limits: limits, registry: registry), position: .first)
        }.flatMap { base.setup(channel: channel, logger: logger) }
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

func guarded(_ base: some ServerChildChannel, limits: ConnectionLimits, registry: ConnectionRegistry) -> any ServerChildChannel {
    GuardedChildChannel(base: base, limits: limits, registry: registry)
}
