#!/usr/bin/env python3
"""Links the naviscan executable with the static Swift standard library from a release build's objects.

Usage: scripts/ci/link-static.py SCRATCH_PATH OUTPUT

CI compiles naviscan once, in the tests' release build (`swift build -c release --build-tests`: Swift
Testing has no static library, so that build cannot take --static-swift-stdlib). The two builds'
compile commands differ only in -static-stdlib, which changes the link, not the objects; so instead of
compiling every module a second time, this runs SwiftPM's own link command for the naviscan product
(read from SCRATCH_PATH/release.yaml, the manifest SwiftPM wrote for that build: libraries, linker
flags and the object list stay whatever Package.swift says) with -static-stdlib and OUTPUT as its -o.
`make build` outside CI still makes the static binary with `swift build --static-swift-stdlib`.
"""
import json
import os
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    scratch, output = sys.argv[1], sys.argv[2]
    manifest_path = os.path.join(scratch, "release.yaml")
    try:
        manifest = open(manifest_path, encoding="utf-8").read()
    except OSError as error:
        print(f"link-static: cannot read {manifest_path} ({error.strerror}); run `make build-tests` first", file=sys.stderr)
        return 1
    # The link command whose -o is the naviscan executable (naviscan-fuzz and the tests link too).
    args = None
    for block in re.finditer(r'^  "C\.[^"]*\.exe":\n(?:    .*\n)*?    args: (\[.*\])$', manifest, re.M):
        candidate = json.loads(block.group(1))
        if "-o" in candidate and os.path.basename(candidate[candidate.index("-o") + 1]) == "naviscan":
            args = candidate
    if args is None:
        print(f"link-static: {manifest_path} has no link command for the naviscan executable "
              "(has SwiftPM's manifest format changed?); build the static binary with "
              "`swift build -c release --static-swift-stdlib` instead", file=sys.stderr)
        return 1
    if "-o" not in args or "-emit-executable" not in args:
        print(f"link-static: the naviscan link command in {manifest_path} has no -o or -emit-executable", file=sys.stderr)
        return 1
    if "-static-stdlib" not in args:
        args.insert(args.index("-emit-executable"), "-static-stdlib")
    # What the static Foundation's module adds to the objects' link entries when they are compiled
    # with -static-stdlib (its C parts); objects compiled without it name only -lFoundation*.
    args += ["-lCoreFoundation", "-l_FoundationICU", "-l_FoundationCShims", "-l_FoundationCollections", "-lswiftSynchronization"]
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    # Linked beside the target and renamed: a half-written binary never stands at OUTPUT.
    temporary = output + ".linking"
    swiftpm_output = args[args.index("-o") + 1]
    args[args.index("-o") + 1] = temporary
    result = subprocess.run(args)
    if result.returncode != 0:
        print(f"link-static: the link failed (exit {result.returncode})", file=sys.stderr)
        return 1
    os.replace(temporary, output)
    # The resource folders SwiftPM puts beside its binaries (the web page's assets), where the binary
    # looks for them when it runs from a build folder.
    products = os.path.dirname(os.path.abspath(swiftpm_output))
    here = os.path.dirname(os.path.abspath(output))
    if products != here:
        for name in os.listdir(products):
            link = os.path.join(here, name)
            if name.endswith(".resources") and not os.path.lexists(link):
                os.symlink(os.path.join(products, name), link)
    return 0


if __name__ == "__main__":
    sys.exit(main())
