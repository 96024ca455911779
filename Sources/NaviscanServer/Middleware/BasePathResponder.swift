import HTTPTypes
import Hummingbird

/// Serves the routes under a reverse proxy's sub-path. A proxy may pass the prefix on
/// (`/naviscan/health`) or strip it (`/health`): both reach the same route, because the prefix is
/// removed before routing. `/naviscan` itself redirects to `/naviscan/`, so that the page's
/// relative URLs resolve under it.
struct BasePathResponder<Inner: HTTPResponder>: HTTPResponder {
    typealias Context = Inner.Context
    let basePath: String
    let inner: Inner

    func respond(to request: Request, context: Context) async throws -> Response {
        guard !basePath.isEmpty, let path = request.head.path else { return try await inner.respond(to: request, context: context) }
        let (route, query) = Self.split(path)
        if route == basePath {
            return Response(status: .permanentRedirect, headers: [.location: basePath + "/" + query])
        }
        guard route.hasPrefix(basePath + "/") else { return try await inner.respond(to: request, context: context) }
        var head = request.head
        head.path = String(route.dropFirst(basePath.count)) + query
        return try await inner.respond(to: Request(head: head, body: request.body), context: context)
    }

    private static func split(_ path: String) -> (route: String, query: String) {
        guard let mark = path.firstIndex(of: "?") else { return (path, "") }
        return (String(path[..<mark]), String(path[mark...]))
    }
}

/// The `--base-path` value.
public enum BasePath {
    /// "/naviscan/" and "naviscan" become "/naviscan"; "/" and "" become "" (no prefix). Nil when
    /// the value cannot be a path prefix.
    public static func normalized(_ value: String) -> String? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: "/")
        guard parts.allSatisfy({ part in
            part != "." && part != ".." && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._~".contains($0)) }
        }) else { return nil }
        return parts.isEmpty ? "" : "/" + parts.joined(separator: "/")
    }
}
