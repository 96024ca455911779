#!/usr/bin/env python3
"""shuffle_grooves.py -- backbeat shuffles from 70 to 200 BPM, rendered like the groove dev set.

  shuffle_grooves.py --seed 101 --count 40 --out DIR [--font PATH]

The groove generator (../shared/tempo/make_tempo_corpus.py) has no shuffle: its swing is on the
sixteenths (boom-bap, funk), and its fast styles are straight. This adds one style to it and renders
with its own machinery (MIDI through fluidsynth, silences, fades, noise, WAV + MP3, truth.json with
beats_s), so every clip has the generator's format and exact beat times.

The style, fixed before any figure was measured:
  * tempo log-uniform in 70..200 BPM, so a shuffle says nothing about the octave by itself;
  * the eighths swung at 0.60..0.75 of the beat (triplet to dotted shuffle) in every part;
  * the backbeat names the beat: kick on 1 and 3 (sometimes the swung "and" of 2), snare on 2 and 4,
    hi-hat or ride on each beat and swung "and" (or the jazz ride figure);
  * bass: walking quarters or a boogie figure on swung eighths; chords: stabs on 2 and 4, swung
    eighth comping, or the boogie power-chord figure; the generator's pad, lead (swung), intros,
    breakdowns, fills and endings.
"""
import argparse, json, math, os, random, sys
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get('NAVISCAN_SHARED', os.path.join(os.path.dirname(ROOT), 'shared'))
sys.path.insert(0, os.path.join(SHARED, 'tempo'))
import make_tempo_corpus as mtc  # noqa: E402

mtc.STYLES['shuffle'] = ((70, 200), '4/4')
mtc.PALETTE['shuffle'] = dict(kit=([0, 32, 8], []), bass=([33, 32, 34], []), chords=([0, 16, 29, 4], []),
                              pad=([48, 89], []), lead=([65, 73, 56], []))
_style_bar = mtc.style_bar
_lead_bar = mtc.lead_bar


def sw(P, pos):
    """a position in beats with its eighth swung: x.5 -> x + swing"""
    k = math.floor(pos + 1e-9)
    return k + P['swing'] if abs(pos - k - 0.5) < 1e-6 else pos


def shuffle_bar(song, rng, P, b, bb, chord, nxt, L):
    S = P['swing']
    phrase_end = b % 4 == 3; phrase_start = b % 4 == 0
    bnote = mtc.bass_note(chord[0], P['bass_lo'])
    if L['drums']:
        if L['kick']:
            for k in P['sh_kick']:
                song.add(bb + k, 0.2, mtc.CH_DRUMS, mtc.KICK, 112)
        for k in (1, 3):
            song.add(bb + k, 0.2, mtc.CH_DRUMS, P['snare_note'], 112)
        if P['sh_cym'] == 'jazz':      # ding, ding-da, ding, ding-da
            for pos, v in ((0, 85), (1, 85), (1 + S, 65), (2, 85), (3, 85), (3 + S, 65)):
                song.add(bb + pos, 0.2, mtc.CH_DRUMS, mtc.RIDE, v)
            for k in (1, 3):
                song.add(bb + k, 0.2, mtc.CH_DRUMS, 44, 60)   # hi-hat foot on 2 and 4
        else:
            cym = mtc.RIDE if P['sh_cym'] == 'ride' else mtc.HH_C
            for k in range(4):
                song.add(bb + k, 0.2, mtc.CH_DRUMS, cym, 84)
                song.add(bb + k + S, 0.2, mtc.CH_DRUMS, cym, 62)
        if phrase_end and rng.random() < 0.5:
            for pos in (3, 3 + S):
                song.add(bb + pos, 0.2, mtc.CH_DRUMS, rng.choice([mtc.SNARE, mtc.TOM_M, mtc.TOM_L]), 95)
        if phrase_start and b > 0:
            song.add(bb, 2, mtc.CH_DRUMS, mtc.CRASH, 100)
    if L['bass']:
        root = bnote; third = 4 if chord[1] == 'maj' else 3
        if P['sh_bass'] == 'walk':
            tones = [0, third, 7, rng.choice([9, 10, 12, 5])]
            for k, t in enumerate(tones):
                n = root + t if k < 3 else mtc.bass_note(nxt[0], P['bass_lo']) - 1 if rng.random() < 0.3 else root + t
                song.add(bb + k, 0.85, mtc.CH_BASS, n, 100)
        else:                          # boogie: 1 1 3 3 5 5 6 5 on swung eighths
            figure = [0, 0, third, third, 7, 7, 9, 7]
            for i, t in enumerate(figure):
                song.add(bb + (i // 2) + (S if i % 2 else 0), 0.4 if i % 2 == 0 else 0.25, mtc.CH_BASS, root + t, 100 if i % 2 == 0 else 80)
    if L['chords']:
        vo = mtc.voicing(mtc.chord_pcs(*chord, seventh=P['sevenths']), P['chord_center'])
        if P['sh_comp'] == 'stabs':        # on 2 and 4
            for k in (1, 3):
                for n in vo:
                    song.add(bb + k, 0.4, mtc.CH_CHORDS, n, 85)
        elif P['sh_comp'] == 'eighths':    # swung eighth comping, accent on the beat
            for k in range(4):
                for n in vo:
                    song.add(bb + k, 0.3, mtc.CH_CHORDS, n, 85)
                    song.add(bb + k + S, 0.2, mtc.CH_CHORDS, n, 65)
        else:                              # boogie power chords: 5th and 6th alternating, swung
            for k in range(4):
                top = 7 if k % 2 == 0 else 9
                for pos, v in ((k, 90), (k + S, 70)):
                    for t in (0, top):
                        song.add(bb + pos, 0.3, mtc.CH_CHORDS, bnote + 12 + t, v)
    if L['pad']:
        for n in mtc.voicing(mtc.chord_pcs(*chord), P['chord_center']):
            song.add(bb, 3.95, mtc.CH_PAD, n, 50)


def style_bar(style, song, rng, P, b, bb, chord, nxt, L, scale, penta):
    if style == 'shuffle':
        return shuffle_bar(song, rng, P, b, bb, chord, nxt, L)
    return _style_bar(style, song, rng, P, b, bb, chord, nxt, L, scale, penta)


def lead_bar(song, rng, b, bb, penta, P):
    if 'sh_kick' not in P:
        return _lead_bar(song, rng, b, bb, penta, P)
    motif = P['lead_motif']
    for pos, deg, dur in motif[b % 2]:
        if rng.random() < 0.9:
            octave, idx = divmod(deg, len(penta))
            n = P['lead_lo'] + ((penta[idx] - P['lead_lo']) % 12) + 12 * octave
            song.add(bb + sw(P, pos), dur, mtc.CH_LEAD, n, 85)


mtc.style_bar = style_bar
mtc.lead_bar = lead_bar


def plan(rng, i, name):
    p = mtc.plan_clip(rng, i, 'shuffle', False, name)
    bpm = round(math.exp(rng.uniform(math.log(70), math.log(200))), 2)
    p['bpm_written'] = bpm; p['us'] = int(round(60e6 / bpm)); p['bpm'] = 60e6 / p['us']
    p['P'].update(swing=rng.uniform(0.60, 0.75),
                  sh_kick=rng.choice([[0, 2], [0, 2], [0, 1.5, 2]]),
                  sh_cym=rng.choice(['hat', 'ride', 'jazz']),
                  sh_bass=rng.choice(['walk', 'boogie']),
                  sh_comp=rng.choice(['stabs', 'eighths', 'boogie']))
    if len(p['P']['sh_kick']) == 3:     # the swung "and" of 2
        p['P']['sh_kick'] = [0, 1 + p['P']['swing'], 2]
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, default=40)
    ap.add_argument('--out', required=True)
    ap.add_argument('--prefix')
    ap.add_argument('--font', default=mtc.SF2, help='the General MIDI soundfont (default: FluidR3, as the groove dev set)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    mtc.SF2 = a.font
    prefix = a.prefix or f'shuffle{a.seed}'
    for sub in ('midi', 'wav', 'mp3'):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
    rng = random.Random(a.seed * 1000003 + 29)
    jobs = []
    for i in range(a.count):
        sub_seed = rng.randrange(2 ** 31)
        jobs.append((plan(random.Random(sub_seed), i, f'{prefix}_{i:03d}'), a.out, sub_seed + 1))
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        truths = list(ex.map(mtc.render_clip, jobs))
    with open(os.path.join(a.out, 'truth.json'), 'w') as f:
        json.dump({'generator': 'shuffle_grooves.py (make_tempo_corpus.py machinery)', 'seed': a.seed,
                   'count': a.count, 'font': os.path.basename(a.font), 'clips': truths}, f, indent=1)
    print(f'wrote {len(truths)} clips to {a.out}')


if __name__ == '__main__':
    main()
