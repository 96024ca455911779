#!/usr/bin/env python3
"""librosa_baseline.py OUTDIR [--out NEIGHBOURS.json] [-k 5] [-j 2] [--fresh] -- the MFCC baseline of issue 29.

For every track in OUTDIR/labels.json: librosa.load(sr=22050, mono=True), librosa.feature.mfcc(n_mfcc=20,
otherwise librosa's defaults), mean and standard deviation of each coefficient over the whole track
-> a 40-dim vector. The vectors are z-scored per dimension across the set; each track's k nearest
other tracks by Euclidean distance (leave-one-out; ties broken by path) are its neighbours.
Writes NEIGHBOURS.json ({query: [neighbours]}, paths relative to OUTDIR/library; default
OUTDIR/neighbours-librosa.json) and prints score.py's figures for it.

Features are cached in OUTDIR/work/librosa-mfcc.json by path, size and mtime (--fresh ignores the
cache). Extraction runs in a ProcessPoolExecutor with -j workers (default 2) at nice 19: a worker
that crashes or raises fails the run (BrokenProcessPool / the worker's exception), it never hangs.
Needs librosa (build.sh installs it into its venv).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMBA_NUM_THREADS'):
    os.environ.setdefault(_v, '1')  # one thread per worker: -j workers share 2 cores

N_MFCC = 20
SR = 22050


def features(path):
    import numpy as np
    import librosa
    y, sr = librosa.load(path, sr=SR, mono=True)
    m = librosa.feature.mfcc(y=y, sr=sr, n_mfcc=N_MFCC)
    return np.concatenate([m.mean(axis=1), m.std(axis=1)]).astype(float).tolist()


def key(path):
    st = os.stat(path)
    return [st.st_size, int(st.st_mtime)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('--out', help='NEIGHBOURS.json (default OUTDIR/neighbours-librosa.json)')
    ap.add_argument('-k', type=int, default=5)
    ap.add_argument('-j', '--jobs', type=int, default=2)
    ap.add_argument('--fresh', action='store_true', help='ignore the feature cache')
    a = ap.parse_args()
    try:
        os.nice(19 - os.nice(0))
    except OSError:
        pass
    out = os.path.abspath(a.outdir)
    labels = os.path.join(out, 'labels.json')
    tracks = json.load(open(labels))['tracks']
    paths = sorted(tracks)
    cache_path = os.path.join(out, 'work', 'librosa-mfcc.json')
    cache = {}
    if not a.fresh and os.path.exists(cache_path):
        c = json.load(open(cache_path))
        if c.get('settings') == {'sr': SR, 'n_mfcc': N_MFCC}:
            cache = c['features']
    todo = [p for p in paths if not (p in cache and cache[p]['key'] == key(os.path.join(out, p)))]
    t0 = time.time()
    if todo:
        import librosa
        pool = ProcessPoolExecutor(max_workers=a.jobs)
        futs = [(p, pool.submit(features, os.path.join(out, p))) for p in todo]
        try:
            for p, f in futs:
                cache[p] = {'key': key(os.path.join(out, p)), 'v': f.result()}
        except BrokenProcessPool as e:
            pool.shutdown(wait=True, cancel_futures=True)
            sys.exit(f'librosa_baseline: a worker died (killed, out of memory?) while extracting: {e}')
        except Exception as e:
            pool.shutdown(wait=True, cancel_futures=True)
            sys.exit(f'librosa_baseline: feature extraction failed on {p}: {type(e).__name__}: {e}')
        pool.shutdown(wait=True)
        os.makedirs(os.path.dirname(cache_path), exist_ok=True)
        with open(cache_path + '.tmp', 'w') as fh:
            json.dump({'settings': {'sr': SR, 'n_mfcc': N_MFCC}, 'librosa': librosa.__version__,
                       'features': {p: cache[p] for p in paths}}, fh)
        os.replace(cache_path + '.tmp', cache_path)
    t_feat = time.time() - t0
    print(f'features: {len(todo)} extracted, {len(paths) - len(todo)} cached, {t_feat:.1f}s', file=sys.stderr)

    import numpy as np
    X = np.array([cache[p]['v'] for p in paths], dtype=float)
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    D = np.sqrt(np.maximum(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2), 0.0))
    np.fill_diagonal(D, np.inf)  # leave one out
    rel = [p[len('library/'):] if p.startswith('library/') else p for p in paths]
    neigh = {}
    for i in range(len(paths)):
        order = np.lexsort((np.arange(len(paths)), D[i]))  # by distance, ties by path order
        neigh[rel[i]] = [rel[j] for j in order[:a.k] if j != i]
    dst = a.out or os.path.join(out, 'neighbours-librosa.json')
    with open(dst + '.tmp', 'w') as fh:
        json.dump(neigh, fh, indent=1)
        fh.write('\n')
    os.replace(dst + '.tmp', dst)
    print(f'wrote {dst} ({len(neigh)} queries, k={a.k}); total {time.time() - t0:.1f}s', file=sys.stderr)
    sys.stdout.flush()
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'score.py'),
                        labels, dst, '-k', str(a.k)])
    sys.exit(r.returncode)


if __name__ == '__main__':
    main()
