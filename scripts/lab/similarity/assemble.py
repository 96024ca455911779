#!/usr/bin/env python3
"""assemble.py OUTDIR seed1=TRUTH.json [seed2=TRUTH.json ...] --modtempo TRUTH.json

Called by build.sh: lays the rendered WAVs out as one music library and writes OUTDIR/labels.json.

  styles:   every clip of each make_tempo_corpus.py truth.json (its WAV) ->
            OUTDIR/library/styles/<seedN>/<name>.wav, label = clip style, source = seedN
  packages: every WAV track of modtempo's truth.json ->
            OUTDIR/library/packages/<package>/<name>.wav, label = source = Debian package

Files are hard-linked (copied when linking fails). A file whose sample peak is below -60 dBFS is
silent and left out (listed in meta.skipped_silent); beatless ambient clips are kept. Library files
that are not in the new labels.json are removed, so the library always matches it.
labels.json = {"tracks": {"library/<group>/<source>/<file>": {"label", "group", "source", "from"}},
               "meta": {...counts...}}; paths are relative to OUTDIR.
"""
import argparse
import collections
import json
import os
import shutil
import sys

import numpy as np
import soundfile as sf

SILENT_DBFS = -60.0


def peak_dbfs(path):
    peak = 0.0
    with sf.SoundFile(path) as f:
        for block in f.blocks(blocksize=1 << 16, dtype='float32', always_2d=True):
            if len(block):
                peak = max(peak, float(np.max(np.abs(block))))
    return 20 * np.log10(peak) if peak > 0 else float('-inf')


def place(src, dst):
    """Hard link src at dst (copy if linking fails); keep dst if it already is src."""
    if os.path.exists(dst):
        a, b = os.stat(src), os.stat(dst)
        if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) or (a.st_size == b.st_size and a.st_mtime <= b.st_mtime):
            return
        os.remove(dst)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst + '.tmp')
        os.replace(dst + '.tmp', dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('styles', nargs='+', metavar='SOURCE=TRUTH.json', help='make_tempo_corpus.py truth per seed')
    ap.add_argument('--modtempo', required=True, help="modtempo build.sh's truth.json")
    a = ap.parse_args()
    out = os.path.abspath(a.outdir)
    items = []  # (relpath, src, label, group, source)
    for spec in a.styles:
        source, truth = spec.split('=', 1)
        base = os.path.dirname(os.path.abspath(truth))
        for c in json.load(open(truth))['clips']:
            src = os.path.join(base, c['file'])
            rel = f"library/styles/{source}/{os.path.basename(c['file'])}"
            items.append((rel, src, c['style'], 'styles', source))
    base = os.path.dirname(os.path.abspath(a.modtempo))
    for name, t in sorted(json.load(open(a.modtempo))['tracks'].items()):
        if not name.endswith('.wav'):
            continue  # one encoding per song: the MP3 of each render is left out (see README)
        pkg = t['package']
        items.append((f'library/packages/{pkg}/{name}', os.path.join(base, name), pkg, 'packages', pkg))

    tracks, silent = {}, []
    for rel, src, label, group, source in items:
        if rel in tracks:
            sys.exit(f'assemble: two files map to {rel}')
        p = peak_dbfs(src)
        if p < SILENT_DBFS:
            silent.append({'file': rel, 'peak_dbfs': None if p == float('-inf') else round(p, 1)})
            print(f'skip silent {rel} (peak {p:.1f} dBFS)', file=sys.stderr)
            continue
        place(src, os.path.join(out, rel))
        tracks[rel] = {'label': label, 'group': group, 'source': source,
                       'from': os.path.relpath(src, out)}

    # remove library files that are not labelled any more (older runs, changed settings)
    lib = os.path.join(out, 'library')
    for root, dirs, files in os.walk(lib, topdown=False):
        for fn in files:
            rel = os.path.relpath(os.path.join(root, fn), out)
            if rel not in tracks:
                print(f'remove stale {rel}', file=sys.stderr)
                os.remove(os.path.join(root, fn))
        if root != lib and not os.listdir(root):
            os.rmdir(root)

    counts = collections.defaultdict(lambda: collections.Counter())
    for t in tracks.values():
        counts[t['group']][t['label']] += 1
    meta = {
        'what': 'labelled dev set for sonic similarity (naviscan issue 29): rendered grooves by style '
                '(shared/tempo/make_tempo_corpus.py) and tracker songs by Debian package '
                '(shared/modtempo/build.sh); WAV, 44.1 kHz 16-bit stereo',
        'paths': 'relative to this file\'s folder; the library is its library/ folder',
        'silent_threshold_dbfs': SILENT_DBFS,
        'skipped_silent': silent,
        'counts': {g: {'tracks': sum(c.values()), 'labels': dict(sorted(c.items()))} for g, c in sorted(counts.items())},
        'total': len(tracks),
    }
    doc = {'tracks': dict(sorted(tracks.items())), 'meta': meta}
    tmp = os.path.join(out, 'labels.json.tmp')
    with open(tmp, 'w') as fh:
        json.dump(doc, fh, indent=1)
        fh.write('\n')
    os.replace(tmp, os.path.join(out, 'labels.json'))
    print('labels: ' + ', '.join(f"{g} {m['tracks']} tracks / {len(m['labels'])} labels"
                                 for g, m in meta['counts'].items()) + f', {len(silent)} silent skipped',
          file=sys.stderr)


if __name__ == '__main__':
    main()
