"""The tempo model's protocol: fit inside folds split by source, report every variant held out, ship the
one the inner folds choose, write the model file.

  python3 -m tempomodel.cv --data DATA --cache CACHE --naviscan BIN [--subset small] [--write-model FILE]
                           [--report OUT.md] [--json OUT.json]

Fixed before any held-out figure was read (docs/tempo-model.md):
  * features: model.FEATURES (beat features of each candidate's DP beats, the regions' autocorrelation at
    1/2..4 beats, x and x2) and `sixth` on top; the model class: a ridge conditional logit over a track's
    candidates, the mean of the fits at ridge strengths 0.3, 3, 30; `sixth` fitted the same way with the
    others held; labels: candidates within 4 % of the truth folded into 60-200 BPM.
  * "no tempo": the slow-onset and steady-pulse lines just above the training set's most beat-like
    beatless clip (rounded up to 0.01); r (on-beat ratio at the winner) below the line data.threshold()
    draws between the training set's beatless clips and its tracks with a tempo that neither of the
    other two rules keeps (run 3; runs 1 and 2 drew it against every track with a tempo).
  * variants: `as written` (trained on the sets as written: modules, MIDI songs, generator grooves,
    shuffles), `all data` (also the tempo-scaled copies and every style at every tempo), `all data,
    no tempo prior` (x and x2 left out); `chosen`: in each outer fold, the variant with the best
    level accuracy (share of tracks with a tempo whose winning candidate is right) over an inner split
    of the training sources into 3 groups; the model shipped is the variant that inner choice picks on
    all sources. `shipped` is the model file in the tree, for reference (in-sample).
  * folds: leave one source out (a package, a generator seed); a tempo-scaled copy is in its song's.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

from . import data
from . import level
from . import model as tm

LAMS = (0.3, 3.0, 30.0)
AS_WRITTEN = ('modules', 'midi', 'grooves', 'shuffles')
VARIANTS = {
    'as written': dict(sets=AS_WRITTEN, prior=True),
    'all data': dict(sets=None, prior=True),
    'all data, no tempo prior': dict(sets=None, prior=False),
}
_ratios = {}


def load_items(tracks):
    items, missing = [], []
    for t in tracks:
        if not os.path.exists(t.stem + '.f32') or os.path.getsize(t.stem + '.f32') == 0:
            missing.append(t.wav)
            continue
        f = data.track_features(t.stem)
        rows = level.track_beats(t.stem, f['cs'])['rows']
        X = tm.feature_matrix(f, rows) if len(rows) == len(f['cs']) else np.zeros((len(f['cs']), len(tm.FEATURES)))
        y = np.array([data.close(c, data.fold(t.truth)) for c in f['cs']], float) if t.truth else np.zeros(len(f['cs']))
        items.append(dict(source=t.source, set=t.set, key=t.wav, name=t.name, truth=t.truth, stem=t.stem, f=f, rows=rows,
                          X=X, both=X, y=y, x6=level.sixth_of_beat(f) if len(f['cs']) else np.zeros(0),
                          r=np.array([r['r'] for r in rows]) if rows else np.zeros(0)))
    return items, missing


def slow_and_pulse(it, k):
    key = (it['stem'], k)
    if key not in _ratios:
        T = it['f']['cs'][k]
        _ratios[key] = (level.slow_onset_ratio(it['stem'], T), level.steady_pulse(it['stem'], T)[1])
    return _ratios[key]


def line_above(values):
    """Just above the largest value, rounded up to 0.01 (0.01 when there is none)."""
    return math.floor(max(values, default=0.0) * 100 + 1) / 100


def fit(train, variant):
    """The Model a variant fits on `train`."""
    spec = VARIANTS[variant]
    train = [it for it in train if spec['sets'] is None or it['set'] in spec['sets']]
    cols = [i for i, n in enumerate(tm.FEATURES) if spec['prior'] or n not in ('x', 'x2')]
    for it in train:
        it['cols'] = it['X'][:, cols]
    w_sub = np.mean([level.fit_clogit(train, 'cols', lam) for lam in LAMS], axis=0)
    w = np.zeros(len(tm.FEATURES)); w[cols] = w_sub
    w6 = level.fit_sixth(train, w, LAMS)
    winners = [(it, int(np.argmax(it['X'] @ w))) for it in train if level.gate(it['f']) and len(it['X'])]
    beatless = [(it, k) for it, k in winners if it['truth'] is None]
    ratios = [slow_and_pulse(it, k) for it, k in beatless]
    slow_line, pulse_line = line_above([s for s, _ in ratios]), line_above([p for _, p in ratios])
    # r's line is drawn against the tracks with a tempo that neither other rule keeps (every beatless
    # clip lies below both other lines): the decision's own errors, not r's alone
    kept = {id(it) for it, k in winners if it['truth'] is not None
            and (lambda sp: sp[0] >= slow_line or sp[1] >= pulse_line)(slow_and_pulse(it, k))}
    lost = [float(it['r'][k]) for it, k in winners if it['truth'] is not None and id(it) not in kept]
    beatless_r = [float(it['r'][k]) for it, k in beatless]
    # every track with a tempo kept by the other rules: r's line just above every beatless clip
    rho = data.threshold(beatless_r, lost, -np.inf, '')[0] if lost else line_above(beatless_r)
    thresholds = dict(onBeatRatio=round(float(rho), 4), slowOnsetRatio=slow_line, steadyPulseConsistency=pulse_line)
    return tm.Model(dict(zip(tm.FEATURES, (round(float(x), 6) for x in w))), dict(sixth=round(w6, 6)), thresholds)


def predict(m, it):
    """TempoEstimator's decision under model m (bpm or None)."""
    if not level.gate(it['f']) or not len(it['X']):
        return None
    w = m.vector()
    z = it['X'] @ w
    k, i = int(np.argmax(z)), int(np.argmax(z + m.level_only['sixth'] * it['x6']))
    r = float(it['r'][k]); t = m.thresholds
    if r / (r + t['onBeatRatio']) < 0.5:
        slow, pulse = slow_and_pulse(it, k)
        if max(slow / (slow + t['slowOnsetRatio']), pulse / (pulse + t['steadyPulseConsistency'])) < 0.5:
            return None
    return level.final_bpm(it['f'], i)


def level_accuracy(m, items):
    ok = [it['y'][int(np.argmax(it['X'] @ m.vector() + m.level_only['sixth'] * it['x6']))]
          for it in items if it['truth'] is not None and len(it['X']) and level.gate(it['f'])]
    return float(np.mean(ok)) if ok else 0.0


def groups_of(items, k=3):
    srcs = sorted({it['source'] for it in items}, key=lambda s: (-sum(i['source'] == s for i in items), s))
    return [srcs[i::k] for i in range(k)]


def choose(train):
    """The variant with the best inner held-out level accuracy (3 groups of training sources; ties: the
    first in VARIANTS). Returns (variant, {variant: accuracy})."""
    acc = {}
    for v in VARIANTS:
        hits = n = 0
        for g in groups_of(train):
            tr = [it for it in train if it['source'] not in g]; te = [it for it in train if it['source'] in g]
            if not tr or not te: continue
            a = level_accuracy(fit(tr, v), te); m = sum(it['truth'] is not None for it in te)
            hits += a * m; n += m
        acc[v] = hits / max(1, n)
    best = max(acc.values())
    return next(v for v in VARIANTS if acc[v] >= best - 1e-12), acc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--data', default=os.path.expanduser('~/.cache/naviscan-tempo-model'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-model/dumps'))
    ap.add_argument('--naviscan', help='the binary that dumps the onset bands (only for tracks without a dump)')
    ap.add_argument('--subset', choices=('all', 'small'), default='all')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--no-nested', action='store_true', help='skip the inner choice in every fold (the chosen row)')
    ap.add_argument('--write-model', help='write the chosen variant, fitted on all sources, to this Swift file')
    ap.add_argument('--report')
    ap.add_argument('--json')
    a = ap.parse_args()
    t0 = time.time()
    tracks = data.track_list(a.data, a.cache, a.subset)
    if a.naviscan:
        failures = data.dump_all(tracks, a.naviscan, a.jobs)
        for m in failures: print('#', m, file=sys.stderr)
    items, missing = load_items(tracks)
    for w in missing: print(f'# NOT SCORED (no dump): {w}', file=sys.stderr)
    counts = {s: sum(it['set'] == s for it in items) for s in sorted({it['set'] for it in items})}
    sources = sorted({it['source'] for it in items})
    print(f'# {len(items)} tracks {counts}, {len(sources)} sources, features in {time.time() - t0:.0f} s', flush=True)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    shipped = tm.read(os.path.join(root, tm.SWIFT_PATH))
    preds = {v: {} for v in list(VARIANTS) + ([] if a.no_nested else ['chosen'])}
    folds = []
    for s in sources:
        train = [it for it in items if it['source'] != s]; test = [it for it in items if it['source'] == s]
        info = dict(source=s, n=len(test))
        models = {v: fit(train, v) for v in VARIANTS}
        for v, m in models.items():
            preds[v].update({it['key']: predict(m, it) for it in test})
            info[v] = m.thresholds
        if not a.no_nested:
            pick, acc = choose(train)
            preds['chosen'].update({it['key']: preds[pick][it['key']] for it in test})
            info['chosen'] = dict(pick=pick, inner=acc)
        folds.append(info)
        print(f'# fold {s} ({len(test)}): ' + ('' if a.no_nested else f'chose {info["chosen"]["pick"]}; ')
              + f'{time.time() - t0:.0f} s', flush=True)
    twin = {it['key']: predict(shipped, it) for it in items}
    results = {'shipped (in the tree; in-sample)': data.table(twin, items)}
    for v in preds:
        results[f'held out: {v}'] = data.table(preds[v], items)
    report = data.markdown(results)
    print('\nACC1 folded / ACC2 / false nulls (tracks), per group:\n' + report)
    pick, acc = (next(iter(VARIANTS)), {}) if a.no_nested else choose(items)
    final = fit(items, pick)
    print(f'\n# chosen on all sources: {pick} (inner level accuracy {acc}); thresholds {final.thresholds}')
    if a.write_model:
        commit = subprocess.run(['git', '-C', root, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', root, 'status', '--porcelain', '--untracked-files=no', '--', 'scripts', 'Sources'],
                               capture_output=True, text=True).stdout.strip()
        if dirty: commit += ' with uncommitted changes'
        final.provenance = '\n'.join([
            f'Variant "{pick}" of tempomodel.cv, fitted on every source ({len(items)} tracks, {len(sources)} sources:',
            '  ' + ', '.join(f'{k} {n}' for k, n in counts.items()) + ').',
            f'Data: scripts/tempo-model/build-data.sh (its header lists every set); code at commit {commit}.',
            f'Inner level accuracy of the variants: ' + ', '.join(f'{k} {v:.3f}' for k, v in acc.items()) + '.'])
        final.write_swift(a.write_model)
        print(f'# wrote {a.write_model}')
    if a.report:
        with open(a.report, 'w') as f:
            f.write(report + '\n')
    if a.json:
        json.dump(dict(results=results, folds=folds, chosen=pick, inner=acc, counts=counts,
                       predictions={k: {v: preds[v][k] for v in preds} for k in preds['all data']},
                       twin=twin, stems={it['key']: it['stem'] for it in items}),
                  open(a.json, 'w'), indent=1, default=float)
    print(f'# total {time.time() - t0:.0f} s')


if __name__ == '__main__':
    main()
