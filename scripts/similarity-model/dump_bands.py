#!/usr/bin/env python3
"""Collects the similarity dev sets into one manifest and dumps what the similarity model reads.

For every track: `naviscan analyze FILE --dj --dump-timbre-bands DUMP.f32` writes the log10 band
powers of each measured spectrum (Float32, 24 per spectrum) and DUMP.f32.json the stored feature
vector (`SonicFeatures`). Writes OUT/manifest.json:
  {"tracks": [{"id", "path", "set", "label", "source"}], "sets": {name: {"tracks", "labels", "sources"}}}

The sets (label / source):
  styles       rendered grooves, seeds 21-25 (make_tempo_corpus.py; 24-25 through TimGM6mb):
               the clip's style / the seed; one fixed program per role and style
  styles-wide  grooves of render_wide_styles.py, seeds 31-34 (31-32 FluidR3_GM, 33-34 TimGM6mb):
               each role's program drawn from its GM family, the kit from all eight
  modules      tracker songs of ../shared/modtempo (its modules.tsv only): the package / the package
  games        Ogg soundtracks of Debian game packages (build_games.sh): the package / the package
  soundtracks  the half of hedgewars' and supertuxkart's music that ../shared/corpus/build.sh takes:
               the game / the game
Nothing reserved for judging is read (docs/similarity.md, "How the model was chosen").
"""
import argparse
import concurrent.futures
import glob
import json
import os
import subprocess
import sys


def collect(args):
    tracks = []
    for name, folders in (("styles", args.styles), ("styles-wide", args.wide_styles)):
        for seed_dir in folders:
            truth = json.load(open(os.path.join(seed_dir, "truth.json")))
            seed = os.path.basename(os.path.normpath(seed_dir))
            for clip in truth["clips"]:
                tracks.append({"id": f"{name}/{seed}/{clip['name']}", "path": os.path.join(seed_dir, clip["file"]),
                               "set": name, "label": clip["style"], "source": seed})
    if args.modules:
        truth = json.load(open(os.path.join(args.modules, "truth.json")))
        for name, info in sorted(truth["tracks"].items()):
            if not name.endswith(".wav"):
                continue
            tracks.append({"id": f"modules/{name[:-4]}", "path": os.path.join(args.modules, name),
                           "set": "modules", "label": info["package"], "source": info["package"]})
    if args.games:
        labels = json.load(open(os.path.join(args.games, "labels.json")))
        for rel, info in sorted(labels["tracks"].items()):
            stem = os.path.splitext(os.path.basename(rel))[0]
            tracks.append({"id": f"games/{stem}", "path": os.path.join(args.games, rel),
                           "set": "games", "label": info["label"], "source": info["source"]})
    if args.soundtracks:
        for path in sorted(glob.glob(os.path.join(args.soundtracks, "*.ogg"))):
            stem = os.path.splitext(os.path.basename(path))[0]
            game = stem.split("_", 1)[0]
            tracks.append({"id": f"soundtracks/{stem}", "path": path, "set": "soundtracks", "label": game, "source": game})
    missing = [t["path"] for t in tracks if not os.path.exists(t["path"])]
    if missing:
        sys.exit(f"missing audio ({len(missing)}), e.g. {missing[0]}: build the sets first")
    sets = {}
    for t in tracks:
        s = sets.setdefault(t["set"], {"tracks": 0, "labels": set(), "sources": set()})
        s["tracks"] += 1
        s["labels"].add(t["label"])
        s["sources"].add(t["source"])
    return tracks, {k: {"tracks": v["tracks"], "labels": len(v["labels"]), "sources": len(v["sources"])} for k, v in sets.items()}


def dump(naviscan, track, out):
    target = os.path.join(out, track["id"] + ".f32")
    if os.path.exists(target) and os.path.exists(target + ".json"):
        return None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    run = subprocess.run([naviscan, "analyze", track["path"], "--dj", "--dump-timbre-bands", target],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return None if run.returncode == 0 else f"{track['path']}: {run.stderr.strip()[-300:]}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--naviscan", required=True)
    p.add_argument("--out", required=True, help="the dump folder (outside the repository)")
    p.add_argument("--styles", nargs="*", default=[], help="seed folders with truth.json")
    p.add_argument("--wide-styles", nargs="*", default=[], help="render_wide_styles.py's seed folders")
    p.add_argument("--modules", help="../shared/modtempo/build.sh's output folder")
    p.add_argument("--games", help="build_games.sh's output folder")
    p.add_argument("--soundtracks", help="../shared/corpus/build.sh's music/ogg folder")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    tracks, sets = collect(args)
    os.makedirs(args.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        errors = [e for e in pool.map(lambda t: dump(args.naviscan, t, args.out), tracks) if e]
    for e in errors:
        print(e, file=sys.stderr)
    manifest = {"tracks": tracks, "sets": sets}
    tmp = os.path.join(args.out, "manifest.json.tmp")
    json.dump(manifest, open(tmp, "w"), indent=1)
    os.replace(tmp, os.path.join(args.out, "manifest.json"))
    print(json.dumps(sets), f"errors: {len(errors)}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
