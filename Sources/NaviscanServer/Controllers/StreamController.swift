import Foundation
import Hummingbird

/// `GET /stream?relative_path=P`: the audio file itself, with single byte ranges, opened first and
/// then checked to lie inside the library (`LibraryTrackFile.open`).
struct StreamController {
    let services: ServerServices

    func addRoutes(to routes: Routes) {
        routes.get("/stream", access: .restricted) { request, context in
            guard services.configuration.stream else { throw APIError.notFound("streaming is turned off on this server") }
            let path = try await services.paths.resolve(QueryValues(request))
            guard let library = services.library else {
                throw APIError(status: .serviceUnavailable, message: "the library root is unknown; start the server with the library named")
            }
            let opened = try await Task.detached { try LibraryTrackFile.open(path, library: library) }.value
            return try AudioStream.response(opened: opened, request: request, window: services.connections.window(context.channel))
        }
    }
}
