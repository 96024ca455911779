#!/usr/bin/env python3
"""unseen_font_cv.py -- does the tempo model hold on a timbre it never saw? (docs/tempo-dev-set.md,
"Version 0.5.6: checks after the release").

The MIDI dev set is rendered with FluidR3 and TimGM6mb; scripts/lab/miditempo/unseen_font.sh renders the
same songs with a third soundfont (MuseScore_General_Lite), never used to fit or choose anything. This
runs the shipped procedure (beat_level_cv.py's beat+acf22+sixth variant, leave one source out) on the dev
set and scores the unseen font's renders with the model of their package's fold: a song's renders in
the dev fonts are held out with it, so nothing of the song or its package is in that model.

  --train  also fits on the unseen renders of the training packages (the dev set's figures then say
           whether a third timbre in training would help).

Prints the dev set's table (the same as beat_level_cv.py's beat+acf22+sixth without --train) and the unseen
font's, and the unseen renders it misses.

  unseen_font_cv.py [--unseen DIR] [--train] [--lmms DIR] ...   (under a minute once dumped)
Dumps the unseen renders that have no dump yet with $NAVISCAN (tempo_cv.py's helper binary, default
/tmp/naviscan-helper); reads the other caches of tempo_cv.py and beat_level_cv.py (run those first).
"""
import argparse, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as blc  # noqa: E402
import tempo_cv as tc        # noqa: E402

LAMS = [0.3, 3.0, 30.0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--unseen', default=os.path.expanduser('~/.cache/naviscan-midi-unseen'),
                    help="unseen_font.sh's OUTDIR")
    ap.add_argument('--train', action='store_true', help='fit on the unseen renders of the training packages too')
    tc.add_data_arguments(ap)
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.unseen, 'truth.json')):
        sys.exit(f'no unseen-font renders at {a.unseen}: run scripts/lab/miditempo/unseen_font.sh first')
    dev = blc.load_items(a)
    ua = argparse.Namespace(**{**vars(a), 'midi': a.unseen})
    tracks = [t for t in tc.track_list(ua) if t[0].startswith('midi:')]
    tc.dump_all(tracks, os.environ.get('NAVISCAN', '/tmp/naviscan-helper'), int(os.environ.get('JOBS', 2)))
    unseen = [it for it in blc.load_items(ua) if it['source'].startswith('midi:')]
    fonts = {it['name'].split('/')[0] for it in unseen}
    if fonts & {it['name'].split('/')[0] for it in dev if it['source'].startswith('midi:')}:
        sys.exit(f'the unseen renders use a dev-set font ({", ".join(sorted(fonts))}): nothing would be unseen')
    print(f'# {len(dev)} dev-set tracks, {len(unseen)} renders with {", ".join(sorted(fonts))}')
    preds = {}
    for s in sorted({it['source'] for it in dev}):
        train = [it for it in dev if it['source'] != s]
        if a.train:
            train += [it for it in unseen if it['source'] != s]
        w = blc.fit_level_model(train, 'both', LAMS)[0]
        preds.update(blc.predict_fold(train, [it for it in dev + unseen if it['source'] == s], 'both', w,
                                      w6=blc.fit_sixth(train, w, LAMS))[0])
    how = 'with the unseen font of the other packages in training' if a.train else 'the shipped procedure'
    tc.table(f'held out, dev set ({how})', preds, dev)
    tc.table(f'held out, renders with {", ".join(sorted(fonts))} ({how})', preds, unseen)
    print('\nunseen renders missed (track, truth, held-out bpm):')
    for it in unseen:
        p = preds[it['key']]
        if it['truth'] and (p is None or not tc.close(p, tc.fold(it['truth']))):
            print(f'  {it["name"]}  {it["truth"]:g}  {p}')


if __name__ == '__main__':
    main()
