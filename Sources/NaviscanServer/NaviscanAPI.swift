import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NaviscanCore
import NaviscanLibrary
import NIOCore

/// The companion API's read endpoints over a naviscan store.
///
///     GET  /health
///     GET  /smart-dj/profile?relative_path=P
///     GET  /smart-dj/bulk-profiles?paths=P1,P2     (also repeated paths=, or POST a JSON array / {"paths": […]})
///     GET  /visualizer/frames?relative_path=P      (JSON; raw VisFrameBuffer with Accept: application/octet-stream or &format=binary)
///     POST /visualizer/precompute {"relative_path": P}   (GET …?relative_path=P: its state)
///     WS   /ws/push                                 ({"event": "track_analyzed", "relative_path": P})
///     GET  /stream?relative_path=P                  (the audio file; single byte ranges)
///     GET  /  and  /track?relative_path=P          (the web page; /static/NAME its script and style)
public enum NaviscanAPI {
    /// The largest POST body /smart-dj/bulk-profiles takes (10,000 long paths fit); more is 413.
    static let bulkBodyLimit = 4 << 20

    /// Each route's methods, for 405 answers (HEAD is allowed wherever GET is).
    static let routes: [String: [HTTPRequest.Method]] = [
        "/health": [.get, .head], "/smart-dj/profile": [.get, .head],
        "/smart-dj/bulk-profiles": [.get, .head, .post], "/visualizer/frames": [.get, .head], "/waveform": [.get, .head],
        "/visualizer/precompute": [.get, .head, .post], "/ws/push": [.get], "/stream": [.get, .head],
        "/": [.get, .head], "/track": [.get, .head],
    ]

    /// Builds the application: routes, middleware, the store watcher. Run it with `runService()`.
    public static func makeApplication(configuration: ServerConfiguration, logger: Logger,
                                       onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let layout = OutputLayout(root: configuration.dataDirectory)
        guard FileManager.default.fileExists(atPath: layout.databasePath) else {
            throw LibraryError.store(path: layout.databasePath, reason: "no store here; scan the library first, or serve the folder a scan wrote its results to")
        }
        let store = try LibraryStore(path: layout.databasePath)
        let library = try configuration.library ?? store.libraryIdentity().root
        let hub = PushHub()
        let processor = TrackProcessor(layout: layout, visualizer: configuration.visualizer, profile: configuration.profile,
                                       durability: .immediate, profileFileWriter: .processor, logger: logger)
        let precompute = PrecomputeQueue(processor: processor, store: store, hub: hub, workers: configuration.precomputeJobs,
                                         capacity: configuration.precomputeQueueCapacity, logger: logger)
        let visSize = VisCacheSize(directory: layout.visDirectory)
        let maintainer = try configuration.maintenance.map { maintenance -> LibraryMaintainer in
            guard let library else {
                throw LibraryError.store(path: layout.databasePath, reason: "the library is unknown: no scan has recorded it; name the library to keep it analysed, or serve without watching")
            }
            var options = ScanOptions(library: library, output: configuration.dataDirectory, visualizer: configuration.visualizer,
                                      profile: configuration.profile, jobs: maintenance.jobs)
            options.pruneThreshold = maintenance.pruneThreshold
            options.followExternalLinks = maintenance.followExternalLinks
            options.lockOwner = .watch
            options.parameters = configuration.parameters
            options.albumPerDisc = configuration.parameters?.albumPerDisc ?? false
            return LibraryMaintainer(options: options, settings: maintenance, precompute: precompute, logger: logger)
        }

        // HEAD answers every GET with the GET's headers and no body.
        let router = Router(context: NaviscanRequestContext.self, options: .autoGenerateHeadEndpoints)
        let maxConnections = configuration.limits.effectiveMaxConnections()
        let registry = ConnectionRegistry(evictionThreshold: configuration.limits.evictionThreshold(maxConnections: maxConnections))
        let validated = ValidatedFrames()
        if let origin = configuration.corsOrigin {
            // First, so that a preflight OPTIONS is answered before routing.
            router.middlewares.add(CORSMiddleware(allowOrigin: origin == "*" ? .all : .custom(origin),
                                                  allowHeaders: [.accept, .contentType, .range, .ifNoneMatch],
                                                  allowMethods: [.get, .head, .post, .options],
                                                  exposedHeaders: ["Content-Range", "Accept-Ranges", "Content-Length", "ETag"]))
        }
        router.middlewares.add(RequestLogMiddleware())
        router.middlewares.add(JSONErrorMiddleware(allowedMethods: routes))

        /// A stored output that a reader rejected or could not find: logged (with the file's path,
        /// for the admin), marked in the store so nothing serves it and the next scan analyses the
        /// track again, and answered 404 when the file is gone, else 500. Answers name the track,
        /// never a path on the server's disk; a read that failed for a reason that may pass (an I/O
        /// error) marks nothing.
        @Sendable func damaged(_ path: String, _ output: DamagedOutput, _ error: Error, files: [String] = []) async -> APIError {
            let what = output.rawValue
            let missing = StoredOutputError.isMissing(files)
            logger.warning(missing ? "missing stored output" : "damaged stored output",
                           metadata: ["path": "\(path)", "output": "\(what)", "error": "\(error)"])
            if !missing, StoredOutputError.isTransient(error) {
                return APIError(status: .internalServerError, message: "cannot read the stored \(what) of \(path) (an I/O error; the server log names the file); retry later")
            }
            do { try await store.markNeedsAnalysis(relativePath: path, output: output) } catch {
                logger.error("could not mark a damaged output", metadata: ["path": "\(path)", "error": "\(error)"])
            }
            if missing {
                return APIError.notFound("the stored \(what) of \(path) are missing; the track is marked for re-analysis by the next scan")
            }
            let reason = StoredOutputError.reason(error).map { " (\($0))" } ?? ""
            return APIError(status: .internalServerError,
                            message: "the stored \(what) of \(path) are damaged\(reason); the track is marked for re-analysis by the next scan")
        }

        router.get("/health") { _, _ -> Response in
            let counts = try await store.counts()
            let maintenance = maintainer?.status()
            var answer: [String: Any] = [
                "status": "ok", "profile_count": counts.profiles, "vis_count": counts.vis, "failed": counts.failed,
                "vis_cache_size": await visSize.bytes(), "connected_clients": await hub.count,
                "analyzer": "\(NaviscanVersion.name) \(NaviscanVersion.version)", "library": library ?? "",
                "pending": await precompute.count + (maintenance?.pending ?? 0),
                "watching": maintenance?.watching ?? false,
                "scan_state": maintenance?.state ?? "off",
                "last_scan": maintenance?.lastScan.map { ISO8601DateFormatter().string(from: $0) } ?? NSNull(),
            ]
            if let error = maintenance?.lastScanError { answer["last_scan_error"] = error }
            return JSONBody.response(object: answer)
        }

        router.get("/smart-dj/profile") { request, _ -> Response in
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            guard let json = try await store.profiles(relativePaths: [path])[path] else {
                throw APIError.notFound("no profile for \(path)")
            }
            do { _ = try StoredProfile.read(Data(json.utf8)) } catch { throw await damaged(path, .profile, error) }
            return JSONBody.response(data: Data(json.utf8))
        }

        @Sendable func bulk(_ paths: [String]) async throws -> Response {
            guard paths.count <= 10_000 else { throw APIError.badRequest("at most 10,000 paths per request") }
            let valid = try paths.map { try RelativePath.validate($0) }
            var found = try await store.profiles(relativePaths: valid)
            // A stored profile that is not a valid profile is left out (listed as missing) and marked.
            for (path, json) in found where (try? StoredProfile.read(Data(json.utf8))) == nil {
                found[path] = nil
                _ = await damaged(path, .profile, StoredProfileError.notAProfile)
            }
            var body = Data("{\"missing\":".utf8)
            body += try JSONSerialization.data(withJSONObject: valid.filter { found[$0] == nil }, options: [.withoutEscapingSlashes])
            body += Data(",\"profiles\":{".utf8)
            for (i, path) in valid.filter({ found[$0] != nil }).enumerated() {
                if i > 0 { body += Data(",".utf8) }
                body += try JSONSerialization.data(withJSONObject: path, options: [.fragmentsAllowed, .withoutEscapingSlashes])
                body += Data(":".utf8) + Data(found[path]!.utf8)
            }
            body += Data("}}".utf8)
            return JSONBody.response(data: body)
        }
        router.get("/smart-dj/bulk-profiles") { request, _ -> Response in
            let values = request.uri.queryParameters.getAll("paths")
            guard !values.isEmpty else { throw APIError.badRequest("paths is required (comma-separated, repeated, or POST a JSON array)") }
            return try await bulk(values.flatMap { $0.split(separator: ",").map(String.init) })
        }
        router.post("/smart-dj/bulk-profiles") { request, _ -> Response in
            let body = try await request.body.collect(upTo: bulkBodyLimit)
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: body))
            guard let paths = (object as? [String]) ?? ((object as? [String: Any])?["paths"] as? [String]) else {
                throw APIError.badRequest("the body must be a JSON array of paths or {\"paths\": [...]}")
            }
            return try await bulk(paths)
        }

        router.get("/visualizer/frames") { request, context -> Response in
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            guard let record = try await store.track(relativePath: path), record.status == .ok, record.visFingerprint != nil else {
                throw APIError.notFound("no visualizer frames for \(path)")
            }
            let binary = request.uri.queryParameters.get("format") == "binary"
                || (request.headers[.accept]?.contains("application/octet-stream") ?? false)
            let frames: VisFrameFile
            let visPath = layout.visPath(key: record.key)
            do { frames = try VisFrameFile(path: visPath) } catch { throw await damaged(path, .visualizerFrames, error, files: [visPath]) }
            let etag = "\"\(record.key)-\(String(frames.byteCount, radix: 16))-\(String(Int64(frames.modificationTime * 1e6), radix: 16))\""
            if binary, let match = request.headers[.ifNoneMatch],
               match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) {
                return Response(status: .notModified, headers: [.eTag: etag])
            }
            // Every value is checked before the answer starts: a damaged file is an error answer,
            // never a 200 that breaks off or carries NaN.
            do { try validated.validate(frames) } catch { throw await damaged(path, .visualizerFrames, error) }
            let window = registry.window(context.channel)
            if binary {
                let total = frames.byteCount
                return Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: etag],
                                body: ResponseBody(contentLength: total) { writer in
                    var offset = 0
                    while offset < total {
                        // 64 kB at a time: with many concurrent answers, what waits in socket
                        // buffers stays small.
                        let bytes = try frames.readBytes(at: offset, maxCount: min(total - offset, 64 << 10))
                        await window?.reserve(bytes.count)
                        try await writer.write(ByteBuffer(bytes: bytes))
                        offset += bytes.count
                    }
                    try await writer.finish(nil)
                })
            }
            let prefix = try FramesJSON.prefix(relativePath: path, header: frames.header)
            // Streamed a chunk of frames at a time: memory per request does not grow with the track.
            return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: prefix))
                var text = [UInt8]()
                var first = 0
                while first < frames.frameCount {
                    text.removeAll(keepingCapacity: true)
                    let start = first
                    first += try frames.readFrames(from: start) { values in
                        FramesJSON.appendFrame(values, isFirst: start == 0 && text.isEmpty, to: &text)
                    }
                    await window?.reserve(text.count)
                    try await writer.write(ByteBuffer(bytes: text))
                }
                try await writer.write(ByteBuffer(bytes: FramesJSON.suffix))
                try await writer.finish(nil)
            })
        }

        router.get("/waveform") { request, _ -> Response in
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            let binsText = request.uri.queryParameters.get("bins") ?? "\(WaveformAPI.defaultBins)"
            guard let bins = Int(binsText), WaveformAPI.binRange.contains(bins) else {
                throw APIError.badRequest("bins must be a whole number from \(WaveformAPI.binRange.lowerBound) to \(WaveformAPI.binRange.upperBound), not '\(binsText)'")
            }
            guard let record = try await store.track(relativePath: path), record.status == .ok, record.profileFingerprint != nil else {
                throw APIError.notFound("no waveform for \(path)")
            }
            let datPath = layout.waveformPath(key: record.key)
            if request.uri.queryParameters.get("format") == "dat" {
                let bytes: Data, modified: Double
                do {
                    bytes = try Data(contentsOf: URL(fileURLWithPath: datPath))
                    modified = (try FileManager.default.attributesOfItem(atPath: datPath)[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                    _ = try WaveformFile.read(datPath: datPath)
                } catch { throw await damaged(path, .waveform, error, files: [datPath]) }
                let etag = "\"\(record.key)-w-\(String(bytes.count, radix: 16))-\(String(Int64(modified * 1e6), radix: 16))\""
                if let match = request.headers[.ifNoneMatch],
                   match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) {
                    return Response(status: .notModified, headers: [.eTag: etag])
                }
                return Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: etag],
                                body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            }
            let waveform: WaveformData
            let rmsPath = layout.waveformRMSPath(key: record.key)
            do { waveform = try WaveformFile.read(datPath: datPath, rmsPath: rmsPath) } catch {
                throw await damaged(path, .waveform, error, files: [datPath, rmsPath])
            }
            let (peak, rms) = waveform.resampled(bins: bins)
            func rounded(_ values: [Double]) -> [Double] { values.map { ($0 * 10_000).rounded() / 10_000 } }
            return JSONBody.response(object: [
                "relative_path": path, "duration": record.duration ?? waveform.duration, "bins": bins,
                "peak": rounded(peak), "rms": rounded(rms),
            ] as [String: Any])
        }

        router.get("/stream") { request, context -> Response in
            guard configuration.stream else { throw APIError.notFound("streaming is turned off on this server") }
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            guard let library else { throw APIError(status: .serviceUnavailable, message: "the library root is unknown; start the server with the library named") }
            let opened = try await Task.detached { try LibraryTrackFile.open(path, library: library) }.value
            return try AudioStream.response(opened: opened, request: request, window: registry.window(context.channel))
        }

        let web = try WebAssets.locate().map { try WebAssets(directory: $0) }
        if web == nil { logger.warning("the web page's files are not installed; / answers 503 (set NAVISCAN_WEB_DIR to Sources/NaviscanServer/Web/Assets, or reinstall)") }
        @Sendable func webAssets() throws -> WebAssets {
            guard let web else {
                throw APIError(status: .serviceUnavailable, message: "the web page's files are not installed (PREFIX/share/naviscan/web); reinstall naviscan, or set NAVISCAN_WEB_DIR")
            }
            return web
        }

        router.get("/") { _, _ -> Response in
            let web = try webAssets()
            let tracks = try await store.tracksWithTags()
            let counts = try await store.counts()
            let maintenance = maintainer?.status()
            let state = maintenance?.state ?? "off"
            let stateText = ["scanning": "scanning", "waiting": "changes seen; a scan starts once they settle", "idle": "up to date", "off": "not watching"]
            let storeBytes = (try? FileManager.default.attributesOfItem(atPath: layout.databasePath)[.size] as? Int64) ?? 0
            let failures = tracks.filter { $0.status == .failed }.map {
                ["path": $0.relativePath, "link": WebText.query($0.relativePath), "reason": $0.errorMessage ?? "failed"]
            }
            return web.page("library", [
                "library": library ?? configuration.dataDirectory, "analyzer": "\(NaviscanVersion.name) \(NaviscanVersion.version)",
                "track_count": tracks.count, "profile_count": counts.profiles, "vis_count": counts.vis, "failed_count": counts.failed,
                "pending": await precompute.count + (maintenance?.pending ?? 0),
                "disk_use": WebText.bytes(await visSize.bytes() + storeBytes), "scan_state": state, "scan_state_text": stateText[state] ?? state,
                "last_scan": maintenance?.lastScan.map(WebText.time) ?? "", "watching": maintenance?.watching ?? false,
                "has_failures": !failures.isEmpty, "failures": failures, "tracks": tracks.map(WebText.row),
            ])
        }

        router.get("/track") { request, _ -> Response in
            let web = try webAssets()
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            guard let record = try await store.track(relativePath: path) else { throw APIError.notFound("no track \(path) in the store") }
            var profile: [String: Any] = [:]
            if let json = record.profileJSON { profile = (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:] }
            return web.page("track", [
                "path": path, "link": WebText.query(path), "stream": configuration.stream,
                "failed": record.status == .failed ? (record.errorMessage ?? "failed") : false,
                "fields": WebText.profileFields(profile),
            ])
        }

        router.get("/static/{name}") { _, context -> Response in
            try webAssets().file(named: context.parameters.get("name") ?? "")
        }

        router.post("/visualizer/precompute") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            let path = try RelativePath.validate(object?["relative_path"] as? String)
            guard let library else { throw APIError(status: .serviceUnavailable, message: "the library root is unknown; start the server with the library named") }
            let file = try await Task.detached { try LibraryTrackFile.resolve(path, library: library) }.value
            if let record = try await store.track(relativePath: path),
               !precompute.freshness.needsAnalysis(file, record) {
                return JSONBody.response(status: .accepted, object: ["status": "unchanged", "relative_path": path])
            }
            switch await precompute.enqueue(file) {
            case .queued, .alreadyQueued:
                maintainer?.makeWayForPrecompute()
                return JSONBody.response(status: .accepted, object: ["status": "queued", "relative_path": path])
            case .full:
                throw APIError(status: .serviceUnavailable,
                               message: "the precompute queue is full (\(precompute.capacity) tracks); retry in a minute")
            }
        }

        router.get("/visualizer/precompute") { request, _ -> Response in
            let path = try RelativePath.validate(request.uri.queryParameters.get("relative_path"))
            var answer: [String: Any] = ["relative_path": path]
            if let state = await precompute.state(of: path) {
                answer["status"] = state.rawValue
            } else if let record = try await store.track(relativePath: path) {
                answer["status"] = record.status == .ok ? "done" : "failed"
                if let error = record.errorMessage { answer["error"] = error }
            } else {
                answer["status"] = "unknown"
            }
            return JSONBody.response(object: answer)
        }

        router.ws("/ws/push") { _, _ in
            .upgrade([:])
        } onUpgrade: { inbound, outbound, _ in
            let (id, events) = await hub.register()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Ends when the client closes; then the writer is cancelled too.
                    do { for try await _ in inbound.messages(maxSize: 1 << 16) {} } catch {}
                }
                group.addTask {
                    for await event in events { try? await outbound.write(.text(event)) }
                }
                await group.next()
                group.cancelAll()
            }
            await hub.unregister(id)
        }

        let limits = configuration.limits
        let webSocketResponder = router.buildResponder()
        let server = HTTPServerBuilder { responder in
            guarded(HTTP1WebSocketUpgradeChannel(
                        responder: responder, webSocketResponder: webSocketResponder,
                        configuration: .init(http1: .init(additionalChannelHandlers: [RequestActivityHandler()]))),
                    limits: limits, registry: registry)
        }
        var app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "naviscan",
                                 availableConnectionsDelegate: .maximum(maxConnections, logger: logger)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        app.addServices(StoreWatcher(store: store, hub: hub, interval: configuration.pollInterval, logger: logger))
        if let maintainer { app.addServices(maintainer) }
        return app
    }
}

/// Total size of the frame files, recomputed at most every 30 s (a walk of the vis/ folders).
actor VisCacheSize {
    let directory: String
    private var cached: (bytes: Int64, at: Date)?

    init(directory: String) { self.directory = directory }

    func bytes() async -> Int64 {
        if let cached, Date().timeIntervalSince(cached.at) < 30 { return cached.bytes }
        let directory = self.directory
        let total = await Task.detached { () -> Int64 in
            var sum: Int64 = 0
            let enumerator = FileManager.default.enumerator(at: URL(fileURLWithPath: directory), includingPropertiesForKeys: [.fileSizeKey])
            while let url = enumerator?.nextObject() as? URL {
                guard url.pathExtension == "vis" else { continue }
                sum += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
            }
            return sum
        }.value
        cached = (total, Date())
        return total
    }
}

/// `GET /waveform`: how many bins a client may ask for (WaveformKit draws 40–200 bars, SoundCloud 1,800).
enum WaveformAPI {
    static let binRange = 8...4096
    static let defaultBins = 200
}
