#!/usr/bin/env python3
"""Runs two naviscan builds on the same library and compares everything they store.

    scripts/tools/compare-builds.py OLD_NAVISCAN NEW_NAVISCAN [SCRATCH]

The library is the committed fixtures (every format, the broken and hostile files) in a few folders.
Each build runs, in turn in the same folder and with one job (so the change sequence is the same): a full scan, an unchanged re-scan, a scan after one file changed and one moved,
two shard scans and a merge, and `status --json`. Compared: every row of every table (less the
columns that hold the time of the run), every meta value (the last scan's time left out), every
output file byte for byte (profiles with `analyzed_at` left out) and the commands' JSON summaries
(timings left out). Prints the differences; exit 1 when there are any.
"""
import json, os, shutil, sqlite3, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Times of the run, the output files' stamps (their modification times), and what depends on commit
# order where it is not fixed: the merge's album pass runs one album per core, so the change
# sequence of rewritten rows (and the album digests made from it) follow the order albums finish.
TIMES = {"analyzed_at", "changed_at", "missing_since", "vis_stamp", "profile_stamp", "seq", "members_digest"}
SUMMARY_TIMES = {"wall_seconds", "x_realtime", "finished_at"}


def make_library(path):
    fixtures = os.path.join(ROOT, "Fixtures")
    for folder in ["mp3", "formats", "demo", "broken", "hostile"]:
        for name in sorted(os.listdir(os.path.join(fixtures, folder))):
            src = os.path.join(fixtures, folder, name)
            if os.path.isfile(src) and not name.endswith((".sh", ".md")):
                os.makedirs(os.path.join(path, folder), exist_ok=True)
                shutil.copy2(src, os.path.join(path, folder, name))


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        out = p.stdout
    return p.returncode, strip(out)


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in SUMMARY_TIMES and k not in TIMES and k != "disk_bytes"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def snapshot(out):
    db = sqlite3.connect(os.path.join(out, "naviscan.db"))
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'grdb%' AND name != 'meta' ORDER BY name")]
    rows = {}
    for table in tables:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        keep = [c for c in columns if c not in TIMES and not (table == "track" and c == "profile_json")]
        rows[table] = sorted(repr(r) for r in db.execute(f"SELECT {', '.join(keep)} FROM {table}"))
        if table == "track":
            rows["track.profile_json"] = sorted(repr((p, strip(json.loads(j)) if j else None))
                                                for p, j in db.execute("SELECT relative_path, profile_json FROM track"))
    meta = {}
    for name, value in db.execute("SELECT name, value FROM meta"):
        try:
            meta[name] = strip(json.loads(value))
        except ValueError:
            meta[name] = value
    meta.get("last_scan", {}).pop("by", None)  # the new build records who ran the scan
    files = {}
    for folder, _, names in os.walk(out):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, out)
            if rel.startswith("naviscan.db") or rel == "naviscan.lock":
                continue
            data = open(path, "rb").read()
            if name.endswith(".json"):
                data = json.dumps(strip(json.loads(data)), sort_keys=True)
            files[rel] = data
    return {"rows": rows, "meta": meta, "files": files}


def scenario(binary, scratch):
    lib, out = os.path.join(scratch, "Music"), os.path.join(scratch, "out")
    make_library(lib)
    steps = []
    steps.append(("scan", run(binary, ["scan", lib, "--out", out, "--json", "-j", "1"]), snapshot(out)))
    steps.append(("re-scan", run(binary, ["scan", lib, "--out", out, "--json", "-j", "1"]), snapshot(out)))
    os.utime(os.path.join(lib, "demo", "sweep_mono.flac"), (1_700_000_000, 1_700_000_000))
    os.rename(os.path.join(lib, "formats", "tagged.flac"), os.path.join(lib, "demo", "moved.flac"))
    steps.append(("changed", run(binary, ["scan", lib, "--out", out, "--json", "-j", "1"]), snapshot(out)))
    steps.append(("status", run(binary, ["status", lib, "--out", out, "--json"]), None))
    shards = []
    for k in range(2):
        shard_out = os.path.join(scratch, f"shard-{k}")
        shards.append(shard_out)
        steps.append((f"shard {k}", run(binary, ["scan", lib, "--out", shard_out, "--shard", f"{k}/2", "--json", "-j", "1"]), snapshot(shard_out)))
    merged = os.path.join(scratch, "merged")
    steps.append(("merge", run(binary, ["merge", merged] + shards + ["--json"]), snapshot(merged)))
    return steps


def main():
    old, new = sys.argv[1], sys.argv[2]
    scratch = sys.argv[3] if len(sys.argv) > 3 else "/tmp/naviscan-compare"
    shutil.rmtree(scratch, ignore_errors=True)
    # The same paths for both (they are recorded), one after the other; one job, so rows are
    # committed in the same order and take the same change sequence.
    a = scenario(old, scratch)
    shutil.rmtree(scratch)
    b = scenario(new, scratch)
    differences = 0
    for (name, result_a, snap_a), (_, result_b, snap_b) in zip(a, b):
        if result_a != result_b:
            differences += 1
            print(f"{name}: command output differs\n  old {result_a}\n  new {result_b}")
        if snap_a is None:
            continue
        for part in ["rows", "meta", "files"]:
            x, y = snap_a[part], snap_b[part]
            for key in sorted(set(x) | set(y)):
                if x.get(key) != y.get(key):
                    differences += 1
                    old, new_ = x.get(key), y.get(key)
                    if isinstance(old, list) and isinstance(new_, list):
                        old, new_ = sorted(set(old) - set(new_)), sorted(set(new_) - set(old))
                    print(f"{name}: {part} {key} differs\n  old {str(old)[:600]}\n  new {str(new_)[:600]}")
        print(f"{name}: exit {result_a[0]} / {result_b[0]}, {len(snap_a['files'])} files, "
              f"{sum(len(v) for v in snap_a['rows'].values())} rows compared")
    print("identical" if differences == 0 else f"{differences} differences")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
