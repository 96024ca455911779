import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP socket on loopback: what an abusive or minimal client sees, without a client
/// library's own timeouts and buffering in the way.
public final class RawSocket {
    public let fd: Int32
    private var buffered: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; `timeout` bounds the connect and every read.
    /// `receiveBuffer` sets SO_RCVBUF (a client that reads nothing then holds little in the kernel).
    public init(port: Int, timeout: Int = 20, receiveBuffer: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RawSocketError("connect: \(reason)")
        }
    }

    deinit { close(fd) }

    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawSocketError("send: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    /// Up to 64 kB; empty when the server closed the connection; throws on timeout.
    public func receive() throws -> [UInt8] {
        if !buffered.isEmpty { defer { buffered = [] }; return buffered }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else {
            let code = errno
            throw RawSocketError("recv: \(String(cString: strerror(code)))", code: code)
        }
        return Array(chunk[0..<n])
    }

    /// True when the server closes the connection before `timeout` seconds (what it sent meanwhile is ignored).
    public func closedByServer() -> Bool {
        while true {
            guard let bytes = try? receive() else { return false }
            if bytes.isEmpty { return true }
        }
    }

    public struct Response {
        public var status: Int
        public var headers: [String: String]
        /// Body bytes after de-chunking.
        public var bodyLength: Int
        public var body: [UInt8]
    }

    /// Sends one request and reads its answer. The body is kept up to `keep` bytes; `onBody` sees every byte.
    public func request(_ method: String, _ target: String, headers: [String: String] = [:], body: [UInt8] = [], keep: Int = 1 << 20,
                 onBody: ([UInt8]) -> Void = { _ in }) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        try send(head + "\r\n")
        if !body.isEmpty {
            // The server may answer (413) and stop reading before taking it all: sending stops as soon as
            // an answer can be read, instead of blocking until the send timeout.
            var sent = 0
            while sent < body.count {
                var ready = pollfd(fd: fd, events: Int16(POLLIN | POLLOUT), revents: 0)
                guard poll(&ready, 1, 20_000) > 0, ready.revents & Int16(POLLIN) == 0 else { break }
                let n = body[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min($0.count, 1 << 16), Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if n <= 0 && errno != EAGAIN { break }
                sent += max(n, 0)
            }
        }
        let headerText = try readHead()
        var lines = headerText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        var response = Response(status: Int(statusLine[1]) ?? 0, headers: [:], bodyLength: 0, body: [])
        for line in lines where line.contains(":") {
            let parts = line.split(separator: ":", maxSplits: 1)
            response.headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        func deliver(_ bytes: ArraySlice<UInt8>) {
            response.bodyLength += bytes.count
            if response.body.count < keep { response.body += bytes.prefix(keep - response.body.count) }
            onBody(Array(bytes))
        }
        if method == "HEAD" || response.status == 304 { return response }
        if response.headers["transfer-encoding"] == "chunked" {
            while true {
                let sizeLine = try readLine()
                let size = Int(sizeLine.split(separator: ";")[0], radix: 16) ?? 0
                if size == 0 { _ = try readLine(); break }
                var remaining = size
                while remaining > 0 {
                    let bytes = try take(upTo: remaining)
                    deliver(bytes[...])
                    remaining -= bytes.count
                }
                _ = try readLine()
            }
        } else if let length = Int(response.headers["content-length"] ?? "") {
            var remaining = length
            while remaining > 0 {
                let bytes = try take(upTo: remaining)
                deliver(bytes[...])
                remaining -= bytes.count
            }
        }
        return response
    }

    private func take(upTo count: Int) throws -> [UInt8] {
        if buffered.isEmpty { buffered = try receive() }
        guard !buffered.isEmpty else { throw RawSocketError("connection closed mid-answer") }
        let n = min(count, buffered.count)
        defer { buffered.removeFirst(n) }
        return Array(buffered[0..<n])
    }

    private func readLine() throws -> String {
        var line: [UInt8] = []
        while true {
            let byte = try take(upTo: 1)[0]
            if byte == UInt8(ascii: "\n") { break }
            if byte != UInt8(ascii: "\r") { line.append(byte) }
        }
        return String(decoding: line, as: UTF8.self)
    }

    private func readHead() throws -> String {
        var lines: [String] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            lines.append(line)
        }
        return lines.joined(separator: "\r\n")
    }
}

public struct RawSocketError: Error, CustomStringConvertible {
    public let description: String
    /// The system's errno, where a call failed.
    public var code: Int32 = 0
    public init(_ description: String, code: Int32 = 0) {
        self.description = description
        self.code = code
    }

    /// The socket's own receive timeout ran out (the peer neither sent nor closed).
    public var timedOut: Bool { code == EAGAIN || code == EWOULDBLOCK }
}

/// The real `naviscan serve` executable in a child process (built by `make test` before the suite),
/// optionally under a lower descriptor limit (`ulimit -n` in the shell that execs it).
/// Shared with the threads of a test (its port is set before the initialiser returns; Process is
/// safe to wait on and signal from any thread).
public final class ServerProcess: @unchecked Sendable {
    public let process = Process()
    public private(set) var port = 0
    private let log = LogCollector()

    public static var executable: String { NaviscanExecutable.path }

    public convenience init(data: String, descriptorLimit: Int? = nil) throws {
        try self.init(arguments: ["--data", data], descriptorLimit: descriptorLimit)
    }

    /// `naviscan serve ARGUMENTS --port 0`.
    public init(arguments: [String], descriptorLimit: Int? = nil) throws {
        let limit = descriptorLimit.map { "ulimit -n \($0) && " } ?? ""
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "\(limit)exec \"$0\" serve \"$@\" --port 0", Self.executable] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let log = self.log
        // Drained all the time: a full pipe would stop the server's logging, and with it the server.
        errors.fileHandleForReading.readabilityHandler = { log.append($0.availableData) }
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, process.isRunning {
            if let port = log.listeningPort() { self.port = port; return }
            usleep(50_000)
        }
        process.terminate()
        throw RawSocketError("naviscan serve did not start: \(log.text)")
    }

    deinit { stop() }

    public func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }

    public var isRunning: Bool { process.isRunning }
    public var output: String { log.text }

    /// VmRSS and VmHWM (peak) of the server, in bytes, from /proc.
    public func memory() throws -> (resident: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }
}

final class LogCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ more: Data) { lock.lock(); data += more; lock.unlock() }

    var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }

    func listeningPort() -> Int? {
        guard let range = text.range(of: "listening on http://") else { return nil }
        let address = text[range.upperBound...].prefix { !$0.isWhitespace }
        guard let colon = address.lastIndex(of: ":") else { return nil }
        return Int(address[address.index(after: colon)...])
    }
}

/// Raises this process's soft descriptor limit to its hard limit (a test that opens 1,100 sockets).
public func raiseOwnDescriptorLimit() {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}

/// A WebSocket client of /ws/push over `RawSocket` (RFC 6455: the upgrade, then the server's unmasked
/// frames): the text messages as they come, until the server closes or the reading task is cancelled.
public enum PushSocket {
    public static func messages(port: Int, path: String) -> AsyncThrowingStream<String, Error> {
        AsyncThrowingStream { continuation in
            // Read by the thread below alone; the termination handler only shuts its descriptor.
            nonisolated(unsafe) let socket: RawSocket
            do { socket = try RawSocket(port: port, timeout: 600) } catch { continuation.finish(throwing: error); return }
            // Cancelling the reader shuts the socket, which ends the blocking read below.
            let fd = socket.fd
            continuation.onTermination = { _ in shutdown(fd, Int32(SHUT_RDWR)) }
            Thread {
                do {
                    try socket.upgrade(path: path)
                    var text: [UInt8] = []
                    while let (final, opcode, payload) = try socket.readFrame() {
                        switch opcode {
                        case 0x1, 0x0:
                            text += payload
                            if final { continuation.yield(String(decoding: text, as: UTF8.self)); text = [] }
                        case 0x8: continuation.finish(); return
                        default: continue   // ping (the server's keep-alive) and binary frames are not ours to check
                        }
                    }
                    continuation.finish()
                } catch { continuation.finish(throwing: error) }
            }.start()
        }
    }
}

extension RawSocket {
    /// The opening handshake; throws unless the server answers 101.
    public func upgrade(path: String) throws {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let head = try readHead()
        guard head.hasPrefix("HTTP/1.1 101") else { throw RawSocketError("no WebSocket upgrade: \(head)") }
    }

    /// One frame: FIN, opcode and payload; nil when the connection ends.
    public func readFrame() throws -> (final: Bool, opcode: UInt8, payload: [UInt8])? {
        guard let first = try? take(upTo: 1)[0] else { return nil }
        let second = try take(upTo: 1)[0]
        var length = Int(second & 0x7F)
        if length >= 126 {
            let width = length == 126 ? 2 : 8
            length = 0
            for _ in 0..<width { length = length << 8 | Int(try take(upTo: 1)[0]) }
        }
        let mask = second & 0x80 != 0 ? try exactly(4) : []
        var payload = try exactly(length)
        if !mask.isEmpty { for i in payload.indices { payload[i] ^= mask[i % 4] } }
        return (first & 0x80 != 0, first & 0x0F, payload)
    }

    private func exactly(_ count: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count { bytes += try take(upTo: count - bytes.count) }
        return bytes
    }
}
