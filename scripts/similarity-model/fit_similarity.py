#!/usr/bin/env python3
"""Chooses the similarity model inside folds split by source and reports every variant held out.

Reads dump_bands.py's folder (manifest.json, per track the log band powers and the stored vector).
The protocol was fixed before any held-out figure was read:

- Each dev set's sources go into 3 folds (largest first, each to the fold with the fewest tracks);
  the two-soundtrack set has only 2 sources, so its tracks go into folds by index within each game.
- For every held-out fold k, every variant's free constants (below) are chosen by the mean over the
  dev sets of leave-one-out precision@5 on the other folds' tracks (each set apart: queries and
  candidates from one set); the chosen constants are then scored on fold k's tracks alone (their own
  library: candidates, normalisation and mutual proximity from the fold). Held-out figures are the
  means over the folds, weighted by queries.
- Queries: tracks whose label has another track among the candidates; 1-NN and p@5 as in
  0.5.9's scorer (the share of the 5 nearest with the query's label; labels with one track are
  candidates only). Hubness: skewness of the 5-occurrence over the candidates.

Model parts (docs/similarity.md):
- vector: the stored SonicFeatures, robust z-scores (median, 1.4826 MAD, floor, clip 4), per group
  the mean squared difference, weighed by group (timbre, shape, tonal, rhythm, dynamics).
- gauss: mean and full covariance (ridge 1e-3 x mean variance + 1e-4) of cepstral coefficients 1..K of the
  dumped log band powers, compared by the symmetrised Kullback-Leibler divergence.
- combined: D^2 = a * SKL / median(SKL) + (1 - a) * d_vec^2 / median(d_vec^2), medians over the library.
- mutual proximity (Schnitzer et al. 2012, Gaussian): s(x, y) = (1 - F_x(D)) (1 - F_y(D)), F_x the
  normal CDF of x's distances to the library; ranks by s instead of D.

Variants (free constants in brackets, chosen in folds):
  v059       the shipped 0.5.9 weights (1, 1, 0, 1/4, 0), no choice
  vector     [group weights in {0, 1/2, 1, 2}^3 x {0, 1/2}^2]
  gauss12    SKL, K = 12, full covariance         gauss12-diag  the same, diagonal covariance
  gauss19    SKL, K = 19
  combined   [K in {12, 19}, a in {1/4, 1/2, 3/4}, group weights as vector]
  combined12 the same with K = 12 (what the query's cost allows: --max-order)
  each also with mutual proximity (+mp).

`--ship` prints the constants chosen on all folds of all sets for the variant named, and writes the
parity fixture (--fixture) from a few tracks.
"""
import argparse
import itertools
import json
import math
import os
import sys

import numpy as np
from scipy.special import ndtr

GROUPS = [("timbre", 24), ("shape", 11), ("tonal", 3), ("rhythm", 3), ("dynamics", 2)]
BANDS = 24
RIDGE = 1e-3
# Added to every variance: a cepstral standard deviation of 0.01 (a fifth of a decibel of spectral
# shape) says nothing of timbre, and a held tone's near-zero variances would make every divergence
# from it enormous.
VARIANCE_FLOOR = 1e-4


def load(folder):
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    tracks = []
    for t in manifest["tracks"]:
        base = os.path.join(folder, t["id"] + ".f32")
        if not os.path.exists(base + ".json"):
            continue
        vector = json.load(open(base + ".json"))["features"]
        if vector is None:
            continue
        bands = np.fromfile(base, dtype="<f4").reshape(-1, BANDS).astype(np.float64)
        t = dict(t, vector=np.array(vector[:43], dtype=np.float64), stored=np.array(vector, dtype=np.float64), bands=bands)
        tracks.append(t)
    return tracks


def cepstra(bands, count):
    k = np.arange(1, count + 1)[:, None]
    b = np.arange(BANDS)[None, :]
    dct = np.cos(np.pi * k * (b + 0.5) / BANDS)
    return bands @ dct.T / BANDS


def gaussian(bands, count, diagonal=False):
    c = cepstra(bands, count)
    mean = c.mean(axis=0)
    cov = np.cov(c, rowvar=False, bias=True)
    if diagonal:
        cov = np.diag(np.diag(cov))
    cov = cov + (RIDGE * np.trace(cov) / count + VARIANCE_FLOOR) * np.eye(count)
    return mean, cov, np.linalg.inv(cov)


def skl_matrix(gs):
    """Symmetrised KL between every pair: 1/2 [tr(Si^-1 Sj) + tr(Sj^-1 Si) + d^T (Si^-1 + Sj^-1) d] - K."""
    means = np.array([g[0] for g in gs])
    covs = np.array([g[1] for g in gs])
    invs = np.array([g[2] for g in gs])
    k = means.shape[1]
    traces = np.einsum("iab,jab->ij", invs, covs)          # tr(Si^-1 Sj) (symmetric matrices)
    diff = means[:, None, :] - means[None, :, :]
    quad = np.einsum("ija,iab,ijb->ij", diff, invs, diff)
    d = 0.5 * (traces + traces.T + quad + quad.T) - k
    np.fill_diagonal(d, 0)
    return np.maximum(d, 0)


def robust_z(x):
    med = np.median(x, axis=0)
    scale = 1.4826 * np.median(np.abs(x - med), axis=0)
    scale = np.maximum(scale, 1e-3 * np.maximum(1, np.abs(med)))
    return np.clip((x - med) / scale, -4, 4)


def group_sq(vectors):
    """Per group, the mean squared difference of the z-scores between every pair (library = these rows)."""
    z = robust_z(vectors)
    out, start = [], 0
    for _, n in GROUPS:
        g = z[:, start:start + n]
        sq = (g * g).sum(1)
        out.append(np.maximum(sq[:, None] + sq[None, :] - 2 * g @ g.T, 0) / n)
        start += n
    return out


def median_offdiag(m):
    n = m.shape[0]
    return float(np.median(m[~np.eye(n, dtype=bool)])) if n > 1 else 1.0


MP_SAMPLE = 256


def proximity_sample(n):
    """The rows each track's distance statistics are measured against: min(n, 256), evenly spread."""
    count = min(n, MP_SAMPLE)
    return [k * n // count for k in range(count)]


def mutual_proximity(d):
    """Gaussian mutual proximity as a similarity: (1 - F_x(d)) (1 - F_y(d)), each track's F the
    normal distribution of its distances to the sample rows (itself left out)."""
    n = d.shape[0]
    sample = proximity_sample(n)
    sub = d[:, sample]
    own = np.zeros_like(sub, dtype=bool)
    for c, j in enumerate(sample):
        own[j, c] = True
    count = sub.shape[1] - own.sum(1)
    mu = np.where(own, 0, sub).sum(1) / count
    var = np.where(own, 0, sub * sub).sum(1) / count - mu * mu
    sd = np.sqrt(np.maximum(var, 1e-24))
    sx = ndtr(-(d - mu[:, None]) / sd[:, None])
    sy = ndtr(-(d - mu[None, :]) / sd[None, :])
    return sx * sy


def scores(rank_distance, labels, k=5):
    """p@5, 1-NN, queries, hubness (skewness of k-occurrence) for a distance-like matrix (smaller = nearer)."""
    n = len(labels)
    d = rank_distance.copy()
    np.fill_diagonal(d, np.inf)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    labels = np.array(labels)
    counts = {l: int((labels == l).sum()) for l in set(labels)}
    p5, nn, q = [], [], 0
    for i in range(n):
        if counts[labels[i]] < 2:
            continue
        q += 1
        hits = labels[order[i]] == labels[i]
        p5.append(hits[:k].mean())
        nn.append(float(hits[0]))
    occ = np.bincount(order[:, :k].ravel(), minlength=n).astype(float)
    skew = float(((occ - occ.mean()) ** 3).mean() / max(occ.std(), 1e-12) ** 3)
    return {"p5": float(np.mean(p5)) if p5 else float("nan"), "nn": float(np.mean(nn)) if nn else float("nan"),
            "queries": q, "hub": skew}


class Library:
    """One set's tracks restricted to some rows: everything a variant's distance needs, measured on them."""

    def __init__(self, tracks, gauss_cache):
        self.labels = [t["label"] for t in tracks]
        self.groups = group_sq(np.array([t["vector"] for t in tracks]))
        self.skl = {key: cache[np.ix_(idx, idx)] for key, (cache, idx) in
                    ((key, (gauss_cache[key], np.array([t["row"] for t in tracks]))) for key in gauss_cache)}

    def vector_sq(self, weights):
        return sum(w * g for w, g in zip(weights, self.groups) if w)


def distance(lib, variant, params):
    kind = variant.split("+")[0]
    if kind in ("v059", "vector"):
        d2 = lib.vector_sq(params["weights"])
    elif kind.startswith("gauss"):
        d2 = lib.skl[kind]
    else:
        skl = lib.skl[f"gauss{params['k']}"]  # combined, combined12
        v = lib.vector_sq(params["weights"])
        a = params["a"]
        d2 = a * skl / max(median_offdiag(skl), 1e-12) + (1 - a) * v / max(median_offdiag(v), 1e-12)
    d = np.sqrt(np.maximum(d2, 0))
    if variant.endswith("+mp"):
        return -mutual_proximity(d)
    return d


WEIGHT_GRID = [w for w in itertools.product([0, .5, 1, 2], [0, .5, 1, 2], [0, .5], [0, .5, 1, 2], [0, .5]) if any(w)]


def grid(variant):
    kind = variant.split("+")[0]
    if kind == "v059":
        return [{"weights": (1, 1, 0, .25, 0)}]
    if kind == "vector":
        return [{"weights": w} for w in WEIGHT_GRID]
    if kind.startswith("gauss"):
        return [{}]
    orders = (12,) if kind == "combined12" else (12, 19)
    return [{"k": k, "a": a, "weights": w} for k in orders for a in (.25, .5, .75) for w in WEIGHT_GRID]


def max_order(variant):
    """The largest Gaussian order a variant may ship with (0: none)."""
    kind = variant.split("+")[0]
    if kind.startswith("gauss"):
        return int(kind[5:7])
    return {"combined": 19, "combined12": 12}.get(kind, 0)


def folds_of(set_tracks, name, count=3):
    if name == "soundtracks":
        fold, seen = {}, {}
        for t in set_tracks:
            i = seen.get(t["label"], 0)
            seen[t["label"]] = i + 1
            fold[t["id"]] = i % count
        return fold
    sizes = {}
    for t in set_tracks:
        sizes[t["source"]] = sizes.get(t["source"], 0) + 1
    load_ = [0] * count
    of_source = {}
    for source in sorted(sizes, key=lambda s: (-sizes[s], s)):
        f = min(range(count), key=lambda i: (load_[i], i))
        of_source[source] = f
        load_[f] += sizes[source]
    return {t["id"]: of_source[t["source"]] for t in set_tracks}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dumps")
    p.add_argument("--variants", default="v059,vector,gauss12,gauss12-diag,gauss19,combined,combined12")
    p.add_argument("--max-order", type=int, default=12, help="--ship best: the largest Gaussian order the query cost allows")
    p.add_argument("--coarse", action="store_true", help="combined: a smaller weight grid (quick look at cost)")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--ship", help="the variant to ship; `best`: the best held-out p@5 averaged over the sets")
    p.add_argument("--write", action="store_true", help="with --ship: write the Swift constants and Fixtures/similarity/")
    args = p.parse_args()
    tracks = load(args.dumps)
    sets = sorted({t["set"] for t in tracks})
    by_set = {s: [t for t in tracks if t["set"] == s] for s in sets}
    caches = {}
    for s in sets:
        for row, t in enumerate(by_set[s]):
            t["row"] = row
        caches[s] = {
            "gauss12": skl_matrix([gaussian(t["bands"], 12) for t in by_set[s]]),
            "gauss12-diag": skl_matrix([gaussian(t["bands"], 12, diagonal=True) for t in by_set[s]]),
            "gauss19": skl_matrix([gaussian(t["bands"], 19) for t in by_set[s]]),
        }
        print(f"{s}: {len(by_set[s])} tracks, {len({t['label'] for t in by_set[s]})} labels", file=sys.stderr)
    folds = {s: folds_of(by_set[s], s) for s in sets}
    variants = [v for base in args.variants.split(",") for v in (base, base + "+mp")]
    results = {}
    for variant in variants:
        candidates = grid(variant)
        per_fold = []
        for k in range(3):
            train = {s: Library([t for t in by_set[s] if folds[s][t["id"]] != k], caches[s]) for s in sets}
            test = {s: Library([t for t in by_set[s] if folds[s][t["id"]] == k], caches[s]) for s in sets}
            best, best_score = None, -1
            for params in candidates:
                score = np.mean([scores(distance(train[s], variant, params), train[s].labels)["p5"] for s in sets])
                if score > best_score:
                    best, best_score = params, score
            held = {s: scores(distance(test[s], variant, best), test[s].labels) for s in sets}
            per_fold.append({"params": best, "train_p5": best_score, "held": held})
        summary = {}
        for s in sets:
            q = sum(f["held"][s]["queries"] for f in per_fold)
            summary[s] = {m: sum(f["held"][s][m] * f["held"][s]["queries"] for f in per_fold) / max(q, 1) for m in ("p5", "nn")}
            summary[s]["hub"] = float(np.mean([f["held"][s]["hub"] for f in per_fold]))
            summary[s]["queries"] = q
        summary["mean_p5"] = float(np.mean([summary[s]["p5"] for s in sets]))
        results[variant] = {"summary": summary, "folds": per_fold}
        line = "  ".join(f"{s} {summary[s]['p5']:.3f}/{summary[s]['nn']:.3f} h{summary[s]['hub']:.2f}" for s in sets)
        print(f"{variant:16s} mean p@5 {summary['mean_p5']:.3f}  {line}  chosen: {[f['params'] for f in per_fold]}", flush=True)
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1, default=str)
    if args.ship:
        ship(args, by_set, caches, sets, results)


def ship(args, by_set, caches, sets, results):
    """The shipped variant: its constants chosen on every track of every set, the whole sets' figures
    (in-sample for variants with constants), the generated Swift and the parity fixture."""
    variant = args.ship
    if variant == "best":
        # The rule: the best held-out p@5, averaged over the dev sets, of the variants that can meet
        # the query's cost limit (K = 19 reads 1.9 kB per track and query: 25-33 ms at 100,000
        # tracks on the 2-core VM, over the 20 ms limit; K = 12 reads 0.9 kB).
        affordable = [v for v in results if max_order(v) <= args.max_order]
        variant = max(affordable, key=lambda v: results[v]["summary"]["mean_p5"])
    whole = {s: Library(by_set[s], caches[s]) for s in sets}
    best, best_score = None, -1
    for params in grid(variant):
        score = np.mean([scores(distance(whole[s], variant, params), whole[s].labels)["p5"] for s in sets])
        if score > best_score:
            best, best_score = params, score
    figures = {s: scores(distance(whole[s], variant, best), whole[s].labels) for s in sets}
    print(f"shipped {variant}: constants {best}; whole sets: " + "  ".join(
        f"{s} {figures[s]['p5']:.3f}/{figures[s]['nn']:.3f} h{figures[s]['hub']:.2f}" for s in sets))
    kind = variant.split("+")[0]
    order = int(kind[5:7]) if kind.startswith("gauss") else best.get("k", 12)
    share = 1.0 if kind.startswith("gauss") else best.get("a", 0.0)
    weights = best.get("weights", (1, 1, 0, .25, 0))
    held = results.get(variant, {}).get("summary", {})
    commit = os.popen("git -C %s rev-parse --short HEAD 2>/dev/null" % os.path.dirname(os.path.abspath(__file__))).read().strip()
    lines = [
        "// Generated by scripts/similarity-model/fit_similarity.py --ship %s (`make similarity-model`); do not edit." % variant,
        "// Data: %s (%s); commit %s." % (os.path.basename(os.path.normpath(args.dumps)),
                                      ", ".join(f"{s} {len(by_set[s])}" for s in sets), commit or "unknown"),
        "// Held out (3 folds by source, mean p@5): %s." % (", ".join(f"{s} {held[s]['p5']:.3f}" for s in sets) if held else "not run"),
        "",
        "/// The similarity model's constants, chosen in folds by source (docs/similarity.md).",
        "public enum SimilarityModel {",
        "    /// The variant of scripts/similarity-model/fit_similarity.py these constants are.",
        "    public static let name = \"%s\"" % variant,
        "    /// Cepstral coefficients 1…timbreOrder make the timbre Gaussian.",
        "    public static let timbreOrder = %d" % order,
        "    /// a: the timbre Gaussians' share of the squared distance (the descriptors have 1 − a).",
        "    public static let timbreShare: Float = %r" % float(share),
        "    /// The descriptor groups' weights (also what the sonic path and the same-recording test read).",
        "    public static let groupWeights: [SonicFeatures.Group: Float] = [%s]" % ", ".join(
            f".{g}: {float(w)!r}" for (g, _), w in zip(GROUPS, weights)),
        "    /// Whether neighbours are ranked by mutual proximity.",
        "    public static let mutualProximity = %s" % ("true" if variant.endswith("+mp") else "false"),
        "}",
        "",
    ]
    if args.write:
        target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../Sources/NaviscanCore/Similarity/SimilarityModel+Shipped.swift")
        open(target, "w").write("\n".join(lines))
        write_fixture(args, by_set, order, share, weights, variant.endswith("+mp"))
    else:
        print("\n".join(lines))


def write_fixture(args, by_set, order, share, weights, mp):
    """Fixtures/similarity/: the log band powers of 8 tracks (120 spectra each, two per set) and what
    the Python twin makes of them: Gaussians (stored as Float16), divergences, distances, similarities."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../Fixtures/similarity")
    os.makedirs(root, exist_ok=True)
    chosen = []
    for s in sorted(by_set):
        tracks = by_set[s]
        chosen += [tracks[0], tracks[len(tracks) // 2]]
    frames = 120
    bands = np.concatenate([t["bands"][:frames] for t in chosen]).astype("<f4")
    bands.tofile(os.path.join(root, "bands.f32"))
    gauss = []
    for t in chosen:
        mean, cov, _ = gaussian(t["bands"][:frames].astype(np.float32).astype(np.float64), order)
        upper = cov[np.triu_indices(order)]
        stored = np.concatenate([mean, upper]).astype(np.float16).astype(np.float64)
        mean16 = stored[:order]
        cov16 = np.zeros((order, order))
        cov16[np.triu_indices(order)] = stored[order:]
        cov16 = cov16 + np.triu(cov16, 1).T
        gauss.append((stored, mean16, cov16, np.linalg.inv(cov16)))
    skl = skl_matrix([(g[1], g[2], g[3]) for g in gauss])
    # The whole model over these tracks as a library of their own: normalisation, distance, similarity.
    vectors = np.array([t["vector"] for t in chosen])
    med = np.median(vectors, axis=0)
    scale = np.maximum(1.4826 * np.median(np.abs(vectors - med), axis=0), 1e-3 * np.maximum(1, np.abs(med)))
    groups = group_sq(vectors)
    v = sum(w * g for w, g in zip(weights, groups))
    d2 = share * skl / median_offdiag(skl) + (1 - share) * v / median_offdiag(v)
    d = np.sqrt(np.maximum(d2, 0))
    similarity = mutual_proximity(d) if mp else 2 ** -(d / median_offdiag(d)) ** 2
    fixture = {
        "model": {"order": order, "share": share, "weights": list(weights), "mutual_proximity": mp, "ridge": RIDGE, "variance_floor": VARIANCE_FLOOR},
        "frames": frames, "bands": BANDS, "tracks": [t["id"] for t in chosen],
        "gaussians": [g[0].tolist() for g in gauss],
        "divergence": skl.tolist(),
        "descriptors": vectors.tolist(),
        "normalisation": {"median": med.tolist(), "scale": scale.tolist(), "descriptor_median": median_offdiag(v),
                          "divergence_median": median_offdiag(skl), "half_similar_distance": median_offdiag(d)},
        "distance": d.tolist(),
        "similarity": similarity.tolist(),
    }
    json.dump(fixture, open(os.path.join(root, "parity.json"), "w"), indent=1)
    print(f"wrote {root}/bands.f32 and parity.json ({len(chosen)} tracks)")


if __name__ == "__main__":
    main()
