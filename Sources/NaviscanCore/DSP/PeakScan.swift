/// Largest absolute sample value of a run of samples.
///
/// It runs over every decoded sample of every channel. A float `max(peak, abs(x))` loop does not
/// vectorise (IEEE max is order-sensitive), but with the sign bit cleared a float's bit pattern
/// orders like a non-negative integer, and an integer max reduction does vectorise.
public enum PeakScan {
    public static func maxAbs(_ samples: UnsafePointer<Float>, count: Int) -> Float {
        let bits = UnsafeRawPointer(samples).assumingMemoryBound(to: Int32.self)
        var peak: Int32 = 0
        for i in 0..<count { peak = max(peak, bits[i] & 0x7FFF_FFFF) }
        // Infinity or NaN from a broken stream reads as the largest finite value, never as NaN.
        return Float(bitPattern: UInt32(min(peak, Int32(bitPattern: Float.greatestFiniteMagnitude.bitPattern))))
    }
}
