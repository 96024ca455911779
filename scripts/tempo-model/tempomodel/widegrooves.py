"""Grooves of every style at every tempo, in any soundfont: the generator's styles without their tempo.

  python3 -m tempomodel.widegrooves --seed 41 --count 40 --font PATH --out DIR

../shared/tempo/make_tempo_corpus.py gives each style its own tempo range (ballads 60-80, drum and
bass 165-178): a model trained on it can read the tempo off the style. Here every style draws its tempo
in 60-200 BPM (trap, written with a half-time feel, in 100-200), every role its program from the whole
General MIDI family of the generator's program, the kit from all eight kits, through the soundfont
--font. Everything else (patterns, silences, fades, truth.json with beats) is the generator's.
With --ambient-only every clip is the generator's beatless ambient style (pads, drones, bells), so the
"no tempo" lines are drawn from many beatless clips in every font, not from the few a schedule holds.
Reserved synthesisers (TiMidity++, freepats, the csound soundfont) are refused.
"""
import argparse
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get('NAVISCAN_SHARED', os.path.join(os.path.dirname(ROOT), 'shared'))
sys.path.insert(0, os.path.join(SHARED, 'tempo'))
import make_tempo_corpus as mtc  # noqa: E402

KITS = [0, 8, 16, 24, 25, 32, 40, 48]


def widen():
    for style, (_, meter) in list(mtc.STYLES.items()):
        mtc.STYLES[style] = ((100, 200) if style == 'trap' else (60, 200), meter)
    for style, roles in mtc.PALETTE.items():
        for role, (dev, _) in roles.items():
            family = KITS if role == 'kit' else sorted({q for p in dev for q in range(p // 8 * 8, p // 8 * 8 + 8)})
            roles[role] = (family, [])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, default=40)
    ap.add_argument('--font', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--ambient-only', action='store_true', help='only beatless ambient clips')
    ap.add_argument('--long', action='store_true',
                    help='with --ambient-only: 2-2.7 minutes of music each (the steady-pulse rule reads up to 2 minutes)')
    a = ap.parse_args()
    if any(word in a.font.lower() for word in ('timidity', 'freepats', 'csound')):
        sys.exit(f'{a.font} is reserved for judging')
    widen()
    if a.ambient_only:
        mtc.style_schedule = lambda rng, count: ['ambient'] * count
    if a.ambient_only and a.long:
        plan_clip = mtc.plan_clip

        def long_plan(rng, idx, style, holdout, name):
            plan = plan_clip(rng, idx, style, holdout, name)
            plan['content_target'] = 120.0 + 40.0 * random.Random(idx * 7919 + a.seed).random()
            return plan
        mtc.plan_clip = long_plan
    mtc.SF2 = a.font
    sys.argv = ['make_tempo_corpus.py', '--seed', str(a.seed), '--count', str(a.count), '--out', a.out,
                '--jobs', str(a.jobs), '--prefix', f'{"ambient" if a.ambient_only else "wide"}{a.seed}']
    mtc.main()


if __name__ == '__main__':
    main()
