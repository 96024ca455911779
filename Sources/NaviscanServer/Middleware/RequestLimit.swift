import Hummingbird
import NaviscanLibrary
import NIOConcurrencyHelpers

/// How many expensive requests (/similar, /path, bulk profiles: a scan of every track's vector, or
/// thousands of profiles) run at once. One more is answered 503 with `Retry-After` at once instead
/// of queueing behind the others, so a burst never piles up work the clients have long given up on.
final class RequestLimiter: Sendable {
    let limit: Int
    private let running = NIOLockedValueBox(0)

    init(limit: Int) { self.limit = limit }

    /// True when the request may run; it then calls `leave()` when done.
    func enter() -> Bool {
        running.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() { running.withLockedValue { $0 -= 1 } }
}

/// The limiter applied to a route group (`Routes`, cost `.expensive`).
struct RequestLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limiter: RequestLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard limiter.enter() else {
            var response = JSONBody.response(status: .serviceUnavailable, ErrorAnswer(error: "the server is busy with \(limiter.limit) similarity or bulk-profile requests already; retry in a second"))
            response.headers[.retryAfter] = "1"
            return response
        }
        defer { limiter.leave() }
        return try await next(request, context)
    }
}
