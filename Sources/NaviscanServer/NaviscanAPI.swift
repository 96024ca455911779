import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NaviscanCore
import NaviscanLibrary
import NIOCore
import NaviscanStore
import ServiceLifecycle

/// `naviscan serve`: the companion API, the visualizer's data, the audio and the web page over a
/// naviscan store. Each concern is a controller that registers its own routes:
///
///     AdminController       GET /health
///     CompanionController   GET /smart-dj/profile, GET|POST /smart-dj/bulk-profiles, GET /smart-dj/beats, WS /ws/push
///     VisualizerController  GET /visualizer/frames, GET /waveform, GET|POST /visualizer/precompute
///     StreamController      GET /stream
///     WebController         GET /, GET /track, GET /static/{name}
///
/// Rules for every route are middleware (the error shape and 405s from the route table, the request
/// log, CORS) or sit below the router (`ConnectionGuard`: timeouts, head limits, the write window).
public enum NaviscanAPI {
    /// How long SIGTERM or SIGINT waits for requests in flight before cancelling them: shutdown ends
    /// within seconds whatever the server is doing (a similarity build in progress is left behind).
    public static let shutdownGrace: Duration = .seconds(5)

    /// Runs `app` until SIGTERM or SIGINT, then shuts it down within `shutdownGrace` and the cancellation.
    public static func run(_ app: some ApplicationProtocol, logger: Logger) async throws {
        var configuration = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = shutdownGrace
        try await ServiceGroup(configuration: configuration).run()
    }

    /// Builds the application: services, controllers, middleware, the store watcher. Run it with `run(_:logger:)`.
    public static func makeApplication(configuration: ServerConfiguration, logger: Logger,
                                       onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let services = try makeServices(configuration: configuration, logger: logger)

        // HEAD answers every GET with the GET's headers and no body.
        let router = Router(context: NaviscanRequestContext.self, options: .autoGenerateHeadEndpoints)
        let table = RouteTable()
        // Middleware first: the router wraps each route with the middleware added before it.
        if let origin = configuration.corsOrigin {
            // First, so that a preflight OPTIONS is answered before routing.
            router.middlewares.add(CORSMiddleware(allowOrigin: origin == "*" ? .all : .custom(origin),
                                                  allowHeaders: [.accept, .contentType, .range, .ifNoneMatch],
                                                  allowMethods: [.get, .head, .post, .options],
                                                  exposedHeaders: ["Content-Range", "Accept-Ranges", "Content-Length", "ETag"]))
        }
        router.middlewares.add(RequestLogMiddleware())
        router.middlewares.add(JSONErrorMiddleware(routes: table))

        let routes = Routes(router: router, table: table, access: configuration.access, settingNames: configuration.settingNames, basePath: configuration.basePath, store: services.storeHandle,
                            limiter: RequestLimiter(limit: configuration.expensiveRequests))
        AdminController(services: services).addRoutes(to: routes)
        CompanionController(services: services).addRoutes(to: routes)
        VisualizerController(services: services).addRoutes(to: routes)
        StreamController(services: services).addRoutes(to: routes)
        WebController(services: services).addRoutes(to: routes)
        SimilarityController(services: services).addRoutes(to: routes)

        let limits = configuration.limits
        let maxConnections = limits.effectiveMaxConnections()
        let responder = BasePathResponder(basePath: configuration.basePath, inner: router.buildResponder())
        let webSocketResponder = responder
        let server = HTTPServerBuilder { responder in
            guarded(HTTP1WebSocketUpgradeChannel(
                        responder: responder, webSocketResponder: webSocketResponder,
                        configuration: .init(http1: .init(additionalChannelHandlers: [RequestActivityHandler()]))),
                    limits: limits, registry: services.connections)
        }
        var app = Application(
            responder: responder,
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "naviscan",
                                 availableConnectionsDelegate: .maximum(maxConnections, logger: logger)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        app.addServices(StoreWatcher(store: services.storeHandle, hub: services.hub, interval: configuration.pollInterval, logger: logger))
        if let maintainer = services.maintainer { app.addServices(maintainer) }
        return app
    }

    /// The store, the library, and the server's workers: what the controllers share.
    static func makeServices(configuration: ServerConfiguration, logger: Logger) throws -> ServerServices {
        let layout = OutputLayout(root: configuration.dataDirectory)
        var configuration = configuration
        let newStore = !FileManager.default.fileExists(atPath: layout.databasePath)
        if newStore {
            // A library never scanned: a new store, and its first scan in the background (even
            // with --no-watch); the server answers what it has meanwhile.
            guard configuration.library != nil else {
                throw LibraryError.store(path: layout.databasePath, reason: "no store here and no library named; name the library to analyse and serve, or serve the folder a scan wrote its results to")
            }
            if let reason = makeDirectories(layout.root) {
                throw LibraryError.store(path: layout.root, reason: "cannot create the store's folder (\(reason)); choose another data folder")
            }
            if configuration.maintenance == nil {
                var once = Maintenance()
                once.watch = false
                once.rescanInterval = nil
                configuration.maintenance = once
            }
            logger.notice("no store yet: created one; the first scan of the library runs in the background",
                          metadata: ["store": "\(layout.databasePath)", "library": "\(configuration.library ?? "")"])
        }
        let store = try LibraryStore(path: layout.databasePath)
        let storeHandle = StoreHandle(path: layout.databasePath, store: store, logger: logger)
        let library = try configuration.library ?? store.libraryIdentity().root
        let hub = PushHub()
        let processor = TrackProcessor(layout: layout, visualizer: configuration.visualizer, profile: configuration.profile,
                                       durability: .immediate, profileFileWriter: .processor, logger: logger)
        let precompute = PrecomputeQueue(processor: processor, store: storeHandle, hub: hub, workers: configuration.precomputeJobs,
                                         capacity: configuration.precomputeQueueCapacity, logger: logger)
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
            return LibraryMaintainer(options: options, settings: maintenance, precompute: precompute,
                                     storeAvailable: { storeHandle.unavailable == nil }, logger: logger)
        }
        let maxConnections = configuration.limits.effectiveMaxConnections()
        let connections = ConnectionRegistry(evictionThreshold: configuration.limits.evictionThreshold(maxConnections: maxConnections))
        let web = try WebAssets.locate().map { try WebAssets(directory: $0) }
        if web == nil { logger.warning("the web page's files are not installed; / answers 503 (set NAVISCAN_WEB_DIR to Sources/NaviscanServer/Web/Assets, or reinstall)") }
        let navidrome = try configuration.navidromeDatabase.map { try NavidromeDatabase(path: $0) }
        return ServerServices(configuration: configuration, layout: layout, storeHandle: storeHandle, library: library, hub: hub,
                              paths: TrackPaths(store: storeHandle, navidromeMusicFolder: configuration.navidromeMusicFolder,
                                                navidromeDatabase: navidrome, settingNames: configuration.settingNames),
                              precompute: precompute, maintainer: maintainer, visSize: VisCacheSize(directory: layout.visDirectory),
                              connections: connections, logger: logger, web: web)
    }

    /// `mkdir -p`; the reason in words when it fails.
    private static func makeDirectories(_ path: String) -> String? {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST { return "\(prefix): \(String(cString: strerror(errno)))" }
        }
        return nil
    }
}
