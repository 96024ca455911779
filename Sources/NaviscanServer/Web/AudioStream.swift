import Foundation
import HTTPTypes
import Hummingbird
import NaviscanCore
import NaviscanLibrary

/// `GET /stream?relative_path=P`: the audio file itself, read-only, with single byte ranges (what
/// browsers send to seek). The path goes through LibraryTrackFile: lexical rules, no hidden files,
/// a regular audio file, and its real path inside the library's real path.
package enum AudioStream {
    /// What a browser's <audio> needs to pick a decoder.
    static func contentType(of relativePath: String) -> String {
        AudioFormat.named(by: relativePath)?.contentType ?? "application/octet-stream"
    }

    /// What a Range header asks of a file of `size` bytes.
    package enum Selection: Equatable {
        /// The whole file (no Range, a unit other than bytes, several ranges, or a malformed header).
        case whole
        case part(ClosedRange<Int64>)
        /// A range that starts past the end: 416.
        case unsatisfiable
    }

    package static func selection(range header: String?, size: Int64) -> Selection {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        // Several ranges would need multipart/byteranges; the whole file is a valid answer to them.
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int64(last), count >= 0 else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - count)...(size - 1))
        }
        guard let start = Int64(first), start >= 0 else { return .whole }
        let end: Int64
        if last.isEmpty {
            end = size - 1
        } else {
            guard let value = Int64(last), value >= start else { return .whole }
            end = min(value, size - 1)
        }
        return start < size ? .part(start...end) : .unsatisfiable
    }

    /// The answer is read from `opened`'s descriptor, never by name again.
    static func response(opened: OpenedTrackFile, request: Request, window: WriteWindow? = nil) throws -> Response {
        let file = opened.file
        let size = file.size
        var headers: HTTPFields = [.contentType: contentType(of: file.relativePath), .acceptRanges: "bytes"]
        headers[.lastModified] = Date(timeIntervalSince1970: file.mtime).httpDate
        switch selection(range: request.headers[.range], size: size) {
        case .unsatisfiable:
            var response = JSONBody.response(status: .rangeNotSatisfiable,
                                             ErrorAnswer(error: "the range \(request.headers[.range] ?? "") lies outside \(file.relativePath) (\(size) bytes)"))
            response.headers[.contentRange] = "bytes */\(size)"
            response.headers[.acceptRanges] = "bytes"
            return response
        case .whole:
            headers[.contentLength] = String(size)
            return Response(status: .ok, headers: headers, body: body(opened, 0..<size, window))
        case .part(let range):
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            headers[.contentLength] = String(range.count)
            return Response(status: .partialContent, headers: headers,
                            body: body(opened, range.lowerBound..<(range.upperBound + 1), window))
        }
    }

    /// The bytes `range` of the open file, 64 kB at a time. A file that shrinks while it is sent
    /// ends the answer early (the client sees a short body and retries), never with other bytes.
    private static func body(_ opened: OpenedTrackFile, _ range: Range<Int64>, _ window: WriteWindow?) -> ResponseBody {
        ResponseBody(contentLength: Int(range.count)) { writer in
            var offset = range.lowerBound
            var buffer = ByteBuffer()
            while offset < range.upperBound {
                let want = Int(min(range.upperBound - offset, 64 << 10))
                buffer.clear(minimumCapacity: want)
                let n = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { bytes in
                    let n = pread(opened.fd, bytes.baseAddress!, want, off_t(offset))
                    if n < 0 { throw APIError(status: .internalServerError, message: "cannot read \(opened.file.relativePath): \(String(cString: strerror(errno)))") }
                    return n
                }
                if n == 0 { throw APIError(status: .internalServerError, message: "\(opened.file.relativePath) became shorter while it was sent") }
                await window?.reserve(n)
                try await writer.write(buffer)
                offset += Int64(n)
            }
            try await writer.finish(nil)
        }
    }
}

extension Date {
    /// RFC 9110 IMF-fixdate, as Last-Modified carries it.
    var httpDate: String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: self)
    }
}
