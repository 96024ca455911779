#!/usr/bin/env python3
"""Renders grooves of ../shared/tempo/make_tempo_corpus.py with a wide palette, for the styles dev set.

The generator's dev palette gives each style one fixed General MIDI program per role, so a style's
label there is also its instruments: a timbre model looks perfect on it and learns nothing about
style. Here each role draws its program from the whole GM family of the dev program (the 8 programs
of that family: any bass, any organ, any synth pad...) and the kit from all eight drum kits, and the
soundfont is chosen (--font). Everything else (styles, tempi, patterns, truth.json) is the generator's.

  render_wide_styles.py --shared ../shared --seed 31 --count 60 --font /usr/share/sounds/sf2/TimGM6mb.sf2 --out DIR
Reserved synthesisers (TiMidity++, freepats, the csound soundfont) are never used.
"""
import argparse
import importlib.util
import os
import sys

KITS = [0, 8, 16, 24, 25, 32, 40, 48]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, default=60)
    p.add_argument("--font", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    if any(word in args.font.lower() for word in ("timidity", "freepats", "csound")):
        sys.exit(f"{args.font} is reserved for judging")
    spec = importlib.util.spec_from_file_location("make_tempo_corpus", os.path.join(args.shared, "tempo", "make_tempo_corpus.py"))
    generator = importlib.util.module_from_spec(spec)
    sys.modules["make_tempo_corpus"] = generator   # its worker processes find it by name
    spec.loader.exec_module(generator)
    generator.SF2 = args.font
    for style, roles in generator.PALETTE.items():
        for role, (dev, _) in roles.items():
            family = KITS if role == "kit" else sorted({q for p in dev for q in range(p // 8 * 8, p // 8 * 8 + 8)})
            roles[role] = (family, [])
    sys.argv = ["make_tempo_corpus.py", "--seed", str(args.seed), "--count", str(args.count), "--out", args.out,
                "--jobs", str(args.jobs), "--prefix", f"wide{args.seed}"]
    generator.main()


if __name__ == "__main__":
    main()
