import HTTPTypes
import Hummingbird
import NaviscanLibrary
import HummingbirdWebSocket
import NIOConcurrencyHelpers

/// The paths the server answers and each one's methods, recorded as the controllers register their
/// routes (all before the server starts): 405 answers and their `Allow` header come from here, so
/// they cannot drift from the routes.
final class RouteTable: Sendable {
    private let table = NIOLockedValueBox<[String: [HTTPRequest.Method]]>([:])

    /// The methods registered for `path` (HEAD wherever GET is, as the router answers it); nil for an unknown path.
    func methods(of path: String) -> [HTTPRequest.Method]? { table.withLockedValue { $0[path] } }

    fileprivate func note(_ path: String, _ method: HTTPRequest.Method) {
        table.withLockedValue { table in
            let added: [HTTPRequest.Method] = method == .get ? [.get, .head] : [method]
            for method in added where !(table[path] ?? []).contains(method) { table[path, default: []].append(method) }
            let order: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .options]
            table[path]?.sort { (order.firstIndex(of: $0) ?? order.count) < (order.firstIndex(of: $1) ?? order.count) }
        }
    }
}

/// Where a controller registers its routes: the router, with each registration noted in the table.
/// Every route says who may call it (`RouteAccess`) and whether it is expensive (`RouteCost`); the
/// token, the store's availability and the bound on expensive requests are checked by middleware on
/// each route's group, so no handler repeats them.
struct Routes {
    let router: Router<NaviscanRequestContext>
    let table: RouteTable
    let access: AccessPolicy
    let settingNames: SettingNames
    let basePath: String
    let store: StoreHandle
    /// Shared by every expensive route: the bound is on all of them together.
    let limiter: RequestLimiter

    private func group(_ routeAccess: RouteAccess, _ cost: RouteCost) -> RouterGroup<NaviscanRequestContext> {
        let group = router.group()
        group.add(middleware: AccessMiddleware(access: routeAccess, policy: access, tokenSetting: settingNames.token, basePath: basePath))
        if routeAccess != .open { group.add(middleware: StoreOutageMiddleware(store: store)) }
        if cost == .expensive { group.add(middleware: RequestLimitMiddleware(limiter: limiter)) }
        return group
    }

    func get(_ path: String, access routeAccess: RouteAccess, cost: RouteCost = .cheap,
             use handler: @escaping @Sendable (Request, NaviscanRequestContext) async throws -> Response) {
        table.note(path, .get)
        group(routeAccess, cost).get(RouterPath(path), use: handler)
    }

    func post(_ path: String, access routeAccess: RouteAccess, cost: RouteCost = .cheap,
              use handler: @escaping @Sendable (Request, NaviscanRequestContext) async throws -> Response) {
        table.note(path, .post)
        group(routeAccess, cost).post(RouterPath(path), use: handler)
    }

    func webSocket(_ path: String, access routeAccess: RouteAccess,
                   onUpgrade handler: @escaping WebSocketDataHandler<WebSocketRouterContext<NaviscanRequestContext>>) {
        table.note(path, .get)
        group(routeAccess, .cheap).ws(RouterPath(path), onUpgrade: handler)
    }
}

/// Whether a route is bounded by the server's `RequestLimiter`.
enum RouteCost {
    case cheap
    /// Seconds of CPU or thousands of rows per request: at most `ServerConfiguration.expensiveRequests` at once.
    case expensive
}

/// While the store is gone (see `StoreHandle`), every route that reads it answers 503 and says why.
struct StoreOutageMiddleware<Context: RequestContext>: RouterMiddleware {
    let store: StoreHandle

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let reason = store.unavailable {
            var response = JSONBody.response(status: .serviceUnavailable, ErrorAnswer(error: reason))
            response.headers[.retryAfter] = "10"
            return response
        }
        return try await next(request, context)
    }
}
