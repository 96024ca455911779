#!/usr/bin/env python3
"""Runs `naviscan analyze --dj --dump-key-features` over the key dev set and writes a manifest.

The dev set: clips rendered by ../shared/tempo/make_tempo_corpus.py (their truth's `key_pc` and
`minor`; one source per generator seed) and the MIDI dev songs whose one key signature agrees with
their notes (scripts/key-model/key_truth.py; one source per Debian package, every render of a
song in its song's source). Nothing reserved for judging (docs/key-model.md) may be listed here.

usage: dump_features.py --naviscan BIN --out DIR [--grooves SEEDDIR ...] [--midi KEY_TRUTH_JSON]
"""
import argparse, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor


def items(args):
    for d in args.grooves or []:
        truth = json.load(open(os.path.join(d, 'truth.json')))
        source = 'grooves-' + os.path.basename(os.path.normpath(d))
        for clip in truth['clips']:
            name = clip['name']
            if clip.get('key_pc') is None:
                continue
            yield dict(id=f'{source}/{name}', source=source, song=f'{source}/{name}', path=os.path.join(d, clip['file']),
                       key_pc=clip['key_pc'], minor=bool(clip['minor']), style=clip.get('style'))
    if args.midi:
        truth = json.load(open(args.midi))
        base = os.path.dirname(os.path.abspath(args.midi))
        for song in truth['songs']:
            for f in song['files']:
                path = f if os.path.isabs(f) else os.path.join(base, f)
                # audio/<soundfont>/<package>/<stem>.wav: the soundfont names the render.
                render = os.path.basename(os.path.dirname(os.path.dirname(path)))
                yield dict(id=f"midi-{song['package']}/{song['id']}/{render}", source='midi-' + song['package'],
                           song=f"midi-{song['package']}/{song['id']}", path=path,
                           key_pc=song['key_pc'], minor=bool(song['minor']), style='midi')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--naviscan', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--grooves', nargs='*')
    ap.add_argument('--midi')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    todo = list(items(a))

    def run(item):
        dump = os.path.join(a.out, item['id'].replace('/', '__') + '.json')
        if not os.path.exists(dump):
            r = subprocess.run([a.naviscan, 'analyze', item['path'], '--dj', '--dump-key-features', dump],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                print(f"{item['path']}: {r.stderr.strip()}", file=sys.stderr)
                return None
        return dict(item, dump=os.path.basename(dump))

    with ThreadPoolExecutor(a.jobs) as ex:
        done = [r for r in ex.map(run, todo) if r]
    json.dump(done, open(os.path.join(a.out, 'manifest.json'), 'w'), indent=1)
    print(f'{len(done)} of {len(todo)} dumped into {a.out}', file=sys.stderr)


if __name__ == '__main__':
    main()
