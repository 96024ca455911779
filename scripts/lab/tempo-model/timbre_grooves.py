#!/usr/bin/env python3
"""timbre_grooves.py -- the groove generator's clips in a timbre the dev set never has: another soundfont,
or other instruments (docs/tempo-dev-set.md, "After 0.5.6").

  timbre_grooves.py --seed 21 --count 60 --out DIR --font /usr/share/sounds/sf3/MuseScore_General_Lite.sf3
  timbre_grooves.py --seed 41 --count 60 --out DIR --instruments judge
  timbre_grooves.py --seed 8 --count 40 --prefix seed8 --out DIR --instruments train
  timbre_grooves.py --seed 62 --count 40 --out DIR --instruments judge --ambient-only

Runs ../shared/tempo/make_tempo_corpus.py (same schedule, plans, truth and beat times for a seed) with
its soundfont replaced (--font) and/or every palette program moved (--instruments):
  judge  melodic program p -> 8*(p//8) + (p%8 + 3) % 8 (another instrument of its General MIDI family);
         kits Standard->Room, Room->Power, Power->Standard, Electronic<->TR-808, Jazz<->Brush,
         Orchestra->Standard;
  train  p -> 8*(p//8) + (p%8 + 5) % 8; kits Standard->Power, Room->Standard, Power->Room,
         Electronic, Jazz, Brush->Standard, TR-808->Power, Orchestra->Room;
  random every role draws its program per clip from its whole General MIDI family (the kit from all
         eight kits).
--ambient-only renders beatless clips only (the style schedule replaced by the ambient style, as
slow_onset_threshold.py does). The maps were fixed before any render. The judge renders (seeds 21-24 with MuseScore_General_Lite,
41-44 with the judge map, 71-74 and the ambient-only 75-77 with /usr/share/sounds/sf2/OPL-3_FM_128M.sf2
from Debian's opl3-soundfont) are for measurement only; the train map made the groove seeds 8 and 9 of
the "instruments in training" trial and the random draw the seeds 51 and 52 of the "random instruments
in training" trial (neither shipped). The ambient-only seeds 53 (--instruments random) and 54 (--font
TimGM6mb.sf2), written to ~/.cache/naviscan-ambient/s53 and s54, are the extra training clips of the
"lines from beatless clips in more timbres" trial (slow_onset_threshold.py --seeds 31,32,53,54; not
shipped).
Environment: NAVISCAN_SHARED (default: ../shared beside the repository).
"""
import os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get('NAVISCAN_SHARED', os.path.join(os.path.dirname(ROOT), 'shared'))
sys.path.insert(0, os.path.join(SHARED, 'tempo'))
import make_tempo_corpus as mtc  # noqa: E402

MAPS = {  # name: (melodic shift within the family of 8, kit map)
    'judge': (3, {0: 8, 8: 16, 16: 0, 24: 25, 25: 24, 32: 40, 40: 32, 48: 0}),
    'train': (5, {0: 16, 8: 0, 16: 8, 24: 0, 25: 16, 32: 0, 40: 0, 48: 8}),
}
KITS = [0, 8, 16, 24, 25, 32, 40, 48]


def take(flag):
    """remove --flag VALUE from sys.argv (the rest goes to make_tempo_corpus's own parser)"""
    if flag not in sys.argv:
        return None
    i = sys.argv.index(flag)
    if i + 1 >= len(sys.argv):
        sys.exit(f'{flag} needs a value')
    value = sys.argv[i + 1]
    del sys.argv[i:i + 2]
    return value


def main():
    if '-h' in sys.argv or '--help' in sys.argv:
        print(__doc__)
        return
    if '--ambient-only' in sys.argv:
        sys.argv.remove('--ambient-only')
        mtc.style_schedule = lambda rng, count: ['ambient'] * count
    font = take('--font')
    instruments = take('--instruments')
    if font:
        if not os.path.exists(font):
            sys.exit(f'no soundfont at {font}')
        mtc.SF2 = font
    if instruments:
        if instruments not in MAPS and instruments != 'random':
            sys.exit(f'--instruments must be one of {", ".join(MAPS)}, random')
        for roles in mtc.PALETTE.values():
            for role, (programs, held_back) in list(roles.items()):
                if instruments == 'random':
                    families = sorted({8 * (p // 8) for p in programs})
                    moved = list(KITS) if role == 'kit' else [f + k for f in families for k in range(8)]
                else:
                    shift, kits = MAPS[instruments]
                    moved = [kits.get(p, 0) for p in programs] if role == 'kit' else [8 * (p // 8) + (p % 8 + shift) % 8 for p in programs]
                roles[role] = (moved, held_back)
    mtc.main()


if __name__ == '__main__':
    main()
