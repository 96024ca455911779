import HTTPTypes
import Hummingbird
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
struct Routes {
    let router: Router<NaviscanRequestContext>
    let table: RouteTable

    func get(_ path: String, use handler: @escaping @Sendable (Request, NaviscanRequestContext) async throws -> Response) {
        table.note(path, .get)
        router.get(RouterPath(path), use: handler)
    }

    func post(_ path: String, use handler: @escaping @Sendable (Request, NaviscanRequestContext) async throws -> Response) {
        table.note(path, .post)
        router.post(RouterPath(path), use: handler)
    }

    func webSocket(_ path: String, onUpgrade handler: @escaping WebSocketDataHandler<WebSocketRouterContext<NaviscanRequestContext>>) {
        table.note(path, .get)
        router.ws(RouterPath(path), onUpgrade: handler)
    }
}
