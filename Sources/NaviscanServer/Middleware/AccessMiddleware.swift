import Foundation
import HTTPTypes
import Hummingbird
import NaviscanLibrary
import NaviscanCore

/// What a route needs from the caller when the server has an access token.
enum RouteAccess: Sendable {
    /// Never a token: `/health`, so that health checks and load balancers need no secret.
    case open
    /// The companion's reads (profiles, frames, waveforms, the push socket): a token only when the
    /// policy protects them too, so the mobile app keeps working on a LAN.
    case companion
    /// The audio, the web page and every write: always the token.
    case restricted
}

/// Checks the access token on the routes of one `RouteAccess` class. The token may come as
/// `Authorization: Bearer TOKEN`, as `?token=TOKEN`, or as the page's cookie: opening the page once
/// with `?token=` sets the cookie and redirects to the same page without it, so the token stays out
/// of the address bar, bookmarks and the history. Compared in constant time; never logged.
struct AccessMiddleware<Context: RequestContext>: RouterMiddleware {
    static var cookieName: String { "naviscan_token" }

    let access: RouteAccess
    let policy: AccessPolicy
    /// How the token is set, for the 401 answer.
    let tokenSetting: String
    let basePath: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = policy.token, needsToken else { return try await next(request, context) }
        if let presented = request.uri.queryParameters.get("token"), Self.equal(presented, token) {
            if request.method == .get, isPage(request) { return redirectSettingCookie(request, token: token) }
            return try await next(request, context)
        }
        if let presented = Self.bearer(request) ?? Self.cookie(request), Self.equal(presented, token) {
            return try await next(request, context)
        }
        return refusal(request)
    }

    private var needsToken: Bool {
        switch access {
        case .open: return false
        case .companion: return policy.protectCompanion
        case .restricted: return true
        }
    }

    private func isPage(_ request: Request) -> Bool { request.uri.path == "/" || request.uri.path == "/track" }

    private func redirectSettingCookie(_ request: Request, token: String) -> Response {
        let rest = (request.uri.queryParameters.filter { $0.key != "token" }).map { pair in
            "\(pair.key)=\(String(pair.value).addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? "")"
        }
        let location = basePath + request.uri.path + (rest.isEmpty ? "" : "?" + rest.joined(separator: "&"))
        var headers: HTTPFields = [.location: location, .cacheControl: "no-store"]
        headers[.setCookie] = "\(Self.cookieName)=\(token); Path=\(basePath)/; Max-Age=31536000; HttpOnly; SameSite=Strict"
        return Response(status: .seeOther, headers: headers)
    }

    private func refusal(_ request: Request) -> Response {
        let message = "this naviscan needs its access token: send `Authorization: Bearer TOKEN`, or open the page once as "
            + "\(basePath)/?token=TOKEN. The token was printed when naviscan serve first started and is kept in the token file of its data folder "
            + "(or set with \(tokenSetting))."
        var response = JSONBody.response(status: .unauthorized, ErrorAnswer(error: message))
        response.headers[.wwwAuthenticate] = "Bearer realm=\"naviscan\""
        if request.method == .get, isPage(request) {
            response.headers[.contentType] = "text/html; charset=utf-8"
            response.body = .init(byteBuffer: ByteBuffer(string: tokenPage(request)))
        }
        return response
    }

    /// The page a browser gets without the token: what it is, where to find it, and a field to give
    /// it, which comes back here as ?token= (setting the cookie) on the page that was asked for. Its
    /// style is inline: /static needs the token too.
    private func tokenPage(_ request: Request) -> String {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: "\"", with: "&quot;")
        }
        let kept = request.uri.queryParameters.filter { $0.key != "token" }
            .map { "<input type=\"hidden\" name=\"\(escaped(String($0.key)))\" value=\"\(escaped(String($0.value)))\">" }.joined()
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1"><title>naviscan: access token needed</title>
            <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222;background:#fafafa}
            code{background:#e8e8e8;padding:0 .25em;border-radius:3px}input{font:inherit;padding:.3em;width:18rem}button{font:inherit;padding:.3em .8em}
            @media (prefers-color-scheme:dark){body{background:#121212;color:#ddd}code{background:#333}}</style></head>
            <body><h1>Access token needed</h1>
            <p>This naviscan answers other machines, so its pages ask for the access token it printed when
            <code>naviscan serve</code> first started. It is kept in the <code>token</code> file of its data folder
            (unless it was set in the configuration or <code>NAVISCAN_SERVE_TOKEN</code>).</p>
            <form method="get" action="\(escaped(basePath + request.uri.path))">\(kept)
            <label>Token <input type="password" name="token" autocomplete="current-password" required></label>
            <button type="submit">Open</button></form>
            <p>Players and scripts send <code>Authorization: Bearer TOKEN</code> instead.</p></body></html>
            """
    }

    static func bearer(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    static func cookie(_ request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let kv = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0] == cookieName { return String(kv[1]) }
            }
        }
        return nil
    }

    /// Constant time in the presented token's content: every byte of the expected token is compared.
    static func equal(_ presented: String, _ expected: String) -> Bool {
        let p = Array(presented.utf8), e = Array(expected.utf8)
        var difference: UInt8 = p.count == e.count ? 0 : 1
        for i in 0..<e.count { difference |= (i < p.count ? p[i] : 0) ^ e[i] }
        return difference == 0 && !e.isEmpty
    }
}

/// The token file could not be used, and what to do. The description names the config file's key
/// for the token; `naviscan serve` asks for `description(tokenSetting:)` with its flag and variable.
public enum AccessTokenError: Error, CustomStringConvertible {
    case openToOthers(file: String, mode: String, ownedByAnother: Bool)
    case unreadable(file: String)
    case unusable(file: String, problem: String)
    case unwritable(file: String, reason: String)

    public var description: String { description(tokenSetting: SettingNames().token) }

    /// The message, naming `tokenSetting` as the way to give a token instead.
    public func description(tokenSetting: String) -> String {
        switch self {
        case .openToOthers(let file, let mode, true):
            "the access token file \(file) may be read or written by other users (mode \(mode)) and belongs to another user, so naviscan cannot close it; run `chmod 600 \(file)` as its owner, then start naviscan again"
        case .openToOthers(let file, let mode, false):
            "the access token file \(file) may be read or written by other users (mode \(mode)) and naviscan could not change that; run `chmod 600 \(file)`, then start naviscan again"
        case .unreadable(let file):
            "cannot read the access token file \(file); make it readable by the user naviscan runs as, or delete it to have a new one made"
        case .unusable(let file, let problem):
            "the access token file \(file) holds no usable token (\(problem)); put one in it, or delete it to have a new one made"
        case .unwritable(let file, let reason):
            "cannot write the access token file \(file) (\(reason)); make the data folder writable, or give a token with \(tokenSetting)"
        }
    }
}

/// A token for a server that is reachable from the network: 32 random bytes, URL-safe base64.
public enum AccessToken {
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The token kept in `file` (the data folder's `token`), made and written (mode 600, atomically)
    /// when there is none yet; `created` says so, so the caller prints it that once. A file others
    /// may read or write is closed to them (`tightenedFrom`: its mode before) when this user owns
    /// it, else refused: a token others can read guards nothing.
    public static func loadOrCreate(file: String) throws -> (token: String, created: Bool, tightenedFrom: mode_t?) {
        var tightenedFrom: mode_t?
        if FileManager.default.fileExists(atPath: file) {
            var st = stat()
            if stat(file, &st) == 0, st.st_mode & 0o077 != 0 {
                let mode = String(st.st_mode & 0o777, radix: 8)
                guard st.st_uid == geteuid() else {
                    throw AccessTokenError.openToOthers(file: file, mode: mode, ownedByAnother: true)
                }
                guard chmod(file, 0o600) == 0 else {
                    throw AccessTokenError.openToOthers(file: file, mode: mode, ownedByAnother: false)
                }
                tightenedFrom = st.st_mode & 0o777
            }
            guard let data = FileManager.default.contents(atPath: file),
                  let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines) else {
                throw AccessTokenError.unreadable(file: file)
            }
            if let problem = problem(text) {
                throw AccessTokenError.unusable(file: file, problem: problem)
            }
            return (text, false, tightenedFrom)
        }
        let token = generate()
        do {
            try AtomicFile.write(Data((token + "\n").utf8), to: file, mode: 0o600)
        } catch {
            throw AccessTokenError.unwritable(file: file, reason: "\(error)")
        }
        return (token, true, nil)
    }

    /// A token must be long enough not to be guessed over the network, and printable in a header.
    public static func problem(_ token: String) -> String? {
        if token.count < 16 { return "an access token must have at least 16 characters" }
        if !token.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ";" && $0 != "," && $0 != "\"" && !$0.isNewline }) {
            return "an access token may hold only printable ASCII characters without spaces, quotes, commas or semicolons"
        }
        return nil
    }
}

extension CharacterSet {
    /// A query value: unreserved characters only.
    static let urlQueryValueAllowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
