"""The onset front end's twin: onset-band dumps -> region fluxes -> emphasis -> autocorrelation ->
tempo candidates and their autocorrelation features, as Sources/NaviscanCore/Tempo computes them
(OnsetEnvelope, OnsetPeriodicity, TempoEstimator). Keep them in step: the parity test compares them.
"""
import numpy as np

FR = 22050 / 221                         # envelope frames per second (221-sample hop at 22.05 kHz)
NBANDS = 37                              # the nominal 40 bands (30 Hz-16 kHz) below 0.455 x 22.05 kHz
MAXLAG = int(FR * 60 / 40 * 4) + 2       # four beats at 40 BPM
BANDS = ['all', 'low', 'mid', 'high']    # full = low + mid + high; band index splits 12 and 27
MULTS = (0.5, 1, 2, 3, 4)                # lags in beats
RATIOS = (1/4, 1/3, 1/2, 2/3, 3/4, 1, 4/3, 3/2, 2, 3, 4)


def load(path):
    """Region fluxes of a dump: little-endian Float32 (`--dump-onset-bands`) or, for a path ending in
    .f16, Float16 (the committed parity fixtures)."""
    dtype = '<f2' if path.endswith('.f16') else '<f4'
    L = np.fromfile(path, dtype=dtype).reshape(-1, NBANDS).astype(np.float64)
    return fluxes(L)


def fluxes(L):
    prev = np.maximum(np.vstack([L[:1], L[:-1]]), np.vstack([L[:1], L[:1], L[:-2]]))
    d = np.maximum(0, L - prev)[1:]      # rise against the louder of the two previous hops
    low, mid, high = d[:, :12].sum(1), d[:, 12:27].sum(1), d[:, 27:].sum(1)
    return {'all': low + mid + high, 'low': low, 'mid': mid, 'high': high}

def emph(e):
    k = int(FR * 0.5); c = np.concatenate([[0], np.cumsum(e)]); n = len(e); i = np.arange(n)
    lo = np.maximum(0, i - k); hi = np.minimum(n, i + k + 1)
    return np.maximum(0, e - (c[hi] - c[lo]) / (hi - lo))


def acf(x, maxlag=MAXLAG):
    # StreamingAutocorrelation's rule: a region whose variance is at most 1e-12 * max(1, mean^2) is
    # constant (nil in the Swift, whose features are then 0): a near-silent band's rounding dust
    # (variance ~1e-13 in a -45 dBFS pad's high band) has no periodicity to offer
    mean = x.mean()
    if not np.mean((x - mean) ** 2) > 1e-12 * max(1.0, mean * mean):
        return np.zeros(maxlag + 1)
    x = x - mean; n = len(x); f = np.fft.rfft(x, 2 * n)
    r = np.fft.irfft(f * np.conj(f))[:maxlag + 1] / np.arange(n, n - maxlag - 1, -1)
    return r / r[0] if r[0] > 0 else r


def at(r, l):
    i = int(l); f = l - i
    return r[i] * (1 - f) + r[i + 1] * f if i + 1 < len(r) else 0.0


def salience(r, t):
    tau = FR * 60 / t
    return sum(at(r, tau * k) / k for k in range(1, 5) if tau * k < len(r) - 1)


def refine(r, t):
    best, bs = t, salience(r, t)
    for u in np.arange(t * 0.97, t * 1.03, 0.05):
        s = salience(r, u)
        if s > bs: bs, best = s, u
    return best


def features(R, t):
    tau = FR * 60 / t; x = np.log2(t / 110)
    return np.array([at(R[k], tau * m) for k in BANDS for m in MULTS] + [x, x * x])


def candidates(R):
    grid = np.arange(40, 250, 0.5); s = np.array([salience(R['all'], t) for t in grid]); seed = grid[s.argmax()]
    cs = []
    for q in RATIOS:
        if 57 <= seed * q <= 205:
            t = refine(R['all'], seed * q)
            if all(abs(t - c) / c > 0.03 for c in cs): cs.append(t)
    return cs


ACF_NAMES = [f'acf.{region}.{m:g}' for region in ('full', 'low', 'mid', 'high') for m in MULTS]
