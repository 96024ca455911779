import Foundation
import Hummingbird
import NaviscanCore
import NaviscanLibrary
import NIOCore

/// The visualizer's data: frames, the seek-bar waveform, and analysis on request.
///
///     GET  /visualizer/frames?relative_path=P      (JSON; raw VisFrameBuffer with Accept: application/octet-stream or &format=binary)
///     GET  /waveform?relative_path=P&bins=N         (JSON peaks and RMS; &format=dat the audiowaveform file)
///     POST /visualizer/precompute {"relative_path": P}   (GET …?relative_path=P: its state)
struct VisualizerController {
    let services: ServerServices
    /// Frame files checked once per file version, not once per request.
    let validated = ValidatedFrames()

    func addRoutes(to routes: Routes) {
        routes.get("/visualizer/frames", access: .companion) { request, context in try await frames(request, context) }
        routes.get("/waveform", access: .companion) { request, _ in try await waveform(request) }
        routes.post("/visualizer/precompute", access: .restricted) { request, _ in try await precompute(request) }
        routes.get("/visualizer/precompute", access: .companion) { request, _ in try await precomputeState(request) }
    }

    private func frames(_ request: Request, _ context: NaviscanRequestContext) async throws -> Response {
        let path = try await services.paths.resolve(QueryValues(request))
        guard let record = try await services.store.track(relativePath: path), record.status == .ok, record.visFingerprint != nil else {
            throw APIError.notFound("no visualizer frames for \(path)")
        }
        let binary = request.uri.queryParameters.get("format") == "binary"
            || (request.headers[.accept]?.contains("application/octet-stream") ?? false)
        // Read by this request alone: first here, then by its response body's writer, never both at once.
        nonisolated(unsafe) let frames: VisFrameFile
        let visPath = services.layout.visPath(key: record.key)
        do { frames = try VisFrameFile(path: visPath) } catch { throw await services.damaged(path, .visualizerFrames, error, files: [visPath]) }
        let etag = "\"\(record.key)-\(String(frames.byteCount, radix: 16))-\(String(Int64(frames.modificationTime * 1e6), radix: 16))\""
        if binary, Self.matches(request, etag) { return Response(status: .notModified, headers: [.eTag: etag]) }
        // Every value is checked before the answer starts: a damaged file is an error answer,
        // never a 200 that breaks off or carries NaN.
        do { try validated.validate(frames) } catch { throw await services.damaged(path, .visualizerFrames, error) }
        let window = services.connections.window(context.channel)
        if binary {
            let total = frames.byteCount
            return Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: etag],
                            body: ResponseBody(contentLength: total) { writer in
                var offset = 0
                while offset < total {
                    // 64 kB at a time: with many concurrent answers, what waits in socket buffers stays small.
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

    private func waveform(_ request: Request) async throws -> Response {
        let path = try await services.paths.resolve(QueryValues(request))
        let binsText = request.uri.queryParameters.get("bins") ?? "\(WaveformAPI.defaultBins)"
        guard let bins = Int(binsText), WaveformAPI.binRange.contains(bins) else {
            throw APIError.badRequest("bins must be a whole number from \(WaveformAPI.binRange.lowerBound) to \(WaveformAPI.binRange.upperBound), not '\(binsText)'")
        }
        guard let record = try await services.store.track(relativePath: path), record.status == .ok, record.profileFingerprint != nil else {
            throw APIError.notFound("no waveform for \(path)")
        }
        let datPath = services.layout.waveformPath(key: record.key)
        if request.uri.queryParameters.get("format") == "dat" {
            let bytes: Data, modified: Double
            do {
                bytes = try Data(contentsOf: URL(fileURLWithPath: datPath))
                modified = (try FileManager.default.attributesOfItem(atPath: datPath)[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                _ = try WaveformFile.read(datPath: datPath)
            } catch { throw await services.damaged(path, .waveform, error, files: [datPath]) }
            let etag = "\"\(record.key)-w-\(String(bytes.count, radix: 16))-\(String(Int64(modified * 1e6), radix: 16))\""
            if Self.matches(request, etag) { return Response(status: .notModified, headers: [.eTag: etag]) }
            return Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: etag],
                            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        let waveform: WaveformData
        let rmsPath = services.layout.waveformRMSPath(key: record.key)
        do { waveform = try WaveformFile.read(datPath: datPath, rmsPath: rmsPath) } catch {
            throw await services.damaged(path, .waveform, error, files: [datPath, rmsPath])
        }
        let (peak, rms) = waveform.resampled(bins: bins)
        return JSONBody.response(WaveformAnswer(relativePath: path, duration: record.duration ?? waveform.duration, peak: peak, rms: rms))
    }

    private func precompute(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 16)
        let asked = try? JSONDecoder().decode(PrecomputeRequest.self, from: Data(buffer: body))
        let path = try await services.paths.resolve(asked?.relativePath)
        guard let library = services.library else {
            throw APIError(status: .serviceUnavailable, message: "the library root is unknown; start the server with the library named")
        }
        let file = try await Task.detached { try LibraryTrackFile.resolve(path, library: library) }.value
        let queue = services.precompute
        if let record = try await services.store.track(relativePath: path), !queue.freshness.needsAnalysis(file, record) {
            return JSONBody.response(status: .accepted, PrecomputeAnswer(status: "unchanged", relativePath: path))
        }
        switch await queue.enqueue(file) {
        case .queued, .alreadyQueued:
            services.maintainer?.makeWayForPrecompute()
            return JSONBody.response(status: .accepted, PrecomputeAnswer(status: "queued", relativePath: path))
        case .full:
            throw APIError(status: .serviceUnavailable, message: "the precompute queue is full (\(queue.capacity) tracks); retry in a minute")
        }
    }

    private func precomputeState(_ request: Request) async throws -> Response {
        let path = try await services.paths.resolve(QueryValues(request))
        if let state = await services.precompute.state(of: path) {
            return JSONBody.response(PrecomputeAnswer(status: state.rawValue, relativePath: path))
        } else if let record = try await services.store.track(relativePath: path) {
            return JSONBody.response(PrecomputeAnswer(status: record.status == .ok ? "done" : "failed", relativePath: path, error: record.errorMessage))
        }
        return JSONBody.response(PrecomputeAnswer(status: "unknown", relativePath: path))
    }

    /// The request's If-None-Match names `etag`.
    static func matches(_ request: Request, _ etag: String) -> Bool {
        guard let match = request.headers[.ifNoneMatch] else { return false }
        return match.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == etag }
    }
}

/// `GET /waveform`: how many bins a client may ask for (WaveformKit draws 40–200 bars, SoundCloud 1,800).
enum WaveformAPI {
    static let binRange = 8...4096
    static let defaultBins = 200
}
