import CFFTW
import Foundation

/// The process's real FFTW plans: one per size and direction, made on first use and shared by every
/// analyser and worker thread.
///
/// With a wisdom file (`useWisdom(file:)`, set by the CLI) the per-frame plans (visualizer, onsets)
/// are measured with FFTW_PATIENT, about 20 % faster to execute than FFTW_ESTIMATE. Measuring takes
/// about half a second per size,
/// once per machine: the result is saved to the wisdom file and later runs plan instantly. Without
/// one (tests, library users who do not opt in) plans are FFTW_ESTIMATE: free to make, deterministic.
///
/// Making plans is not thread-safe in FFTW, so it happens under `lock`; executing a plan on each
/// analyser's own buffers (the new-array interface) is, as long as the buffers are allocated by
/// FFTW (same SIMD alignment as the planning arrays).
public enum FFTPlanner {
    private static let lock = NSLock()
    public enum Direction: Sendable { case forward, inverse }
    private struct Key: Hashable {
        var size: Int
        var inverse: Bool
        var measured: Bool
    }
    nonisolated(unsafe) private static var plans: [Key: fftwf_plan] = [:]
    nonisolated(unsafe) private static var wisdomFile: String?
    nonisolated(unsafe) private static var wisdomImported = false

    /// Measure plans and keep the measurements in `file` (nil: estimated plans, nothing saved). Call
    /// before the first analysis; plans already made are kept.
    public static func useWisdom(file: String?) {
        lock.lock()
        defer { lock.unlock() }
        wisdomFile = file
        wisdomImported = false
    }

    /// A real-to-complex (forward) or complex-to-real (inverse, unnormalised) plan of `size` points,
    /// for `fftwf_execute_dft_r2c` / `_c2r` on FFTW-allocated buffers of `size` reals and `size / 2 + 1`
    /// complex values. `measured`: worth measuring (run per frame); otherwise always estimated.
    /// Inverse plans may overwrite their complex input.
    static func plan(size: Int, direction: Direction, measured: Bool = true) -> fftwf_plan {
        lock.lock()
        defer { lock.unlock() }
        let key = Key(size: size, inverse: direction == .inverse, measured: measured && wisdomFile != nil)
        if let plan = plans[key] { return plan }
        let real = fftwf_alloc_real(size)!
        let complex = fftwf_alloc_complex(size / 2 + 1)!
        defer {
            fftwf_free(real)
            fftwf_free(complex)
        }
        func make(_ flags: UInt32) -> fftwf_plan? {
            key.inverse ? fftwf_plan_dft_c2r_1d(Int32(size), complex, real, flags)
                        : fftwf_plan_dft_r2c_1d(Int32(size), real, complex, flags)
        }
        var plan: fftwf_plan?
        if key.measured, let file = wisdomFile {
            if !wisdomImported {
                wisdomImported = true
                _ = fftwf_import_wisdom_from_filename(file)
            }
            plan = make(UInt32(FFTW_PATIENT) | UInt32(FFTW_WISDOM_ONLY))
            if plan == nil {
                plan = make(UInt32(FFTW_PATIENT))
                saveWisdom(to: file)
            }
        }
        let made = plan ?? make(UInt32(FFTW_ESTIMATE))!
        plans[key] = made
        return made
    }

    /// Best effort, replaced atomically: an unwritable cache only costs the next run a re-measure.
    private static func saveWisdom(to file: String) {
        guard let text = fftwf_export_wisdom_to_string() else { return }
        defer { free(text) }
        let directory = (file as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: text, count: strlen(text)))
        try? AtomicFile.write(bytes, to: file)
    }
}
