import Foundation

/// A track's beats, stored compactly: runs of beats at a constant interval (`segments`), so a steady
/// 3-hour mix is one segment and a tempo change or a drifting drummer adds one per run. Every tracked
/// beat lies within `BeatGrid.tolerance` of its segment's line. Bars: every `meter`-th beat from
/// `firstDownbeat`, when the meter is clear. Wire format: docs/profile-format.md ("Beat grid").
public struct BeatGrid: Codable, Sendable, Hashable {
    /// The beat-grid stage's version, also written in each grid: bump it when the grid's format or how
    /// beats and bars are tracked changes.
    public static let version = 1
    /// Largest distance of a tracked beat from its segment's line, seconds: well inside the ±70 ms a
    /// beat is judged by, and above the 10 ms hop the beats are tracked at.
    public static let tolerance = 0.02

    public struct Segment: Codable, Sendable, Hashable {
        /// The segment's first beat, seconds.
        public var start: Double
        /// Seconds per beat.
        public var interval: Double
        /// Beats in the segment: start + k·interval for k in 0..<count.
        public var count: Int

        public init(start: Double, interval: Double, count: Int) {
            self.start = start
            self.interval = interval
            self.count = count
        }
    }

    public var version: Int
    public var segments: [Segment]
    /// Beats per bar, nil where the bars are unclear.
    public var meter: Int?
    /// Index (among `beats`) of the first bar line; nil with `meter`.
    public var firstDownbeat: Int?
    /// How firmly the beats sit on the onsets, 0…1 (docs/profile-format.md).
    public var confidence: Double

    public init(segments: [Segment], meter: Int?, firstDownbeat: Int?, confidence: Double) {
        version = Self.version
        self.segments = segments
        self.meter = meter
        self.firstDownbeat = meter == nil ? nil : firstDownbeat
        self.confidence = confidence
    }

    /// No beats: beatless or silent material.
    public static let empty = BeatGrid(segments: [], meter: nil, firstDownbeat: nil, confidence: 0)

    public var beatCount: Int { segments.reduce(0) { $0 + $1.count } }
    public var firstBeat: Double? { segments.first?.start }
    /// The interval of constant-tempo material (one segment), for players that extrapolate.
    public var interval: Double? { segments.count == 1 ? segments[0].interval : nil }

    /// Every beat, seconds, increasing.
    public var beats: [Double] { Self.beats(of: segments) }

    /// The beats of `segments`, seconds to the millisecond.
    public static func beats(of segments: [Segment]) -> [Double] {
        var out: [Double] = []
        out.reserveCapacity(segments.reduce(0) { $0 + $1.count })
        for s in segments {
            for k in 0..<s.count { out.append(((s.start + Double(k) * s.interval) * 1000).rounded() / 1000) }
        }
        return out
    }

    /// The bar lines, seconds; empty where the meter is unclear.
    public var downbeats: [Double] {
        guard let meter, let firstDownbeat, meter > 0 else { return [] }
        let all = beats
        return stride(from: firstDownbeat, to: all.count, by: meter).map { all[$0] }
    }

    enum CodingKeys: String, CodingKey {
        case version, segments, meter, firstDownbeat = "first_downbeat", confidence
        case firstBeat = "first_beat", interval, beatCount = "beat_count"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        guard version == Self.version else {
            throw DecodingError.dataCorruptedError(forKey: .version, in: c,
                                                   debugDescription: "beat grid version \(version) is not \(Self.version): analyse the track again with this naviscan")
        }
        segments = try c.decode([Segment].self, forKey: .segments)
        meter = try c.decodeIfPresent(Int.self, forKey: .meter)
        firstDownbeat = try c.decodeIfPresent(Int.self, forKey: .firstDownbeat)
        confidence = try c.decode(Double.self, forKey: .confidence)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encodeOrNull(firstBeat, forKey: .firstBeat)
        try c.encodeOrNull(interval, forKey: .interval)
        try c.encode(beatCount, forKey: .beatCount)
        try c.encodeOrNull(meter, forKey: .meter)
        try c.encodeOrNull(firstDownbeat, forKey: .firstDownbeat)
        try c.encode(confidence, forKey: .confidence)
        try c.encode(segments, forKey: .segments)
    }

    /// The runs of `beats` (seconds, increasing) that lie within `tolerance` of a straight line
    /// (least squares), taken greedily from the start. A lone beat off the line, with the next two
    /// back on it, is put on the line rather than starting a new run (one in ten of a run at most):
    /// a fill or a flam the tracker followed, not a change of tempo.
    public static func segments(of beats: [Double], tolerance: Double = BeatGrid.tolerance) -> [Segment] {
        var out: [Segment] = []
        var i = 0
        while i < beats.count {
            var fit = LineFit()
            fit.add(0, beats[i])
            var members = [0]
            var end = i + 1                             // beats [i, end) are in the run
            var moved = 0
            while end < beats.count {
                let k = end - i
                var candidate = fit
                candidate.add(k, beats[end])
                let line = candidate.line
                if members.count < 2 || abs(line.at(k) - beats[end]) <= tolerance,
                   members.count % 16 != 0 || worst(beats, i, members + [k], line) <= tolerance {
                    fit = candidate
                    members.append(k)
                    end += 1
                    continue
                }
                let current = fit.line
                if members.count >= 4, end + 2 < beats.count, (moved + 1) * 10 <= members.count,
                   abs(current.at(k + 1) - beats[end + 1]) <= tolerance, abs(current.at(k + 2) - beats[end + 2]) <= tolerance {
                    moved += 1
                    end += 1
                    continue
                }
                break
            }
            // The run as a whole must hold; drop beats from its end until it does.
            while members.count > 2, worst(beats, i, members, fit.line) > tolerance {
                members.removeLast()
                fit = LineFit()
                for k in members { fit.add(k, beats[i + k]) }
            }
            let count = members.last! + 1
            let line = fit.line
            let interval = members.count >= 2 ? line.slope : (out.last?.interval ?? 0)
            out.append(Segment(start: ((members.count >= 2 ? line.at(0) : beats[i]) * 10_000).rounded() / 10_000,
                               interval: (interval * 10_000_000).rounded() / 10_000_000, count: count))
            i += count
        }
        return out
    }

    private struct Line {
        var intercept: Double
        var slope: Double
        func at(_ k: Int) -> Double { intercept + slope * Double(k) }
    }

    /// Running least-squares sums of (k, y).
    private struct LineFit {
        var n = 0.0, sk = 0.0, sy = 0.0, skk = 0.0, sky = 0.0
        mutating func add(_ k: Int, _ y: Double) {
            let x = Double(k)
            n += 1; sk += x; sy += y; skk += x * x; sky += x * y
        }
        var line: Line {
            let d = n * skk - sk * sk
            guard n >= 2, d > 0 else { return Line(intercept: n > 0 ? sy / n : 0, slope: 0) }
            let slope = (n * sky - sk * sy) / d
            return Line(intercept: (sy - slope * sk) / n, slope: slope)
        }
    }

    private static func worst(_ b: [Double], _ first: Int, _ members: [Int], _ line: Line) -> Double {
        var m = 0.0
        for k in members { m = max(m, abs(line.at(k) - b[first + k])) }
        return m
    }

    /// Runs that continue an earlier run across a stretch without a firm beat (a breakdown, a pad
    /// the tracker wandered through) become one run with it: a later run whose interval is within
    /// 1 % of an earlier one's and whose beats lie on that run's line (within `tolerance` at both
    /// ends of each, refitted through both), at most four runs later.
    public static func bridged(_ segments: [Segment], tolerance: Double = BeatGrid.tolerance) -> [Segment] {
        var out: [Segment] = []
        var i = 0
        while i < segments.count {
            var a = segments[i]
            var next = i + 1
            var j = i + 1
            while j < min(segments.count, next + 4) {
                let b = segments[j]
                guard a.interval > 0, a.count >= 4, b.count >= 4, abs(b.interval / a.interval - 1) <= 0.01 else { j += 1; continue }
                let k = Int(((b.start - a.start) / a.interval).rounded())
                let bEnd = b.start + Double(b.count - 1) * b.interval
                let total = k + b.count
                let interval = (bEnd - a.start) / Double(total - 1)
                let aEnd = a.start + Double(a.count - 1) * a.interval
                let holds = abs(a.start + Double(k) * interval - b.start) <= tolerance
                    && abs(a.start + Double(a.count - 1) * interval - aEnd) <= tolerance
                guard k >= a.count, holds else { j += 1; continue }
                a = Segment(start: a.start, interval: (interval * 10_000_000).rounded() / 10_000_000, count: total)
                j += 1
                next = j
            }
            out.append(a)
            i = next
        }
        return out
    }

    /// `segments` with the first run extended back to the sound's start and the last run on to its
    /// end, at their own intervals: a player's grid covers the intro and the outro the tracker found
    /// no onsets in (a pad, a breakdown, a fade).
    /// A first beat the least-squares line put a hair before 0 is dropped (no beat lies before the
    /// track).
    public static func extend(_ segments: [Segment], from soundStart: Double, to soundEnd: Double) -> [Segment] {
        var out = segments
        if var first = out.first, first.interval > 0 {
            let before = Int(((first.start - soundStart) / first.interval).rounded(.down))
            if before > 0 {
                first.start = ((first.start - Double(before) * first.interval) * 10_000).rounded() / 10_000
                first.count += before
                out[0] = first
            }
        }
        if var last = out.last, last.interval > 0 {
            let end = last.start + Double(last.count - 1) * last.interval
            let after = Int(((soundEnd - end) / last.interval).rounded(.down))
            if after > 0 {
                last.count += after
                out[out.count - 1] = last
            }
        }
        while var first = out.first, first.start < 0 {
            if first.count == 1 || first.interval <= 0 {
                out.removeFirst()
                continue
            }
            first.start = ((first.start + first.interval) * 10_000).rounded() / 10_000
            first.count -= 1
            out[0] = first
        }
        return out
    }
}
