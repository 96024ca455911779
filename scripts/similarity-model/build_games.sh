#!/bin/bash
# build_games.sh [OUTDIR] -- builds the "games" similarity dev set: real game soundtracks from
# Debian packages, labelled by package (dump_bands.py --games OUTDIR reads it).
#
# OUTDIR (default $HOME/.cache/naviscan-simdev/games; must be outside the repository) gets:
#   _debs/      the .deb files (`apt-get download`, Debian bookworm; kept and reused; 1.2 GB)
#   _extract/   PKG/ with only the music files of each package (dpkg-deb --fsys-tarfile | tar -x
#               --wildcards ...), reused while PKG/.done names the .deb it came from
#   library/    PKG/PKG__BASENAME.ogg: up to 8 tracks per game, hard links to (or copies of) the
#               original Ogg Vorbis files; nothing is transcoded
#   labels.json {"tracks": {"library/PKG/FILE": {"label": PKG, "group": "games", "source": PKG,
#               "origin": path in the package, "seconds": duration}},
#               "meta": {"packages": {PKG: {"version", "count", "minutes"}}, ...}}
# Selection (select_games.py, deterministic): the files under each package's music folder (the
# table below), Ogg Vorbis or FLAC by content (ffprobe), at least 60 s long; not a symlink, not a
# byte-identical copy of an earlier file (sha256), not a jingle/stinger/fanfare or a "_fast" variant;
# sorted by path, and when more than 8 remain, 8 evenly spaced ones. library/ and labels.json are
# rebuilt in a scratch folder and swapped in, so a second run only re-selects (seconds).
#
# The packages: one game per package, label = package name, each with at least 4 qualifying tracks
# and music shipped as Ogg recordings (no tracker modules). Never used here: the packages reserved for
# judging (amoebax-data, ardentryst, colobot-common-sounds, extremetuxracer-data, fillets-ng-data,
# hyperrogue-music, kobodeluxe-data, lordsawar-data, marsshooter-data, pangzero, plee-the-bear-data,
# singularity-music, starfighter-data, trackballs-data, xmoto-data, wesnoth*, openarena*) and those
# used by other sets (hedgewars-data, supertuxkart-data). Checked and left out (bookworm):
#   too few music tracks of >= 60 s: lincity-ng-data (3), lugaru-data (3), gigalomania-data (2),
#     caveexpress-data, funnyboat, performous, scorched3d-data, freeorion-data, glob2-data (53 s),
#     tuxmath-data, tuxtype-data, mu-cade-data, titanion-data, rrootage-data, a7xpg-data, gunroar-data,
#     tumiki-fighters-data, powermanga-data, freeciv-data, manaplus-data, gnujump-data, sdl-ball-data;
#   no Ogg music: neverball-data (it is in neverball-common), chromium-bsu-data, holotz-castle-data,
#     7kaa-data, hex-a-hop, stormbaancoureur-data, pink-pony-data, gcompris-qt-data, netpanzer-data,
#     pokerth-data, spacezero, dreamchess-data, blockattack, berusky-data, opencity-data,
#     alienblaster-data (WAV), asc-music (MP3), xblast-tnt-musics (raw), endless-sky-data, boswars-data;
#   tracker modules: pingus-data, pachi-data, ri-li-data, solarwolf;
#   music inside an archive: nexuiz-music (music.pk3), ufoai-music (0music.pk3), trigger-rally-data
#     (data.zip); cube2-data: one music track;
#   Opus, not Vorbis/FLAC: warzone2100-music;
#   no one soundtrack: freedink-data (its Ogg files replace MIDI songs: a cello Ave Maria, Mendelssohn's
#     violin concerto, FluidSynth renders...);
#   marginal: parsec47-data and torus-trooper-data (four 60 s loops each, same studio as noiz2sa),
#     planetblupi-music-ogg (10-29 minute looped renders of MIDI songs).
# Runs under nice -n 19. Needs apt-get, dpkg-deb, ffprobe (apt-get install ffmpeg if missing), python3.
set -euo pipefail
if [ "${NAVISCAN_GAMES_NICE:-}" != 1 ]; then
    NAVISCAN_GAMES_NICE=1 exec nice -n 19 bash "$0" "$@"
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${1:-$HOME/.cache/naviscan-simdev/games}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$ROOT"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
START=$SECONDS

# package <TAB> music files in the package (tar wildcards, space-separated) <TAB> extra exclude regex
PACKAGES="\
blobwars-data	./usr/share/games/blobwars/music/*	\.tags$
btanks-data	./usr/share/games/btanks/data/tunes/*.ogg	-
drascula-music	./usr/share/scummvm/drascula/audio/*.ogg	-
enigma-data	./usr/share/games/enigma/music/*.ogg	-
flare-game	./usr/share/games/flare/mods/*/music/*.ogg	ambient
freecol	./usr/share/games/freecol/default/resources/music/*.ogg	-
freedroidrpg-data	./usr/share/freedroidrpg/data/sound/music/*.ogg	-
megaglest-data	./usr/share/games/megaglest/*/music/*.ogg	-
neverball-common	./usr/share/games/neverball/bgm/*.ogg	-
noiz2sa-data	./usr/share/games/noiz2sa/sounds/*.ogg	-
openclonk-data	./usr/share/games/openclonk/Music.ocg/*.ogg	-
supertux-data	./usr/share/games/supertux2/music/*.ogg	-
zaz-data	./usr/share/games/zaz/*.ogg	-"

if ! command -v ffprobe >/dev/null; then
    echo "ffprobe missing: installing ffmpeg"
    apt-get install -y -qq ffmpeg >/dev/null
fi

mkdir -p "$OUT/_debs" "$OUT/_extract"
# newest .deb of a package in _debs (empty when none)
deb_of() {
    local best="" v bv f
    for f in "$OUT/_debs/$1"_*.deb; do
        [ -e "$f" ] || continue
        v="$(dpkg-deb -f "$f" Version)"
        if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$bv"; then best="$f"; bv="$v"; fi
    done
    echo "$best"
}

# 1. download what is missing
missing=()
while IFS=$'\t' read -r pkg _ _; do
    [ -n "$(deb_of "$pkg")" ] || missing+=("$pkg")
done <<< "$PACKAGES"
if [ ${#missing[@]} -gt 0 ]; then
    echo "downloading ${#missing[@]} package(s): ${missing[*]}"
    # (root downloads into a folder _apt cannot write: apt warns "unsandboxed"; harmless, not shown)
    download() { (cd "$OUT/_debs" && apt-get download -q "$@" 2>&1 | { grep -v 'unsandboxed' || true; }); }
    if ! download "${missing[@]}"; then
        echo "download failed; apt-get update and retry"
        apt-get update -qq
        download "${missing[@]}"
    fi
else
    echo "all $(wc -l <<< "$PACKAGES") packages already downloaded"
fi

# 2. extract only the music files (again only when the .deb changed); drop packages no longer listed
for dir in "$OUT/_extract"/*/; do
    [ -d "$dir" ] || continue
    grep -q "^$(basename "$dir")	" <<< "$PACKAGES" || { echo "removing $dir (not listed)"; rm -rf "$dir"; }
done
TABLE="$OUT/_extract/packages.tsv"
: > "$TABLE.new"
while IFS=$'\t' read -r pkg globs exclude; do
    deb="$(deb_of "$pkg")"
    [ -n "$deb" ] || { echo "no .deb for $pkg after download" >&2; exit 1; }
    version="$(dpkg-deb -f "$deb" Version)"
    dir="$OUT/_extract/$pkg"
    if [ "$(cat "$dir/.done" 2>/dev/null)" != "$(basename "$deb")" ]; then
        echo "extracting $pkg $version"
        rm -rf "$dir"
        mkdir -p "$dir"
        read -r -a patterns <<< "$globs"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" --wildcards "${patterns[@]}"
        basename "$deb" > "$dir/.done"
    fi
    printf '%s\t%s\t%s\t%s\n' "$pkg" "$version" "$(du -k "$deb" | cut -f1)" "$exclude" >> "$TABLE.new"
done <<< "$PACKAGES"
mv "$TABLE.new" "$TABLE"

# 3-4. select, link into library/, write labels.json (scratch folder, then swapped in)
python3 "$HERE/select_games.py" --out "$OUT" --table "$TABLE"
echo "downloads: $(du -sh "$OUT/_debs" | cut -f1) in $OUT/_debs; done in $((SECONDS - START)) s"
