import CSyn123

/// Sample-rate conversion of interleaved frames (mono unless told). Mono streams — the analysis
/// stream every source that is not at 44.1 kHz goes through — use `PolyphaseResampler` (a vectorised
/// windowed-sinc FIR, about a tenth of libsyn123's cost per sample, no delay). Several channels (loudness
/// below 8 kHz) and ratios with too many phases to tabulate go through libsyn123 (IIR low-pass +
/// interpolation, a delay of about 3 samples) in its "dirty" mode: 72 dB of stop-band attenuation,
/// ample for a 60 dB display range and for onset detection. Equal rates pass through.
public final class Resampler {
    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    private var handle: OpaquePointer?
    private let polyphase: PolyphaseResampler?
    private let output: UnsafeMutablePointer<Float>
    private let maxInputChunk: Int

    public init(inputRate: Int, outputRate: Int, maxInputFrames: Int, channels: Int = 1) throws {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        polyphase = inputRate != outputRate && channels == 1
            ? PolyphaseResampler(inputRate: inputRate, outputRate: outputRate, maxInputFrames: maxInputFrames) : nil
        if inputRate == outputRate || polyphase != nil {
            maxInputChunk = maxInputFrames
            output = .allocate(capacity: 1)
            return
        }
        guard inputRate > 0, outputRate > 0, inputRate <= syn123_resample_maxrate(),
              outputRate <= syn123_resample_maxrate() else {
            throw ResamplerError.unsupportedRates(inputRate, outputRate)
        }
        var err: Int32 = 0
        guard let sh = syn123_new(inputRate, Int32(channels), Int32(naviscan_syn123_float32), 0, &err),
              syn123_setup_resample(sh, inputRate, outputRate, Int32(channels), 1, 0) == 0 else {
            throw ResamplerError.setupFailed(inputRate, outputRate, Int(err))
        }
        handle = sh
        let maxIn = syn123_resample_maxincount(inputRate, outputRate)
        maxInputChunk = max(1, min(maxInputFrames, maxIn))
        output = .allocate(capacity: (syn123_resample_count(inputRate, outputRate, maxInputChunk) + 16) * channels)
    }

    deinit {
        if let handle { syn123_del(handle) }
        output.deallocate()
    }

    /// Resamples `input` (interleaved frames) and hands the output to `body` in one or more chunks (more than one only
    /// when `input` exceeds what syn123 takes at once).
    public func process(_ input: UnsafeBufferPointer<Float>, _ body: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        let frames = input.count / channels
        if let polyphase {
            var offset = 0
            while offset < frames {
                let n = min(maxInputChunk, frames - offset)
                try polyphase.process(UnsafeBufferPointer(rebasing: input[offset..<(offset + n)]), body)
                offset += n
            }
            return
        }
        guard let handle else {
            try body(input)
            return
        }
        var offset = 0
        while offset < frames {
            let n = min(maxInputChunk, frames - offset)
            let produced = syn123_resample(handle, output, UnsafeMutablePointer(mutating: input.baseAddress! + offset * channels), n)
            if produced > 0 { try body(UnsafeBufferPointer(start: output, count: produced * channels)) }
            offset += n
        }
    }
}

public enum ResamplerError: Error, CustomStringConvertible {
    case unsupportedRates(Int, Int)
    case setupFailed(Int, Int, Int)

    public var description: String {
        switch self {
        case .unsupportedRates(let a, let b): return "cannot resample from \(a) Hz to \(b) Hz"
        case .setupFailed(let a, let b, let code): return "libsyn123 could not set up resampling \(a) → \(b) Hz (error \(code))"
        }
    }
}
