#!/usr/bin/env python3
"""render_grooves.py -- render only some clips of a ../shared/tempo/make_tempo_corpus.py corpus.

  render_grooves.py --seed 1 --count 40 --prefix seed1 --out DIR NAME [NAME ...]

make_tempo_corpus.py renders every clip of a seed; this draws the same style schedule and the same
per-clip seeds and plans for all COUNT clips (its main(), step by step: cheap) and renders only the
named ones, so each rendered clip, its WAV, MP3, MIDI and truth, is the one the full render makes
(`make_tempo_corpus.py --seed 1 --count 40 --prefix seed1` is the seed-1 set of tempo_cv.py).
DIR/truth.json holds the named clips (those rendered before and still named are kept, not rendered
again), in the generator's format. Used by scripts/tempo-cv.sh for tempo_cv.py --subset small.
Environment: NAVISCAN_SHARED (default: ../shared beside the repository).
"""
import argparse, json, os, random, sys
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get('NAVISCAN_SHARED', os.path.join(os.path.dirname(ROOT), 'shared'))
sys.path.insert(0, os.path.join(SHARED, 'tempo'))
import make_tempo_corpus as mtc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, required=True, help='the full corpus size (the schedule depends on it)')
    ap.add_argument('--prefix', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('names', nargs='+')
    a = ap.parse_args()
    for sub in ('midi', 'wav', 'mp3'):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
    # make_tempo_corpus.main(), draw for draw (palette 'dev', no holdout)
    rng = random.Random(a.seed * 1000003 + 17)
    sched = mtc.style_schedule(rng, a.count)
    jobs = {}
    for i, style in enumerate(sched):
        name = f'{a.prefix}_{i:03d}'
        sub_seed = rng.randrange(2 ** 31)
        plan = mtc.plan_clip(random.Random(sub_seed), i, style, False, name)
        jobs[name] = (plan, a.out, sub_seed + 1)
    unknown = [n for n in a.names if n not in jobs]
    if unknown:
        sys.exit(f'render_grooves.py: not in the {a.count}-clip corpus of prefix {a.prefix}: {" ".join(unknown)}')
    tpath = os.path.join(a.out, 'truth.json')
    have = {}
    if os.path.exists(tpath):
        doc = json.load(open(tpath))
        if (doc.get('seed'), doc.get('count')) == (a.seed, a.count):
            have = {c['name']: c for c in doc['clips']
                    if c['name'] in a.names and os.path.exists(os.path.join(a.out, c['file']))}
    todo = [n for n in a.names if n not in have]
    if todo:
        print(f'# rendering {len(todo)} clips of seed {a.seed} ({a.count}-clip schedule) into {a.out}', file=sys.stderr)
        with ProcessPoolExecutor(max_workers=a.jobs) as ex:
            for t in ex.map(mtc.render_clip, [jobs[n] for n in todo]):
                have[t['name']] = t
    doc = dict(generator='make_tempo_corpus.py (render_grooves.py: a subset)', seed=a.seed, count=a.count,
               palette='dev', sample_rate=mtc.SR, subset=sorted(have),
               clips=[have[n] for n in sorted(have)])
    with open(tpath + '.tmp', 'w') as f:
        json.dump(doc, f, indent=1)
    os.replace(tpath + '.tmp', tpath)


if __name__ == '__main__':
    main()
