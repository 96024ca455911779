#!/usr/bin/env python3
"""legato.py OUTDIR [-j N] [--font PATH --name NAME] -- legato renders of the MIDI tempo dev set: the same songs and the same truth,
but every melodic channel played by the string ensemble (General MIDI program 48) and the drum channel
(10) silent. The dev set's renders keep their drums and plucked or struck instruments, so the onsets on
the beat are sharp; these renders ask whether a steady pulse with soft attacks keeps its tempo (the
"never beatless for a steady pulse" rule) and are for measurement only: nothing is fitted on them.

Reads OUTDIR/truth.json and OUTDIR/midi/<package>/<stem>.mid (build.sh's output), writes
OUTDIR/midi-legato/<package>/<stem>.mid, OUTDIR/audio/legato/<package>/<stem>.wav (FluidR3, 44.1 kHz,
16 bit, stereo; existing renders are kept) and OUTDIR/truth-legato.json: the FluidR3 rows of
truth.json with relative_path legato/<package>/<stem>.wav and soundfont "fluidr3-legato", so

    cd OUTDIR/audio && for f in legato/*/*.wav; do naviscan analyze "$f" --dj > PROFILES/$(basename "$f" .wav).json; done
    scripts/lab/miditempo/score.py OUTDIR/truth-legato.json PROFILES

scores them. Every beat time stays the MIDI file's: only programs and the drum channel change.

--font renders the same legato MIDI files with another soundfont into OUTDIR/audio/NAME, with
OUTDIR/truth-NAME.json (soundfont NAME): a soft-song set in a timbre the legato renders above never
had, for judging the beatless rules again (docs/tempo-dev-set.md, "Version 0.5.7"), e.g.
    legato.py OUTDIR --font /usr/share/sounds/sf3/MuseScore_General_Lite.sf3 --name legato-musescore
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import mido

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_truth  # noqa: E402,F401  (its patch: key signatures mido cannot name do not stop the read)

STRINGS = 48
DRUMS = 9
FONT = '/usr/share/sounds/sf2/FluidR3_GM.sf2'


def legato_midi(src, dst):
    m = mido.MidiFile(src)
    for track in m.tracks:
        out = []
        carry = 0   # delta time of dropped drum notes, kept so later events stay where they were
        for msg in track:
            if not msg.is_meta and getattr(msg, 'channel', None) == DRUMS and msg.type in ('note_on', 'note_off'):
                carry += msg.time
                continue
            if msg.type == 'program_change' and msg.channel != DRUMS:
                msg = msg.copy(program=STRINGS)
            if carry:
                msg = msg.copy(time=msg.time + carry)
                carry = 0
            out.append(msg)
        track[:] = out
    # channels that never change program play program 0: give every melodic channel the strings at tick 0
    m.tracks[0][0:0] = [mido.Message('program_change', channel=c, program=STRINGS, time=0)
                        for c in range(16) if c != DRUMS]
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    m.save(dst + '.tmp')
    os.replace(dst + '.tmp', dst)


def render(mid, wav, font=FONT):
    if os.path.exists(wav) and os.path.getsize(wav) > 44:
        return
    os.makedirs(os.path.dirname(wav), exist_ok=True)
    subprocess.run(['fluidsynth', '-ni', '-q', '-g', '0.6', '-r', '44100', '-F', wav + '.tmp.wav', font, mid],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    os.replace(wav + '.tmp.wav', wav)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('-j', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--font', default=FONT, help='the soundfont (default: FluidR3)')
    ap.add_argument('--name', default='legato', help='the audio folder and truth-NAME.json (default: legato)')
    a = ap.parse_args()
    label = 'fluidr3-legato' if a.name == 'legato' else a.name
    truth = json.load(open(os.path.join(a.outdir, 'truth.json')))
    rows = [t for t in truth['tracks'] if t['relative_path'].startswith('fluidr3/') and t['relative_path'].endswith('.wav')]
    if not rows:
        sys.exit(f'ERROR: no FluidR3 WAV rows in {a.outdir}/truth.json (run build.sh first)')
    jobs = []
    out_rows = []
    for t in rows:
        pkg_stem = t['relative_path'][len('fluidr3/'):-len('.wav')]
        src = os.path.join(a.outdir, 'midi', pkg_stem + '.mid')
        dst = os.path.join(a.outdir, 'midi-legato', pkg_stem + '.mid')
        wav = os.path.join(a.outdir, 'audio', a.name, pkg_stem + '.wav')
        legato_midi(src, dst)
        jobs.append((dst, wav))
        out_rows.append(dict(t, relative_path=f'{a.name}/{pkg_stem}.wav', soundfont=label))
    with ThreadPoolExecutor(a.j) as pool:
        list(pool.map(lambda j: render(*j, a.font), jobs))
    path = os.path.join(a.outdir, f'truth-{a.name}.json')
    with open(path + '.tmp', 'w') as fh:
        json.dump(dict(truth, tracks=out_rows), fh, indent=1)
    os.replace(path + '.tmp', path)
    print(f'{len(out_rows)} legato renders in {a.outdir}/audio/{a.name}; truth in {path}')


if __name__ == '__main__':
    main()
