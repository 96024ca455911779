#!/usr/bin/env python3
"""tempo_cv.py -- leave-one-package-out cross-validation of naviscan's previous tempo model (the
22-feature autocorrelation model; the level is now chosen from beats: beat_level_cv.py measures that model
on the same folds and reads the dumps this script makes).

Sources (one fold each): every Debian package of the tracker-module set (../shared/modtempo, rendered
WAVs + truth.json), every package of the MIDI dev set (scripts/lab/miditempo, WAVs of both fonts; truth: bpm_felt),
and the rendered grooves of ../shared/tempo/make_tempo_corpus.py split by seed (seed1, seed2).

1. dump: `naviscan analyze FILE --dj --dump-onset-bands` for every WAV (cached under --cache, default
   ~/.cache/naviscan-tempo-cv/<set>/...; existing dumps are skipped). The profile JSON is kept beside
   the dump (used by --check, which compares this script's twin of the previous model with a binary that has it).
2. for each source P: everything data-chosen is chosen on the OTHER sources only --
   - the 22 octave-model weights, with fit_tempo_model.py's conditional logit (`fit`, same learning
     rate and iterations; labels: candidates within 4 % of the truth folded into 60-200 BPM);
   - the ridge strength lam: from --lams by an inner grouped split of the training sources into
     --inner-folds groups (best mean inner held-out octave accuracy; ties -> the documented 0.3 or the
     larger), unless --lam fixes it (the README's value is 0.3);
   - the confidence centre (TempoEstimator.confidenceCentre, score at which a track becomes "no
     tempo"): the README's rule, midway between the best-scoring beatless training clip and the
     worst-scoring training track with a tempo; if those overlap, the threshold with the fewest
     training errors (false nulls + beatless clips given a tempo), midway in its widest gap.
   Designed constants stay fixed (candidate ratios, seed and report ranges, refine spans, onset floor
   minOnsetStrengthQuarterOctaves = 0, band split, lag multiples), as in TempoEstimator.swift.
   P's tracks are then predicted exactly as TempoEstimator.estimate does (floor, candidates, scores,
   confidence, fine refine, period from the autocorrelation peaks, clamp to 60-200, rounding).
3. prints per package and overall ACC1, ACC1 folded, ACC2 and null (definitions of
   ../shared/modtempo/score.py and scripts/lab/miditempo/score.py: 4 %, truth folded into 60-200 for
   ACC1 folded, ACC2 against truth x {1, 2, 1/2, 3, 1/3}; null = a track with a tempo called beatless),
   the spread of per-package ACC1 folded across folds, and the same table for the SHIPPED weights and
   centre (in-sample where those were chosen on that data: the seed-1 grooves).

  tempo_cv.py [--subset small] [--lam L | --lams 0.1,0.3,1] [--check N] [--no-dump] [--json OUT]
Environment: NAVISCAN (binary, default /tmp/naviscan-helper), JOBS (parallel dumps, default 2).
"""
import argparse, collections, concurrent.futures as cf, glob, json, os, pickle, statistics, subprocess, sys, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_tempo_model as ftm  # noqa: E402  (feature, candidate and fitting code: kept in step with the Swift)

SHIPPED_WEIGHTS = np.array([
    0.4269, 0.9610, 0.6103, 1.3375, 2.1544,
    0.5710, -0.9169, -0.4600, -0.0605, 2.4515,
    0.4397, 0.7177, 2.4033, 0.5059, 1.5177,
    1.5073, 1.0179, 0.8123, 0.9720, 2.1631,
    2.6295, -1.6678])
SHIPPED_CENTRE = 3.0
MIN_BPM, MAX_BPM = 60.0, 200.0
FEATURES_VERSION = 2          # the STEM.feat.pkl cache: 2 = acf's constant-region rule
FLOOR = 1.0                   # 2^(minOnsetStrengthQuarterOctaves / 4), minOnsetStrengthQuarterOctaves = 0


def floor_quarter_octaves(lufs):
    """TempoEstimator.onsetFloorQuarterOctaves: the floor falls 1/6 octave per dB below -23 LUFS."""
    if lufs is None: return 0
    return int(np.floor(4 * min(0.0, lufs + 23.0) / 20 * np.log2(10.0)))


def track_lufs(stem):
    """The integrated loudness in the dump's profile (STEM.json), None when it has none."""
    try:
        return json.load(open(stem + '.json')).get('lufs')
    except (OSError, ValueError):
        return None
FACTORS = (1, 2, 0.5, 3, 1 / 3)
WORK = os.path.expanduser('~/.cache/naviscan-similarity/work')
# --subset small: a fixed tiny set for CI (6 sources, 20 tracks): 6 grooves, a very quiet ballad (−51 / −54 LUFS: the onset
# floor's level rule) and one beatless clip of each
# seed, and one module of each of 4 packages
SMALL = {'grooves:seed1': ['seed1_%03d' % i for i in range(6)] + ['seed1_018', 'seed1_027'],
         'grooves:seed2': ['seed2_%03d' % i for i in range(6)] + ['seed2_039', 'seed2_031'],
         'modtempo': ['bb__bb2_s3m', 'gweled__autonom_s3m', 'penguin-command__datajack_s3m', 'pachi-data__stage2_stm']}


def close(x, y):
    return abs(x - y) <= 0.04 * y


def fold(t, lo=MIN_BPM, hi=MAX_BPM):
    while t > hi: t /= 2
    while t < lo: t *= 2
    return t


# ---------------------------------------------------------------------------------------------- data
def add_data_arguments(ap):
    """Where the dev sets and their dumps are (track_list reads these): every script over the folds."""
    ap.add_argument('--subset', choices=('all', 'small'), default='all')
    ap.add_argument('--modules', default=os.path.join(WORK, 'modtempo'))
    ap.add_argument('--styles', default=os.path.join(WORK, 'styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    ap.add_argument('--lmms', help='add the LMMS demo songs (scripts/lab/lmmstempo OUTDIR) as one more source')


def track_list(a):
    """[(source, name, wav, truth_bpm or None, cache_stem)]"""
    out = []
    mt = json.load(open(os.path.join(a.modules, 'truth.json')))['tracks']
    for name, t in sorted(mt.items()):
        if not name.endswith('.wav'): continue
        out.append(('mod:' + t['package'], name, os.path.join(a.modules, name), t['bpm'],
                    os.path.join(a.cache, 'modtempo', name)))
    for seed_dir in sorted(glob.glob(os.path.join(a.styles, 'seed*'))):
        seed = os.path.basename(seed_dir)
        tj = json.load(open(os.path.join(seed_dir, 'truth.json'))); clips = tj['clips'] if isinstance(tj, dict) else tj
        for c in clips:
            out.append(('grooves:' + seed, c['name'], os.path.join(seed_dir, c['file']), c.get('bpm') or None,
                        os.path.join(a.cache, 'styles', seed, c['name'] + '.wav')))
    tpath = os.path.join(a.midi, 'truth.json')
    if os.path.exists(tpath):
        for t in json.load(open(tpath))['tracks']:
            if t['format'] != 'wav': continue
            # The felt beat: in 6/8, 9/8 and 12/8 the quarter note is no level of the pulse.
            out.append(('midi:' + t['package'], t['relative_path'], os.path.join(a.midi, 'audio', t['relative_path']),
                        t['bpm_felt'], os.path.join(a.cache, 'midi', t['relative_path'])))
    else:
        print(f'# no MIDI truth at {tpath}: MIDI sources left out', file=sys.stderr)
    if getattr(a, 'lmms', None):
        # The LMMS demo songs (scripts/lab/lmmstempo): one more package, one fold; opt-in.
        for t in json.load(open(os.path.join(a.lmms, 'truth.json')))['tracks']:
            out.append(('lmms:' + t['package'], t['relative_path'], os.path.join(a.lmms, 'audio', t['relative_path']),
                        t['bpm'], os.path.join(a.cache, 'lmms', t['relative_path'])))
    if a.subset == 'small':
        keep = {(src, n) for src in ('grooves:seed1', 'grooves:seed2') for n in SMALL[src]}
        keep |= {n + '.wav' for n in SMALL['modtempo']}
        out = [r for r in out if (r[0], r[1]) in keep or (r[0].startswith('mod:') and r[1] in keep)]
    return out


def dump_one(job):
    wav, stem, binary = job
    if os.path.exists(stem + '.f32') and os.path.exists(stem + '.json'):
        return None
    if not os.path.exists(wav):
        return 'missing ' + wav
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    with open(stem + '.json.tmp', 'w') as fh:
        r = subprocess.run(['nice', '-n', '19', binary, 'analyze', wav, '--dj', '--dump-onset-bands', stem + '.f32.tmp'],
                           stdout=fh, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return f'failed ({r.returncode}) {wav}'
    os.replace(stem + '.f32.tmp', stem + '.f32'); os.replace(stem + '.json.tmp', stem + '.json')
    return 'dumped ' + wav


def dump_all(tracks, binary, jobs):
    todo = [(w, s, binary) for _, _, w, _, s in tracks if not (os.path.exists(s + '.f32') and os.path.exists(s + '.json'))]
    if not todo: return
    print(f'# dumping {len(todo)} tracks with {binary} ({jobs} jobs)', file=sys.stderr)
    with cf.ThreadPoolExecutor(jobs) as ex:
        for msg in ex.map(dump_one, todo):
            if msg and not msg.startswith('dumped'): print('#', msg, file=sys.stderr)


def track_features(stem):
    """Everything TempoEstimator.estimate needs from one dump, cached in STEM.feat.pkl."""
    pk = stem + '.feat.pkl'
    floor_q = floor_quarter_octaves(track_lufs(stem))
    if os.path.exists(pk) and os.path.getmtime(pk) >= os.path.getmtime(stem + '.f32'):
        f = pickle.load(open(pk, 'rb'))
        if f.get('floor_q') == floor_q and f.get('version') == FEATURES_VERSION: return f
    E = ftm.load(stem + '.f32')
    em = {k: ftm.emph(E[k]) for k in ftm.BANDS}
    n = len(E['all']) + 1                                   # hops (the first has no rise)
    R = {k: ftm.acf(em[k]) for k in ftm.BANDS}
    f = dict(n=n, reach=int((em['all'] >= FLOOR * 2.0 ** (floor_q / 4)).sum()), full=R['all'], floor_q=floor_q, version=FEATURES_VERSION)
    # no candidates for a constant full band (TempoEstimator: no full-band autocorrelation, no tempo)
    f['cs'] = ftm.candidates(R) if len(E['all']) > ftm.MAXLAG + 1 and R['all'].any() else []
    f['X'] = np.array([ftm.features(R, t) for t in f['cs']]) if f['cs'] else np.zeros((0, 22))
    pickle.dump(f, open(pk, 'wb'))
    return f


# ------------------------------------------------------------------------------- TempoEstimator twin
def refine(r, t, span, step):
    best, bs = t, ftm.salience(r, t); u = t * (1 - span)
    while u < t * (1 + span):
        s = ftm.salience(r, u)
        if s > bs: bs, best = s, u
        u += step
    return best


def period_from_peaks(r, lag):
    kk = kp = 0.0; found = 0; k = 1
    while True:
        c = lag * k; hw = max(1.5, 0.02 * c)
        lo, hi = int(np.floor(c - hw)), int(np.ceil(c + hw))
        if not (lo >= 1 and hi + 1 < len(r)): break
        best = lo
        for i in range(lo, hi + 1):
            if r[i] > r[best]: best = i
        if lo < best < hi and r[best] > 0:
            a_, b_, c_ = r[best - 1], r[best], r[best + 1]
            den = a_ - 2 * b_ + c_
            off = 0.5 * (a_ - c_) / den if den < 0 else 0
            kk += k * k; kp += k * (best + max(-0.5, min(0.5, off))); found += 1
        k += 1
    return kp / kk if found >= 2 else None


def best_score(f, w):
    """(index of the winning candidate, its score), or None where estimate() returns no tempo early."""
    if f['n'] < ftm.MAXLAG + 2 or f['reach'] * 100 < f['n'] or not len(f['cs']):
        return None
    z = f['X'] @ w; i = int(np.argmax(z))
    return i, float(z[i])


def predict(f, w, centre):
    b = best_score(f, w)
    if b is None or b[1] < centre: return None
    r = f['full']; chosen = refine(r, f['cs'][b[0]], 0.005, 0.01)
    p = period_from_peaks(r, ftm.FR * 60 / chosen)
    precise = ftm.FR * 60 / p if p else chosen
    bpm = min(MAX_BPM, max(MIN_BPM, precise if abs(precise - chosen) < 0.01 * chosen else chosen))
    return round(bpm * 100) / 100


# ------------------------------------------------------------------------------------------ fitting
def fit_fast(items, lam, iters=3000, lr=0.05):
    """fit_tempo_model.fit, vectorised (same objective, gradient steps and result; --check compares)."""
    N = len(items)                       # fit() divides by all items, those without a right candidate included
    items = [it for it in items if it['y'].any()]
    m = max(len(it['X']) for it in items); d = items[0]['X'].shape[1]
    X = np.zeros((len(items), m, d)); Y = np.zeros((len(items), m)); mask = np.zeros((len(items), m), bool)
    for i, it in enumerate(items):
        k = len(it['X']); X[i, :k] = it['X']; Y[i, :k] = it['y'] / it['y'].sum(); mask[i, :k] = True
    W = np.array([it['weight'] for it in items])[:, None]
    Xf = X.reshape(-1, d); w = np.zeros(d)
    for _ in range(iters):
        z = np.where(mask, (Xf @ w).reshape(mask.shape), -np.inf)
        e = np.exp(z - z.max(1, keepdims=True)); p = e / e.sum(1, keepdims=True)
        g = lam * w + Xf.T @ (W * (p - Y)).ravel()
        w = w - lr * g / N
    return w


def octave_acc(items, w):
    ok = [it['y'][int(np.argmax(it['X'] @ w))] for it in items if len(it['X'])]
    return float(np.mean(ok)) if ok else 0.0


def threshold(beatless, tempo, default, default_reason):
    """The README's rule on any statistic (higher = more beat): midway between the best-scoring beatless
    clip and the worst-scoring track with a tempo; if those overlap, the threshold with the fewest
    training errors (beatless clips at or above it, tracks with a tempo below it), midway in its widest
    gap. `default` when there is no beatless clip."""
    if not beatless: return default, default_reason
    finite = [t for t in tempo if np.isfinite(t)]
    hi_b, lo_t = max(beatless), min(finite)
    if hi_b < lo_t: return (hi_b + lo_t) / 2, 'separable'
    pts = sorted(set(beatless + finite))
    best = None
    for a_, b_ in zip(pts, pts[1:]):
        c = (a_ + b_) / 2
        err = sum(s >= c for s in beatless) + sum(s < c for s in tempo)
        key = (err, -(b_ - a_))
        if best is None or key < best[0]: best = (key, c)
    return best[1], f'overlap, {best[0][0]} training errors'


def choose_centre(train, w):
    beatless = [b[1] for it in train if it['truth'] is None and (b := best_score(it['f'], w))]
    tempo = [b[1] if (b := best_score(it['f'], w)) else -np.inf for it in train if it['truth'] is not None]
    return threshold(beatless, tempo, SHIPPED_CENTRE, 'no beatless clip in training: shipped 3.0')


def choose_lam(train, lams, k, iters):
    srcs = sorted({it['source'] for it in train}, key=lambda s: (-sum(i['source'] == s for i in train), s))
    groups = [srcs[i::k] for i in range(k)]
    res = {}
    for lam in lams:
        accs = []
        for g in groups:
            tr = [it for it in train if it['source'] not in g]; te = [it for it in train if it['source'] in g and it['y'].any()]
            if not te or not tr: continue
            accs.append(octave_acc(te, fit_fast(tr, lam, iters=iters)))
        res[lam] = float(np.mean(accs))
    best = max(res.values())
    cands = [l for l in lams if res[l] >= best - 1e-12]
    return (0.3 if 0.3 in cands else max(cands)), res


# ------------------------------------------------------------------------------------------ scoring
def score(rows):
    n = len(rows); a1 = a1f = a2 = nul = 0
    for truth, bpm in rows:
        if bpm is None: nul += 1; continue
        a1 += close(bpm, truth); a1f += close(bpm, fold(truth)); a2 += any(close(bpm, truth * f) for f in FACTORS)
    return dict(n=n, acc1=a1 / n, acc1f=a1f / n, acc2=a2 / n, null=nul)


def table(title, preds, items, label_fn=None):
    by = collections.OrderedDict()
    for it in sorted(items, key=lambda i: i['source']):
        if it['truth'] is None: continue
        by.setdefault(it['source'], []).append((it['truth'], preds[it['key']]))
    print(f'\n## {title}')
    print('| source | n | ACC1 | ACC1 folded | ACC2 | null |' + (' weights |' if label_fn else ''))
    print('|---|---:|---:|---:|---:|---:|' + ('---|' if label_fn else ''))
    res = {}
    for s, rows in by.items():
        r = score(rows); res[s] = r
        print(f'| {s} | {r["n"]} | {100*r["acc1"]:.1f} | {100*r["acc1f"]:.1f} | {100*r["acc2"]:.1f} | {r["null"]} |'
              + (f' {label_fn(s)} |' if label_fn else ''))
    groups = [('all', lambda s: True), ('all modules', lambda s: s.startswith('mod:')),
              ('all MIDI', lambda s: s.startswith('midi:')), ('all real music (modules, MIDI, and LMMS with --lmms)', lambda s: not s.startswith('grooves:')),
              ('all grooves', lambda s: s.startswith('grooves:')),
              ('grooves of the generator (../shared/tempo)', lambda s: s.startswith('grooves:') and not s.startswith('grooves:seedsh')),
              ('backbeat shuffles (shuffle_grooves.py)', lambda s: s.startswith('grooves:seedsh'))]
    for g, sel in groups:
        rows = [x for s, rr in by.items() if sel(s) for x in rr]
        if not rows: continue
        r = score(rows); res[g] = r
        print(f'| **{g}** | {r["n"]} | {100*r["acc1"]:.1f} | {100*r["acc1f"]:.1f} | {100*r["acc2"]:.1f} | {r["null"]} |'
              + (' |' if label_fn else ''))
    beatless = [it for it in items if it['truth'] is None]
    if beatless:
        given = sum(preds[it['key']] is not None for it in beatless)
        print(f'beatless clips given a tempo: {given}/{len(beatless)}')
        res['beatless_given_tempo'] = [given, len(beatless)]
    per = [by_r['acc1f'] for s, by_r in res.items() if s in by]
    real = [res[s]['acc1f'] for s in by if not s.startswith('grooves:')]
    for lab, v in (('all sources', per), ('real-music packages', real)):
        if v:
            print(f'per-{lab} ACC1 folded: min {100*min(v):.1f} / median {100*statistics.median(v):.1f} / max {100*max(v):.1f} '
                  f'({len(v)} folds)')
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(ap)
    ap.add_argument('--lam', type=float, help='fixed ridge strength (default: chosen in each fold from --lams)')
    ap.add_argument('--lams', default='0.1,0.3,1,3')
    ap.add_argument('--inner-folds', type=int, default=3)
    ap.add_argument('--iters', type=int, default=3000, help='gradient steps of the outer fits (fit_tempo_model: 3000)')
    ap.add_argument('--inner-iters', type=int, default=1500, help='of the inner fits (fit_tempo_model CV: 1500)')
    ap.add_argument('--check', type=int, default=5, help='compare predictions with the profiles on N tracks and the fast fit with fit_tempo_model.fit')
    ap.add_argument('--no-dump', action='store_true', help='use only the dumps already cached')
    ap.add_argument('--json', help='write the results here')
    a = ap.parse_args()
    t0 = time.time()
    tracks = track_list(a)
    if not a.no_dump:
        dump_all(tracks, os.environ.get('NAVISCAN', '/tmp/naviscan-helper'), int(os.environ.get('JOBS', 2)))
    t_dump = time.time() - t0
    items = []
    for source, name, wav, truth, stem in tracks:
        # No dump, or an empty one (a render with no audible note, e.g. freedink-data Sound__104): not scored.
        if not os.path.exists(stem + '.f32') or os.path.getsize(stem + '.f32') == 0: continue
        f = track_features(stem)
        y = np.array([close(c, fold(truth)) for c in f['cs']], float) if truth else np.zeros(len(f['cs']))
        items.append(dict(source=source, key=source + '/' + name, name=name, truth=truth, f=f, X=f['X'], y=y,
                          weight=1.0, profile=stem + '.json'))
    missing = len(tracks) - len(items)
    srcs = sorted({it['source'] for it in items})
    print(f'# {len(items)} tracks ({missing} without a dump) in {len(srcs)} sources; features in {time.time() - t0 - t_dump:.0f} s')

    # --- checks: the Python twin against naviscan's profiles, and fit_fast against fit_tempo_model.fit
    if a.check:
        rng = np.random.default_rng(1); pick = rng.choice(len(items), min(a.check, len(items)), replace=False)
        agree = 0
        for i in pick:
            it = items[i]; prof = json.load(open(it['profile'])); mine = predict(it['f'], SHIPPED_WEIGHTS, SHIPPED_CENTRE)
            agree += (mine == prof.get('bpm')) or (mine is not None and prof.get('bpm') is not None and abs(mine - prof['bpm']) <= 0.011)
            print(f'# check {it["key"]}: naviscan {prof.get("bpm")}, twin {mine}')
        print(f'# twin agrees with the profile on {agree}/{len(pick)} checked tracks')
        sub = [it for it in items if it['y'].any()][:40]
        w_ref = ftm.fit(sub, 0.3, iters=200); w_fast = fit_fast(sub, 0.3, iters=200)
        print(f'# fit_fast vs fit_tempo_model.fit (40 tracks, 200 steps): max |dw| = {np.abs(w_ref - w_fast).max():.2e}')

    shipped = {it['key']: predict(it['f'], SHIPPED_WEIGHTS, SHIPPED_CENTRE) for it in items}
    held, folds = {}, []
    for s in srcs:
        tf = time.time()
        train = [it for it in items if it['source'] != s]; test = [it for it in items if it['source'] == s]
        if a.lam is not None: lam, inner = a.lam, None
        else: lam, inner = choose_lam(train, [float(x) for x in a.lams.split(',')], a.inner_folds, a.inner_iters)
        w = fit_fast(train, lam, iters=a.iters)
        centre, how = choose_centre(train, w)
        for it in test: held[it['key']] = predict(it['f'], w, centre)
        folds.append(dict(source=s, lam=lam, inner=inner, centre=centre, centre_rule=how, weights=[round(x, 4) for x in w],
                          seconds=round(time.time() - tf, 1)))
        print(f'# fold {s}: {len(test)} tracks, lam {lam}' + (f' (inner {inner})' if inner else '') +
              f', centre {centre:.2f} ({how}), {time.time() - tf:.1f} s', flush=True)
    t_cv = time.time() - t0
    res_h = table('held out (leave one package out; weights, lam and centre fitted without the package)', held, items)
    in_sample = lambda s: 'in-sample (fitted on seed 1)' if s == 'grooves:seed1' else 'out-of-sample for the weights'
    res_s = table('the previous model\'s weights and centre', shipped, items, in_sample)
    print('\nmisses held out (source, track, truth, held-out bpm, shipped bpm):')
    for it in items:
        if it['truth'] and (held[it['key']] is None or not close(held[it['key']], fold(it['truth']))):
            print(f'  {it["source"]}  {it["name"]}  {it["truth"]}  {held[it["key"]]}  {shipped[it["key"]]}')
    print(f'\n# timings: dump {t_dump:.0f} s, total {time.time() - t0:.0f} s (CV {t_cv - t_dump:.0f} s)')
    if a.json:
        json.dump(dict(held_out=res_h, shipped=res_s, folds=folds,
                       predictions={k: dict(held_out=held[k], shipped=shipped[k]) for k in held}), open(a.json, 'w'), indent=1)


if __name__ == '__main__':
    main()
