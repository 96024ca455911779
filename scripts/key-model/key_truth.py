#!/usr/bin/env python3
"""key_truth.py OUTDIR -- key ground truth for the MIDI dev set built by scripts/tempo-model/build-midi.sh.

For every song in OUTDIR/truth.json (one song = one (package, source_midi); its MIDI copy is
OUTDIR/midi/<package>/<stem>.mid, its renders OUTDIR/audio/<font>/<package>/<stem>.wav) read the
key_signature meta messages with mido and keep the song only when
  * it has exactly one distinct key signature (every key_signature message equal), and
  * that key agrees with the notes: over the duration-weighted (seconds) pitch-class histogram of all
    non-drum notes (MIDI channel 10, index 9, excluded)
      (a) >= 80 % of the note duration lies in the key's diatonic scale (major; natural minor plus the
          raised 7th for minor keys), and
      (b) Krumhansl-Kessler key finding (Pearson correlation with the 24 rotated KK profiles) gives the
          stated key, or its relative key while the final bass note (lowest note sounding at the last
          note onset) has the stated tonic's pitch class.
Writes OUTDIR/key_truth.json {"meta", "songs": [kept], "rejected": [with reason]} and prints a summary.
"""
import collections
import json
import os
import sys

import mido
import mido.midifiles.meta as _meta
import numpy as np

MIN_SCALE_SHARE = 0.80
PC_NAMES = ['C', 'C#', 'D', 'Eb', 'E', 'F', 'F#', 'G', 'Ab', 'A', 'Bb', 'B']
KK_MAJOR = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
KK_MINOR = np.array([6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17])
MAJOR_SCALE = {0, 2, 4, 5, 7, 9, 11}
MINOR_SCALE = {0, 2, 3, 5, 7, 8, 10, 11}  # natural minor + raised 7th
LETTER_PC = {'C': 0, 'D': 2, 'E': 4, 'F': 5, 'G': 7, 'A': 9, 'B': 11}

# mido raises on key signatures it cannot name (e.g. mode 255); mark them instead of failing the file
_kdecode = _meta.MetaSpec_key_signature.decode


def _kdecode_safe(self, msg, data):
    try:
        _kdecode(self, msg, data)
    except Exception:
        msg.key = f'invalid{tuple(data)}'


_kcheck = _meta.MetaSpec_key_signature.check


def _kcheck_safe(self, name, value):
    if not (name == 'key' and isinstance(value, str) and value.startswith('invalid')):
        _kcheck(self, name, value)


_meta.MetaSpec_key_signature.decode = _kdecode_safe
_meta.MetaSpec_key_signature.check = _kcheck_safe


def parse_key(sig):
    """mido key string ('Am', 'F#', 'Bbm') -> (tonic pc, minor)"""
    minor = sig.endswith('m')
    name = sig[:-1] if minor else sig
    pc = LETTER_PC[name[0]]
    for acc in name[1:]:
        pc += 1 if acc == '#' else -1 if acc == 'b' else 0
    return pc % 12, minor


def key_name(pc, minor):
    return PC_NAMES[pc] + (' minor' if minor else ' major')


def read_song(path):
    """(key signature strings, pitch-class durations in seconds, final bass pc or None)"""
    m = mido.MidiFile(path)
    sigs, notes = [], []  # notes: (onset_s, offset_s, key)
    active = collections.defaultdict(list)
    t = 0.0
    for msg in m:  # merged tracks, msg.time in seconds through the tempo map
        t += msg.time
        if msg.type == 'key_signature':
            sigs.append(msg.key)
        elif msg.type in ('note_on', 'note_off') and msg.channel != 9:
            k = (msg.channel, msg.note)
            if msg.type == 'note_on' and msg.velocity > 0:
                active[k].append(t)
            elif active[k]:
                notes.append((active[k].pop(0), t, msg.note))
    for (ch, note), starts in active.items():  # never released: sound to the end
        notes.extend((s, t, note) for s in starts)
    hist = np.zeros(12)
    for s, e, note in notes:
        hist[note % 12] += max(e - s, 0.0)
    bass = None
    if notes:
        last_on = max(s for s, _, _ in notes)
        sounding = [n for s, e, n in notes if s <= last_on and (e > last_on or s == last_on)]
        bass = min(sounding) % 12
    return sigs, hist, bass


def kk_best(hist):
    """(tonic pc, minor, r) of the highest Pearson correlation over the 24 rotated KK profiles"""
    best = None
    for minor, prof in ((False, KK_MAJOR), (True, KK_MINOR)):
        for tonic in range(12):
            r = float(np.corrcoef(hist, np.roll(prof, tonic))[0, 1])
            if best is None or r > best[2]:
                best = (tonic, minor, r)
    return best


def relative(pc, minor):
    return ((pc + 3) % 12, False) if minor else ((pc + 9) % 12, True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    truth = json.load(open(os.path.join(out, 'truth.json')))
    songs = collections.OrderedDict()
    for tr in truth['tracks']:
        key = (tr['package'], tr['source_midi'])
        stem = os.path.splitext(os.path.basename(tr['relative_path']))[0]
        s = songs.setdefault(key, {'package': tr['package'], 'source_midi': tr['source_midi'], 'stem': stem,
                                   'files': []})
        if tr['format'] == 'wav':
            s['files'].append(os.path.join('audio', tr['relative_path']))
    kept, rejected = [], []
    n_one_sig = 0
    for (pkg, src), s in songs.items():
        midi = os.path.join('midi', pkg, s['stem'] + '.mid')
        base = {'id': f'{pkg}/{s["stem"]}', 'package': pkg, 'midi': midi, 'source_midi': src,
                'files': sorted(s['files'])}
        sigs, hist, bass = read_song(os.path.join(out, midi))
        distinct = sorted(set(sigs))
        if not distinct:
            rejected.append({**base, 'check': 'signature', 'reason': 'no key_signature message'})
            continue
        bad = [k for k in distinct if k.startswith('invalid')]
        if bad:
            rejected.append({**base, 'signatures': distinct, 'check': 'signature',
                             'reason': f'key signature mido cannot name (sf, mi bytes {bad[0][7:]})'})
            continue
        if len(distinct) > 1:
            rejected.append({**base, 'signatures': distinct, 'check': 'signature',
                             'reason': f'{len(distinct)} distinct key signatures'})
            continue
        sig = distinct[0]
        n_one_sig += 1
        total = hist.sum()
        if total <= 0:
            rejected.append({**base, 'signature': sig, 'check': 'notes', 'reason': 'no non-drum note duration'})
            continue
        pc, minor = parse_key(sig)
        scale = MINOR_SCALE if minor else MAJOR_SCALE
        share = float(sum(hist[(pc + i) % 12] for i in scale) / total)
        kt, km, kr = kk_best(hist)
        info = {**base, 'key_pc': pc, 'minor': minor, 'signature': sig, 'scale_share': round(share, 4),
                'kk_key': key_name(kt, km), 'kk_r': round(kr, 4),
                'final_bass_pc': bass, 'histogram_s': [round(float(h), 3) for h in hist]}
        if share < MIN_SCALE_SHARE:
            rejected.append({**info, 'check': 'scale_share', 'reason': f'scale share {share:.2f} < {MIN_SCALE_SHARE} for {key_name(pc, minor)}'})
            continue
        if (kt, km) == (pc, minor):
            info['reason_kept'] = f'one signature; scale share {share:.2f}; KK agrees ({key_name(kt, km)})'
        elif (kt, km) == relative(pc, minor) and bass == pc:
            info['reason_kept'] = (f'one signature; scale share {share:.2f}; KK gives the relative key '
                                   f'{key_name(kt, km)} and the final bass note is the stated tonic {PC_NAMES[pc]}')
        else:
            why = 'relative key but final bass ' + (PC_NAMES[bass] if bass is not None else 'none') \
                if (kt, km) == relative(pc, minor) else 'another key'
            rejected.append({**info, 'check': 'kk', 'reason': f'KK gives {key_name(kt, km)} for signature {key_name(pc, minor)} ({why})'})
            continue
        kept.append(info)
    doc = {'meta': {'source': 'truth.json', 'paths': 'midi and files are relative to OUTDIR',
                    'rules': {'signature': 'exactly one distinct key_signature value in the file',
                              'scale_share': f'>= {MIN_SCALE_SHARE} of non-drum note seconds in the diatonic scale '
                                             '(minor: natural minor + raised 7th)',
                              'kk': 'Krumhansl-Kessler best key == stated key, or its relative key with the final '
                                    'bass note (lowest sounding at the last non-drum onset) on the stated tonic'}},
           'songs': kept, 'rejected': rejected}
    with open(os.path.join(out, 'key_truth.json.tmp'), 'w') as fh:
        json.dump(doc, fh, indent=1)
    os.replace(os.path.join(out, 'key_truth.json.tmp'), os.path.join(out, 'key_truth.json'))
    print(f'songs {len(songs)}, with one key signature {n_one_sig}, kept {len(kept)}')
    for pkg in sorted({p for p, _ in songs}):
        k = [x for x in kept if x['package'] == pkg]
        print(f'  {pkg:16s} songs {sum(1 for p, _ in songs if p == pkg):3d}  kept {len(k):3d} '
              f'({sum(not x["minor"] for x in k)} major, {sum(x["minor"] for x in k)} minor)')
    print(f'  major {sum(not x["minor"] for x in kept)}, minor {sum(x["minor"] for x in kept)}')
    labels = {'signature': 'key signature', 'notes': 'no notes', 'scale_share': f'scale share < {MIN_SCALE_SHARE}',
              'kk': 'KK key disagrees'}
    for check, label in labels.items():
        rs = collections.Counter(x['reason'] if check == 'signature' else label
                                 for x in rejected if x['check'] == check)
        for reason, n in rs.most_common():
            print(f'  rejected {n:3d}: {reason}')


if __name__ == '__main__':
    main()
