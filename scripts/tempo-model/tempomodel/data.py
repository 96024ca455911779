"""The training sets, their dumps and their truth: which tracks there are, which fold each falls in,
and what the onset front end's twin makes of each (cached beside its dump).

A set lives in DATA (build-data.sh): midi/, midiscaled/ (MIDI songs and their tempo-scaled copies),
modtempo/, modscaled/ (tracker modules and their copies), styles/seed* (rendered grooves). A track's
source is its package (`mod:PKG`, `midi:PKG`) or its generator seed (`grooves:seedN`): a tempo-scaled
copy has its song's source, so it always falls in its song's fold.
"""
import collections
import concurrent.futures as cf
import glob
import json
import os
import pickle
import subprocess
import sys

import numpy as np

from . import envelope as env

MIN_BPM, MAX_BPM = 60.0, 200.0
FEATURES_VERSION = 3          # the STEM.feat.pkl cache
FLOOR = 1.0                   # 2^(minOnsetStrengthQuarterOctaves / 4), minOnsetStrengthQuarterOctaves = 0
FACTORS = (1, 2, 0.5, 3, 1 / 3)
# --subset small: CI's fixed tiny set (20 tracks, 6 sources): 6 grooves, a very quiet ballad (-51 / -54 LUFS:
# the onset floor's level rule) and one beatless clip of each of two seeds, one module of each of 4 packages
SMALL = {'grooves:seed1': ['seed1_%03d' % i for i in range(6)] + ['seed1_018', 'seed1_027'],
         'grooves:seed2': ['seed2_%03d' % i for i in range(6)] + ['seed2_039', 'seed2_031'],
         'modtempo': ['bb__bb2_s3m', 'gweled__autonom_s3m', 'penguin-command__datajack_s3m', 'pachi-data__stage2_stm']}


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


def close(x, y):
    return abs(x - y) <= 0.04 * y


def fold(t, lo=MIN_BPM, hi=MAX_BPM):
    while t > hi: t /= 2
    while t < lo: t *= 2
    return t


Track = collections.namedtuple('Track', 'source set name wav truth stem')


def track_list(data, cache, subset='all'):
    """Every track of the sets present under `data`, dumps under `cache`."""
    out = []
    for kind, folder in (('modules', 'modtempo'), ('modules-scaled', 'modscaled')):
        path = os.path.join(data, folder, 'truth.json')
        if not os.path.exists(path): continue
        for name, t in sorted(json.load(open(path))['tracks'].items()):
            if name.endswith('.wav'):
                out.append(Track('mod:' + t['package'], kind, name, os.path.join(data, folder, name), t['bpm'],
                                 os.path.join(cache, folder, name)))
    for seed_dir in sorted(glob.glob(os.path.join(data, 'styles', 'seed*'))):
        seed = os.path.basename(seed_dir)
        if not os.path.exists(os.path.join(seed_dir, 'truth.json')): continue   # not rendered yet
        kind = ('shuffles' if seed.startswith('seedsh') else 'grooves-wide' if seed.startswith('seedwide')
                else 'ambient' if seed.startswith('seedambient') else 'grooves')
        doc = json.load(open(os.path.join(seed_dir, 'truth.json')))
        for c in doc['clips'] if isinstance(doc, dict) else doc:
            out.append(Track('grooves:' + seed, kind, c['name'], os.path.join(seed_dir, c['file']), c.get('bpm') or None,
                             os.path.join(cache, 'styles', seed, c['name'] + '.wav')))
    for kind, folder in (('midi', 'midi'), ('midi-scaled', 'midiscaled')):
        path = os.path.join(data, folder, 'truth.json')
        if not os.path.exists(path): continue
        for t in json.load(open(path))['tracks']:
            if t['format'] != 'wav': continue
            # the felt beat: in 6/8, 9/8 and 12/8 the quarter note is no level of the pulse
            out.append(Track('midi:' + t['package'], kind, t['relative_path'], os.path.join(data, folder, 'audio', t['relative_path']),
                             t['bpm_felt'], os.path.join(cache, folder, t['relative_path'])))
    if subset == 'small':
        keep = {(src, n) for src in ('grooves:seed1', 'grooves:seed2') for n in SMALL[src]}
        modules = {n + '.wav' for n in SMALL['modtempo']}
        out = [t for t in out if (t.source, t.name) in keep or (t.set == 'modules' and t.name in modules)]
    return out


def dump_one(job):
    wav, stem, binary = job
    if not os.path.exists(wav):
        return 'missing ' + wav
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    with open(stem + '.json.tmp', 'w') as fh:
        r = subprocess.run(['nice', '-n', '19', binary, 'analyze', wav, '--dj', '--dump-onset-bands', stem + '.f32.tmp'],
                           stdout=fh, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        return f'failed ({r.returncode}) {wav}'
    os.replace(stem + '.f32.tmp', stem + '.f32'); os.replace(stem + '.json.tmp', stem + '.json')
    return None


def dump_all(tracks, binary, jobs):
    """Dumps every track without one (`naviscan analyze --dj --dump-onset-bands`); returns the failures."""
    todo = [(t.wav, t.stem, binary) for t in tracks if not (os.path.exists(t.stem + '.f32') and os.path.exists(t.stem + '.json'))]
    if not todo: return []
    print(f'# dumping {len(todo)} tracks with {binary} ({jobs} jobs)', file=sys.stderr, flush=True)
    with cf.ThreadPoolExecutor(jobs) as ex:
        return [m for m in ex.map(dump_one, todo) if m]


def track_features(stem):
    """Everything TempoEstimator.estimate needs from one dump, cached in STEM.feat.pkl."""
    pk = stem + '.feat.pkl'
    floor_q = floor_quarter_octaves(track_lufs(stem))
    if os.path.exists(pk) and os.path.getmtime(pk) >= os.path.getmtime(stem + '.f32'):
        f = pickle.load(open(pk, 'rb'))
        if f.get('floor_q') == floor_q and f.get('version') == FEATURES_VERSION: return f
    f = features_of(env.load(stem + '.f32'), floor_q)
    pickle.dump(f, open(pk, 'wb'))
    return f


def features_of(E, floor_q):
    em = {k: env.emph(E[k]) for k in env.BANDS}
    n = len(E['all']) + 1                                   # hops (the first has no rise)
    R = {k: env.acf(em[k]) for k in env.BANDS}
    f = dict(n=n, reach=int((em['all'] >= FLOOR * 2.0 ** (floor_q / 4)).sum()), full=R['all'], floor_q=floor_q,
             version=FEATURES_VERSION)
    # no candidates for a constant full band (TempoEstimator: no full-band autocorrelation, no tempo)
    f['cs'] = env.candidates(R) if len(E['all']) > env.MAXLAG + 1 and R['all'].any() else []
    f['X'] = np.array([env.features(R, t)[:20] for t in f['cs']]) if f['cs'] else np.zeros((0, 20))
    return f


# ------------------------------------------------------------------------------- TempoEstimator twin
def refine(r, t, span, step):
    best, bs = t, env.salience(r, t); u = t * (1 - span)
    while u < t * (1 + span):
        s = env.salience(r, u)
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


# ------------------------------------------------------------------------------------------ scoring
def score(rows):
    """ACC1, ACC1 with the truth folded into 60-200, ACC2 (x 1, 2, 1/2, 3, 1/3) and false nulls of
    [(truth, bpm or None)] (../shared/modtempo/score.py's definitions)."""
    n = len(rows); a1 = a1f = a2 = nul = 0
    for truth, bpm in rows:
        if bpm is None: nul += 1; continue
        a1 += close(bpm, truth); a1f += close(bpm, fold(truth)); a2 += any(close(bpm, truth * f) for f in FACTORS)
    return dict(n=n, acc1=a1 / max(1, n), acc1f=a1f / max(1, n), acc2=a2 / max(1, n), null=nul)


SET_GROUPS = (('real music, as written', ('modules', 'midi')), ('modules', ('modules',)), ('MIDI songs', ('midi',)),
              ('real music, tempo-scaled copies', ('modules-scaled', 'midi-scaled')),
              ('grooves (generator seeds 1-5)', ('grooves',)), ('backbeat shuffles', ('shuffles',)),
              ('every style at every tempo', ('grooves-wide',)))
# beatless clips of every set are counted apart ("beatless given a tempo"); the ambient set holds only them


def table(preds, items):
    """{group: score} over the SET_GROUPS, plus beatless clips given a tempo."""
    res = {}
    for title, sets in SET_GROUPS:
        rows = [(it['truth'], preds[it['key']]) for it in items if it['set'] in sets and it['truth'] is not None]
        if rows: res[title] = score(rows)
    beatless = [it for it in items if it['truth'] is None]
    res['beatless given a tempo'] = [sum(preds[it['key']] is not None for it in beatless), len(beatless)]
    return res


def markdown(results):
    """One table: a row per variant, a column block per group (ACC1 folded / ACC2 / nulls)."""
    groups = [g for g, _ in SET_GROUPS if any(g in r for r in results.values())]
    lines = ['| variant | ' + ' | '.join(f'{g} (n)' for g in groups) + ' | beatless with a tempo |',
             '|---|' + '---|' * (len(groups) + 1)]
    for name, r in results.items():
        cells = [f'{100 * r[g]["acc1f"]:.1f} / {100 * r[g]["acc2"]:.1f} / {r[g]["null"]} ({r[g]["n"]})' if g in r else '-'
                 for g in groups]
        b = r.get('beatless given a tempo', [0, 0])
        lines.append(f'| {name} | ' + ' | '.join(cells) + f' | {b[0]}/{b[1]} |')
    return '\n'.join(lines)
