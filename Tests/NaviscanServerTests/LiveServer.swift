import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NaviscanTestSupport
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// An application served on a free loopback port for one test, and a plain HTTP/1.1 client over
/// `RawSocket` (one connection per request, on a dispatch thread, never on the cooperative pool the
/// server's handlers need). It replaces HummingbirdTesting's live mode, whose package pulls
/// AsyncHTTPClient, SwiftNIO SSL and BoringSSL into every test build.
enum LiveTestMode { case live }

/// One answer: the status, the header fields and the whole body.
struct LiveResponse: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: ByteBuffer
}

struct LiveClient: Sendable {
    let port: Int?

    /// Sends one request and hands its answer to `check`.
    @discardableResult
    func execute<Return>(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
                         _ check: (LiveResponse) async throws -> Return = { $0 }) async throws -> Return {
        let port = self.port ?? 0
        let fields = headers.reduce(into: ["Connection": "close"]) { $0[$1.name.rawName] = $1.value }
        let bytes = body.map { Array(buffer: $0) } ?? []
        let answer: RawSocket.Response = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try RawSocket(port: port).request(method.rawValue, uri, headers: fields, body: bytes, keep: Int.max)
                })
            }
        }
        var responseHeaders = HTTPFields()
        for (name, value) in answer.headers {
            if let field = HTTPField.Name(name) { responseHeaders.append(HTTPField(name: field, value: value)) }
        }
        let response = LiveResponse(status: HTTPResponse.Status(code: answer.status), headers: responseHeaders,
                                    body: ByteBuffer(bytes: answer.body))
        return try await check(response)
    }
}

extension ApplicationProtocol {
    /// Runs the application on 127.0.0.1 with a free port while `body` runs, then shuts it down.
    func test<Value: Sendable>(_ mode: LiveTestMode, _ body: @Sendable (LiveClient) async throws -> Value) async throws -> Value {
        let application = LiveApplication(base: self)
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: application.logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = await application.port.value
            do {
                let value = try await body(LiveClient(port: port))
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return value
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }
}

/// `base` bound to port 0 on loopback; `port` is filled once the server listens.
private struct LiveApplication<Base: ApplicationProtocol>: ApplicationProtocol, Service {
    typealias Responder = Base.Responder
    let base: Base
    let port = PortPromise()

    var responder: Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration { base.configuration.with(address: .hostname("127.0.0.1", port: 0)) }
    var logger: Logger { base.logger }
    var services: [any Service] { base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }

    @Sendable func onServerRunning(_ channel: any Channel) async {
        await base.onServerRunning(channel)
        port.fulfil(channel.localAddress?.port ?? 0)
    }
}

/// The listening port, awaited by the test once the server has bound it.
private final class PortPromise: Sendable {
    private let state = NIOLockedValueBox<(port: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    func fulfil(_ port: Int) {
        let waiters = state.withLockedValue { state in
            state.port = port
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }

    var value: Int {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLockedValue { state -> Int? in
                    if let port = state.port { return port }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
