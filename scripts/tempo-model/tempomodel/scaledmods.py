"""Tempo-scaled renders of the tracker modules: the module set's songs at other tempi.

  python3 -m tempomodel.scaledmods MODTEMPO_DIR OUT_DIR

For every module of MODTEMPO_DIR/truth.json (../shared/modtempo/build.sh's output, whose work/modules
holds the module files), four renders at other tempi, drawn as `tempomodel.scaled` draws them from the
stated tempo folded into 60-200 BPM; libopenmpt plays the module faster or slower (`openmpt123 --tempo
FACTOR`, pitch unchanged), the first EXCERPT_S seconds. OUT_DIR/truth.json has the module set's
format, the stated tempo scaled (plus `factor` and `original`); a copy's package is its module's.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import scaled


def fold(t, lo=60.0, hi=200.0):
    while t > hi:
        t /= 2
    while t < lo:
        t *= 2
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('modtempo_dir')
    ap.add_argument('out_dir')
    a = ap.parse_args()
    truth = json.load(open(os.path.join(a.modtempo_dir, 'truth.json')))['tracks']
    modules = os.path.join(a.modtempo_dir, 'work', 'modules')
    os.makedirs(a.out_dir, exist_ok=True)
    out = {}
    for name, t in sorted(truth.items()):
        if not name.endswith('.wav'):
            continue
        stem = name[:-4]
        files = [f for f in os.listdir(modules) if os.path.splitext(f)[0] == stem]
        if len(files) != 1:
            sys.exit(f'scaledmods: no single module file for {stem} in {modules}')
        src = os.path.join(modules, files[0])
        seed = int(hashlib.md5(open(src, 'rb').read()).hexdigest()[:12], 16)
        for target in scaled.targets(fold(t['bpm']), seed):
            factor = target / fold(t['bpm'])
            copy = f'{stem}@{target:.0f}.wav'
            wav = os.path.join(a.out_dir, copy)
            if not os.path.exists(wav):
                tmp = tempfile.mkdtemp(dir=a.out_dir)
                try:
                    shutil.copy(src, tmp)
                    subprocess.run(['openmpt123', '--quiet', '--render', '--force', '--subsong', '0', '--repeat', '0',
                                    '--tempo', f'{factor:.6f}', '--end-time', str(scaled.EXCERPT_S), '--samplerate', '44100',
                                    '--channels', '2', '--no-float', '--dither', '0', '--output-type', 'wav', files[0]],
                                   cwd=tmp, check=True, stdout=subprocess.DEVNULL)
                    os.replace(os.path.join(tmp, files[0] + '.wav'), wav)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            out[copy] = dict(t, bpm=round(t['bpm'] * factor, 4), factor=round(factor, 6), original=name)
    doc = dict(meta=dict(generator='tempomodel.scaledmods', version=1, excerpt_s=scaled.EXCERPT_S,
                         source=os.path.abspath(a.modtempo_dir)), tracks=out)
    with open(os.path.join(a.out_dir, 'truth.json.tmp'), 'w') as f:
        json.dump(doc, f, indent=1)
    os.replace(os.path.join(a.out_dir, 'truth.json.tmp'), os.path.join(a.out_dir, 'truth.json'))
    print(f'# {len(out)} scaled renders of {sum(n.endswith(".wav") for n in truth)} modules', file=sys.stderr)


if __name__ == '__main__':
    main()
