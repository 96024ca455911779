import Foundation

/// The waveform on disk: a BBC audiowaveform `.dat` file, format version 2 (what peaks.js and
/// wavesurfer.js read), and beside it a `.rms` sidecar with the RMS of the same points.
///
/// `.dat` (little-endian): int32 version = 2, uint32 flags (bit 0: 1 = 8-bit, 0 = 16-bit), int32
/// sample rate, int32 samples per point, uint32 length (points), int32 channels; then for each point,
/// for each channel, int8/int16 min then max. A sample x in [−1, 1] is stored as round(x × 127)
/// (8-bit) or round(x × 32767) (16-bit), clamped.
///
/// `.rms` (little-endian): "NWRM", uint32 version = 1, then int32 sample rate, int32 samples per
/// point, uint32 length, int32 channels, uint32 bits (8 or 16); then for each point, for each
/// channel, the RMS as uint8 round(r × 255) or uint16 round(r × 65535).
public enum WaveformFile {
    public static let datVersion: Int32 = 2
    public static let rmsVersion: UInt32 = 1
    static let rmsMagic = Array("NWRM".utf8)

    public static func datBytes(_ data: WaveformData, bits: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(24 + data.minima.count * 2 * bits / 8)
        append(datVersion, to: &out)
        append(UInt32(bits == 8 ? 1 : 0), to: &out)
        append(Int32(data.sampleRate), to: &out)
        append(Int32(data.samplesPerPoint), to: &out)
        append(UInt32(data.pointCount), to: &out)
        append(Int32(data.lanes), to: &out)
        for k in data.minima.indices {
            if bits == 8 {
                out.append(UInt8(bitPattern: Int8(quantize(data.minima[k], scale: 127, low: -128, high: 127))))
                out.append(UInt8(bitPattern: Int8(quantize(data.maxima[k], scale: 127, low: -128, high: 127))))
            } else {
                append(Int16(quantize(data.minima[k], scale: 32767, low: -32768, high: 32767)), to: &out)
                append(Int16(quantize(data.maxima[k], scale: 32767, low: -32768, high: 32767)), to: &out)
            }
        }
        return out
    }

    public static func rmsBytes(_ data: WaveformData, bits: Int) -> [UInt8] {
        var out = rmsMagic
        out.reserveCapacity(28 + data.rms.count * bits / 8)
        append(rmsVersion, to: &out)
        append(Int32(data.sampleRate), to: &out)
        append(Int32(data.samplesPerPoint), to: &out)
        append(UInt32(data.pointCount), to: &out)
        append(Int32(data.lanes), to: &out)
        append(UInt32(bits), to: &out)
        for r in data.rms {
            if bits == 8 { out.append(UInt8(quantize(r, scale: 255, low: 0, high: 255))) } else { append(UInt16(quantize(r, scale: 65535, low: 0, high: 65535)), to: &out) }
        }
        return out
    }

    /// Clamped before the conversion: a sample beyond full scale (or one no gate caught) saturates.
    static func quantize(_ x: Float, scale: Float, low: Int, high: Int) -> Int {
        min(high, max(low, Int(saturating: (x * scale).rounded())))
    }

    /// Writes both files under temporary names, synced (per `durability`) and renamed.
    public static func write(_ data: WaveformData, bits: Int, datPath: String, rmsPath: String, durability: AtomicFile.Durability) throws {
        for (path, bytes) in [(datPath, datBytes(data, bits: bits)), (rmsPath, rmsBytes(data, bits: bits))] {
            try AtomicFile.write(bytes, to: path, durability: durability)
        }
    }

    /// Reads a `.dat` file (and its `.rms` sidecar, when `rmsPath` is given) back as values in
    /// [−1, 1] (RMS in [0, 1]). Rejects other versions, impossible headers and short files.
    public static func read(datPath: String, rmsPath: String? = nil) throws -> WaveformData {
        func fail(_ path: String, _ why: String) -> WaveformError { .notAWaveform(path: path, reason: why) }
        let dat: [UInt8]
        do { dat = [UInt8](try Data(contentsOf: URL(fileURLWithPath: datPath))) } catch { throw WaveformError.unreadable(path: datPath, reason: "\(error.localizedDescription)") }
        guard dat.count >= 24 else { throw fail(datPath, "shorter than its header") }
        guard int32(dat, 0) == datVersion else { throw fail(datPath, "version \(int32(dat, 0)), expected 2") }
        let eightBit = uint32(dat, 4) & 1 == 1
        let rate = Int(int32(dat, 8)), spp = Int(int32(dat, 12)), length = Int(uint32(dat, 16)), lanes = Int(int32(dat, 20))
        guard rate > 0, spp > 0, (1...64).contains(lanes) else { throw fail(datPath, "impossible header") }
        let width = eightBit ? 1 : 2
        guard dat.count == 24 + length * lanes * 2 * width else { throw fail(datPath, "\(dat.count) bytes, the header says \(24 + length * lanes * 2 * width)") }
        var data = WaveformData(sampleRate: rate, samplesPerPoint: spp, lanes: lanes)
        let values = length * lanes
        data.minima.reserveCapacity(values)
        data.maxima.reserveCapacity(values)
        for k in 0..<values {
            if eightBit {
                data.minima.append(Float(Int8(bitPattern: dat[24 + 2 * k])) / 127)
                data.maxima.append(Float(Int8(bitPattern: dat[25 + 2 * k])) / 127)
            } else {
                data.minima.append(Float(Int16(bitPattern: UInt16(uint32(dat, 24 + 4 * k, bytes: 2)))) / 32767)
                data.maxima.append(Float(Int16(bitPattern: UInt16(uint32(dat, 26 + 4 * k, bytes: 2)))) / 32767)
            }
        }
        guard let rmsPath else { return data }
        let rms: [UInt8]
        do { rms = [UInt8](try Data(contentsOf: URL(fileURLWithPath: rmsPath))) } catch { throw WaveformError.unreadable(path: rmsPath, reason: "\(error.localizedDescription)") }
        guard rms.count >= 28, Array(rms[0..<4]) == rmsMagic else { throw fail(rmsPath, "not an RMS sidecar") }
        guard uint32(rms, 4) == rmsVersion else { throw fail(rmsPath, "version \(uint32(rms, 4)), expected 1") }
        guard Int(int32(rms, 8)) == rate, Int(int32(rms, 12)) == spp, Int(uint32(rms, 16)) == length, Int(int32(rms, 20)) == lanes else {
            throw fail(rmsPath, "does not match its .dat file")
        }
        let bits = Int(uint32(rms, 24))
        guard (bits == 8 || bits == 16), rms.count == 28 + values * bits / 8 else { throw fail(rmsPath, "wrong size") }
        data.rms.reserveCapacity(values)
        for k in 0..<values {
            data.rms.append(bits == 8 ? Float(rms[28 + k]) / 255 : Float(uint32(rms, 28 + 2 * k, bytes: 2)) / 65535)
        }
        return data
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func uint32(_ bytes: [UInt8], _ at: Int, bytes count: Int = 4) -> UInt32 {
        var v: UInt32 = 0
        for k in 0..<count { v |= UInt32(bytes[at + k]) << (8 * k) }
        return v
    }

    private static func int32(_ bytes: [UInt8], _ at: Int) -> Int32 { Int32(bitPattern: uint32(bytes, at)) }
}

extension WaveformData {
    /// `bins` values of peak (the largest |sample|) and RMS (power mean) in [0, 1], each over an
    /// equal share of the points and every lane; a bin narrower than a point repeats that point.
    public func resampled(bins: Int) -> (peak: [Double], rms: [Double]) {
        let points = pointCount
        guard points > 0, bins > 0 else { return ([Double](repeating: 0, count: max(0, bins)), [Double](repeating: 0, count: max(0, bins))) }
        var peak = [Double](), power = [Double]()
        peak.reserveCapacity(bins)
        power.reserveCapacity(bins)
        for bin in 0..<bins {
            let start = bin * points / bins
            let end = max(start + 1, (bin + 1) * points / bins)
            var p: Float = 0, sum = 0.0
            for k in (start * lanes)..<(end * lanes) {
                p = max(p, abs(minima[k]), abs(maxima[k]))
                if !rms.isEmpty { sum += Double(rms[k] * rms[k]) }
            }
            peak.append(Double(min(1, p)))
            power.append(min(1, (sum / Double((end - start) * lanes)).squareRoot()))
        }
        return (peak, power)
    }
}
