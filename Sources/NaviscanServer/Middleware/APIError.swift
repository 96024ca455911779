import Foundation
import HTTPTypes
import Hummingbird
import NaviscanLibrary
import NIOCore
import NIOHTTP1

/// Every error leaves the server as `{"error": "..."}` with a fitting status.
struct APIError: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    /// The tracks an ambiguous path could mean (409).
    var candidates: [String]? = nil

    var answer: ErrorAnswer { ErrorAnswer(error: message, candidates: candidates) }

    static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, message: message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONBody.response(status: status, answer)
    }
}

enum JSONBody {
    static func response(status: HTTPResponse.Status = .ok, _ answer: some Encodable) -> Response {
        let data = (try? AnswerJSON.data(answer)) ?? Data("{}".utf8)
        return response(status: status, data: data)
    }

    static func response(status: HTTPResponse.Status = .ok, data: Data) -> Response {
        var buffer = ByteBuffer()
        buffer.writeBytes(data)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: buffer))
    }
}

/// Turns any error (unknown routes, HTTPError, unexpected failures) into the JSON error shape: a
/// known path asked with the wrong method is 405 with `Allow`, a body over its limit 413.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return JSONBody.response(status: error.status, error.answer)
        } catch let error as HTTPError where error.status == .notFound {
            if let methods = routes.methods(of: request.uri.path) {
                var response = JSONBody.response(status: .methodNotAllowed, ErrorAnswer(
                    error: "\(request.method) is not allowed on \(request.uri.path); use \(methods.map(\.rawValue).joined(separator: ", "))"))
                response.headers[.allow] = methods.map(\.rawValue).joined(separator: ", ")
                return response
            }
            return JSONBody.response(status: .notFound, ErrorAnswer(error: "no such endpoint: \(request.uri.path)"))
        } catch let error as HTTPError {
            return JSONBody.response(status: error.status, ErrorAnswer(error: error.body ?? error.status.reasonPhrase))
        } catch let error as HTTPParserError {
            // A malformed request (a bad chunk size in a body): Hummingbird answers 400 and closes.
            throw error
        } catch is NIOTooManyBytesError {
            return JSONBody.response(status: .contentTooLarge, ErrorAnswer(error: "the request body is larger than this endpoint takes; send fewer paths per request"))
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            return JSONBody.response(status: .internalServerError, ErrorAnswer(error: "internal error; see the server log"))
        }
    }
}

/// One info line per request: method, path, the track it names, the range asked, status, duration.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = start.duration(to: .now)
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) * 1e-15
        var line = "\(request.method) \(request.uri.path)"
        if let track = QueryValues(request).first("relative_path") { line += " \"\(track)\"" }
        if let range = request.headers[.range] { line += " (\(range))" }
        context.logger.info("\(line) \(response.status.code) \(String(format: "%.2f", ms)) ms")
        return response
    }
}
