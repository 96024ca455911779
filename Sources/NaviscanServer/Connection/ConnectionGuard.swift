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
    /// How long an answer may stay blocked on a client that does not read (the socket's buffers
    /// full) before the connection is closed and what was held for it is given back.
    public var writeStallTimeout: TimeAmount = .seconds(20)
    /// The most connections open at once; `effective` lowers it to what the descriptor limit allows.
    public var maxConnections = 4096
    /// The largest request head (request line and headers) taken; a larger one is answered 431 and
    /// closed at once. Browsers and players send well under 8 kB.
    public var maxRequestHeadBytes = 32 << 10

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
    private struct Entry { let channel: any Channel; let serial: Int; var waiting: Bool; let window: WriteWindow }
    private struct State { var entries: [ObjectIdentifier: Entry] = [:]; var serial = 0 }
    private let state = NIOLockedValueBox(State())
    let evictionThreshold: Int

    init(evictionThreshold: Int) { self.evictionThreshold = evictionThreshold }

    var count: Int { state.withLockedValue { $0.entries.count } }

    /// Registers a connection; at the threshold, closes the longest-waiting idle one.
    func opened(_ channel: any Channel, window: WriteWindow) {
        let victim: (any Channel)? = state.withLockedValue { state in
            state.serial += 1
            state.entries[ObjectIdentifier(channel)] = Entry(channel: channel, serial: state.serial, waiting: true, window: window)
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

    /// The connection's write window (nil once it has closed).
    func window(_ channel: any Channel) -> WriteWindow? {
        state.withLockedValue { $0.entries[ObjectIdentifier(channel)]?.window }
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
    private var stall: Scheduled<Void>?
    private let window = WriteWindow()
    private var context: ChannelHandlerContext?
    private var registered = false
    private var lastFour: UInt32 = 0
    /// Bytes of the current request head seen so far, and of the first request's method token (nil
    /// once it ended; later requests may arrive pipelined, while an answer is still being written,
    /// so only the first one is known to start at a read's first byte).
    private var headBytes = 0
    private var methodBytes: Int? = 0
    /// Where the first request's head is: its request line, the start of a header line, inside a
    /// header's name, or past its colon. Done once the first head has ended.
    private enum LineState { case requestLine, lineStart, name, value, done }
    private var line = LineState.requestLine
    private var refused = false
    /// The answer went out before its request's body was read to the end (a 413): the bytes that
    /// follow are that body, not a new head, until the parser reports the request's end.
    private var bodyPending = false

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

    /// Answers are written with back-pressure (a writer waits while the socket's buffers are full),
    /// so a client that never reads holds one chunk and the kernel's buffers; after
    /// `writeStallTimeout` without the socket draining, it is closed.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        stall?.cancel()
        stall = nil
        if !context.channel.isWritable {
            let channel = context.channel
            stall = context.eventLoop.scheduleTask(in: limits.writeStallTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop(context)
        self.context = nil
    }

    /// The end of a request head ("\r\n\r\n") is seen here on the raw bytes: Hummingbird only adds
    /// the HTTP-level handlers once it has decided about a WebSocket upgrade, which on a busy
    /// machine can take longer than the head timeout.
    ///
    /// Two answers are given here, before any parser: a head over `maxRequestHeadBytes` gets 431,
    /// and a request that does not start with a method token (random bytes, a TLS handshake sent
    /// to the plain port) gets 400; both close the connection at once rather than at a timeout.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if phase == .waitingForHead && !bodyPending {
            var verdict = HeadVerdict.incomplete
            unwrapInboundIn(data).withUnsafeReadableBytes { bytes in
                for byte in bytes {
                    headBytes += 1
                    lastFour = lastFour << 8 | UInt32(byte)
                    if let count = methodBytes {
                        if byte == UInt8(ascii: " ") && count > 0 {
                            methodBytes = nil
                        } else if (byte == 0x0D || byte == 0x0A) && count == 0 {
                            // Empty lines before a request are allowed (RFC 9112 §2.2).
                        } else if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && count < 16 {
                            methodBytes = count + 1
                        } else {
                            verdict = .malformed
                            return
                        }
                    } else if !acceptHeadByte(byte) {
                        verdict = .malformed
                        return
                    }
                    if lastFour == 0x0D0A_0D0A {
                        verdict = .complete
                        return
                    }
                    if headBytes > limits.maxRequestHeadBytes {
                        verdict = .tooLarge
                        return
                    }
                }
            }
            switch verdict {
            case .incomplete: break
            case .complete: requestHeadReceived()
            case .malformed:
                refuse(context, status: "400 Bad Request", message: "not an HTTP request; naviscan serve speaks plain HTTP/1.1")
                return
            case .tooLarge:
                refuse(context, status: "431 Request Header Fields Too Large",
                       message: "the request head is larger than \(limits.maxRequestHeadBytes / 1024) kB")
                return
            }
        }
        context.fireChannelRead(data)
    }

    private enum HeadVerdict { case incomplete, complete, malformed, tooLarge }

    /// The first request's header lines: each a token, a colon and a value without control bytes.
    /// A head the HTTP parser would reject must be answered here: before the first request has
    /// been parsed, the WebSocket upgrade step swallows the parser's error and the client would
    /// wait for a timeout.
    private func acceptHeadByte(_ byte: UInt8) -> Bool {
        switch line {
        case .done:
            return true
        case .requestLine, .value:
            if byte == 0x0A { line = .lineStart; return true }
            return byte >= 0x20 && byte != 0x7F || byte == 0x09 || byte == 0x0D
        case .lineStart:
            if byte == 0x0D { return true }
            if byte == 0x0A { line = .done; return true }
            guard Self.isTokenByte(byte) else { return false }
            line = .name
            return true
        case .name:
            if byte == UInt8(ascii: ":") { line = .value; return true }
            return Self.isTokenByte(byte)
        }
    }

    /// RFC 9110's tchar.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Answers a request no parser should see, straight onto the socket, and closes.
    private func refuse(_ context: ChannelHandlerContext, status: String, message: String) {
        refused = true
        deadline?.cancel()
        let body = "{\"error\":\"\(message)\"}"
        let head = "HTTP/1.1 \(status)\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(NIOAny(ByteBuffer(string: head + body))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        if phase != .upgraded, Self.isSwitchingProtocols(buffer) {
            phase = .upgraded
            deadline?.cancel()
            registry.setWaiting(context.channel, false)
        }
        let bytes = buffer.readableBytes
        let written = promise ?? context.eventLoop.makePromise()
        written.futureResult.whenComplete { [window] _ in window.sent(bytes) }
        context.write(data, promise: written)
    }

    private static let switchingProtocols = Array("HTTP/1.1 101".utf8)
    private static func isSwitchingProtocols(_ buffer: ByteBuffer) -> Bool {
        buffer.readableBytes >= switchingProtocols.count
            && buffer.getBytes(at: buffer.readerIndex, length: switchingProtocols.count) == switchingProtocols
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !registered else { return }
        registered = true
        registry.opened(context.channel, window: window)
        arm(limits.requestHeadTimeout, context)
    }

    private func stop(_ context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        stall?.cancel()
        stall = nil
        window.close()
        if registered {
            registry.closed(context.channel)
            MemoryRelease.soon(on: context.eventLoop)
        }
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
        if bodyPending {
            bodyPending = false
            lastFour = 0
            headBytes = 0
        }
        guard phase == .readingBody else { return }
        phase = .responding
        deadline?.cancel()
        deadline = nil
    }

    func responseEnded() {
        guard let context, phase != .upgraded else { return }
        bodyPending = phase == .readingBody
        phase = .waitingForHead
        lastFour = 0
        headBytes = 0
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
