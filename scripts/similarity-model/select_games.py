#!/usr/bin/env python3
"""Picks the tracks of the games dev set from build_games.sh's extraction; writes library/ and labels.json.

Reads TABLE (package, version, .deb size in KiB, extra exclude regex or "-"; one line each, tab-separated)
and OUT/_extract/PACKAGE/. Per package, the candidates are the extracted regular files (symlinks are
skipped) that ffprobe reads as Ogg Vorbis or FLAC of at least --min-seconds, whose name is not a
jingle/stinger/fanfare or a "fast" variant and does not match the package's exclude regex, and that are
not byte-identical (sha256) to an earlier candidate. Sorted by path inside the package; when more than
--per-game remain, --per-game evenly spaced ones are taken. Each is hard-linked (copied when linking
fails) to library/PACKAGE/PACKAGE__BASENAME.EXT (EXT: ogg for Ogg, flac for FLAC; the parent folder's
name is added when two basenames collide). library/ and labels.json are written beside the old ones
and then swapped in.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = re.compile(r"jingle|stinger|\bsting\b|fanfare|(^|[-_ ])fast([-_ .]|$)", re.I)


def probe(path):
    """(container, codec, seconds) or None when ffprobe cannot read it."""
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0",
                        "-show_entries", "format=format_name,duration:stream=codec_name", "-of", "json", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    info = json.loads(r.stdout or "{}")
    fmt, streams = info.get("format", {}), info.get("streams", [])
    if not streams or "duration" not in fmt:
        return None
    return fmt.get("format_name", ""), streams[0].get("codec_name", ""), float(fmt["duration"])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def evenly(items, k):
    n = len(items)
    if n <= k:
        return list(items)
    return [items[int((i + 0.5) * n / k)] for i in range(k)]


def candidates(root, exclude, min_seconds, log):
    files = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            path = os.path.join(d, name)
            if name.startswith(".") or os.path.islink(path) or not os.path.isfile(path):
                continue
            files.append(os.path.relpath(path, root))
    files.sort()
    seen, keep = {}, []
    for rel in files:
        stem = os.path.splitext(os.path.basename(rel))[0]
        if exclude and re.search(exclude, rel, re.I):
            continue
        if SKIP.search(stem):
            log.append(f"skip {rel}: jingle/variant name")
            continue
        p = probe(os.path.join(root, rel))
        if p is None or not ((p[0] == "ogg" and p[1] == "vorbis") or (p[0] == "flac" and p[1] == "flac")):
            log.append(f"skip {rel}: not Ogg Vorbis/FLAC ({p[0] + '/' + p[1] if p else 'unreadable'})")
            continue
        if p[2] < min_seconds:
            continue
        digest = sha256(os.path.join(root, rel))
        if digest in seen:
            log.append(f"skip {rel}: same bytes as {seen[digest]}")
            continue
        seen[digest] = rel
        keep.append((rel, p[0], p[2]))
    return keep


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--per-game", type=int, default=8)
    ap.add_argument("--min-seconds", type=float, default=60.0)
    ap.add_argument("--min-tracks", type=int, default=4, help="fail when a package has fewer")
    args = ap.parse_args()

    rows = [line.rstrip("\n").split("\t") for line in open(args.table) if line.strip()]
    new_lib = os.path.join(args.out, ".library.new")
    shutil.rmtree(new_lib, ignore_errors=True)
    tracks, packages, short = {}, {}, []
    for pkg, version, deb_kib, exclude in rows:
        root = os.path.join(args.out, "_extract", pkg)
        log = []
        found = candidates(root, None if exclude == "-" else exclude, args.min_seconds, log)
        chosen = evenly(found, args.per_game)
        names = {}
        for rel, _, _ in chosen:
            names.setdefault(os.path.basename(rel), []).append(rel)
        os.makedirs(os.path.join(new_lib, pkg))
        seconds = 0.0
        for rel, container, dur in chosen:
            base, ext = os.path.splitext(os.path.basename(rel))
            if len(names[os.path.basename(rel)]) > 1:
                base = os.path.basename(os.path.dirname(rel)) + "_" + base
            name = f"{pkg}__{base}.{'flac' if container == 'flac' else 'ogg'}"
            dst = os.path.join(new_lib, pkg, name)
            try:
                os.link(os.path.join(root, rel), dst)
            except OSError:
                shutil.copy2(os.path.join(root, rel), dst)
            tracks[f"library/{pkg}/{name}"] = {"label": pkg, "group": "games", "source": pkg,
                                               "origin": "/" + rel, "seconds": round(dur, 1)}
            seconds += dur
        packages[pkg] = {"version": version, "count": len(chosen), "minutes": round(seconds / 60, 1),
                         "candidates": len(found), "deb_mb": round(int(deb_kib) / 1024, 1)}
        print(f"  {pkg:20s} {version:24s} {len(chosen):2d} of {len(found):2d} tracks, {seconds / 60:5.1f} min")
        for line in log:
            print(f"    {line}")
        if len(chosen) < args.min_tracks:
            short.append(pkg)
    if short:
        shutil.rmtree(new_lib, ignore_errors=True)
        sys.exit(f"fewer than {args.min_tracks} tracks: {', '.join(short)}")

    labels = {"tracks": dict(sorted(tracks.items())),
              "meta": {"packages": packages, "group": "games", "per_game": args.per_game,
                       "min_seconds": args.min_seconds, "built_by": "scripts/similarity-model/build_games.sh"}}
    tmp = os.path.join(args.out, ".labels.json.new")
    with open(tmp, "w") as f:
        json.dump(labels, f, indent=1)
        f.write("\n")
    lib, old = os.path.join(args.out, "library"), os.path.join(args.out, ".library.old")
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(lib):
        os.rename(lib, old)
    os.rename(new_lib, lib)
    os.replace(tmp, os.path.join(args.out, "labels.json"))
    shutil.rmtree(old, ignore_errors=True)
    total = sum(p["minutes"] for p in packages.values())
    print(f"wrote {len(tracks)} tracks of {len(packages)} games ({total:.0f} min) to {lib} and labels.json")


if __name__ == "__main__":
    main()
