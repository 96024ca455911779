#!/usr/bin/env bash
# Regenerates Fixtures/formats/: the formats naviscan decodes through libavformat/libavcodec, and one
# tagged file per tag format. Needs Debian's ffmpeg, wavpack, python3-mutagen (tags) and libjmac-java
# with a JRE (default-jre-headless): Debian's ffmpeg has no Monkey's Audio encoder, jmac has one.
# Every signal is computed here with exact integer samples, so the tests can recompute it.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p formats
PY=/usr/bin/python3   # Debian's python3, which has python3-mutagen

# sine.wav — 3.000 s (132,300 frames) at 44.1 kHz, 16-bit: left round(3276.8 sin(2π·997·n/44100)),
# right its negation (a swapped pair shows), -20 dBFS each: -20.00 LUFS.
# click.wav — 0.5 s silence, 2 s of the same sine on both channels, silence, one sample of 16384
# (-6 dBFS) on both channels at frame 121,275 (2.750 s), silence to 132,300 frames.
$PY - "$tmp" <<'EOF'
import math, struct, sys, wave
out = sys.argv[1]
def write(name, frames):
    w = wave.open(f"{out}/{name}", "wb"); w.setnchannels(2); w.setsampwidth(2); w.setframerate(44100)
    w.writeframes(b"".join(struct.pack("<hh", l, r) for l, r in frames)); w.close()
def sine(n): return round(3276.8 * math.sin(2 * math.pi * 997 * n / 44100))
write("sine.wav", [(sine(n), -sine(n)) for n in range(132300)])
click = []
for n in range(132300):
    v = sine(n) if 22050 <= n < 110250 else 0
    if n == 121275: v = 16384
    click.append((v, v))
write("click.wav", click)
EOF

# AAC-LC: ffmpeg's encoder primes 1024 samples. aac_itunsmpb.m4a has no edit list, only Apple's
# iTunSMPB tag (priming 0x400, padding 0x334 to 131 frames of 1024, 132,300 samples); aac_editlist.m4a has ffmpeg's edit list.
ffmpeg -v error -y -i "$tmp/click.wav" -c:a aac -b:a 128k -movflags +faststart -use_editlist 0 formats/aac_itunsmpb.m4a
ffmpeg -v error -y -i "$tmp/click.wav" -c:a aac -b:a 128k -movflags +faststart formats/aac_editlist.m4a
ffmpeg -v error -y -i "$tmp/sine.wav" -c:a alac -movflags +faststart formats/alac.m4a
ffmpeg -v error -y -i "$tmp/sine.wav" -c:a wmav2 -b:a 128k formats/wma.wma
ffmpeg -v error -y -i "$tmp/sine.wav" formats/tta.tta
wavpack -q -y "$tmp/sine.wav" -o formats/wavpack.wv
java -jar /usr/share/java/jmac.jar c2 "$tmp/sine.wav" formats/monkeys.ape > /dev/null
# Opus in Matroska (not Ogg): libsndfile does not read it, libavformat does.
ffmpeg -v error -y -i "$tmp/sine.wav" -c:a libopus -b:a 96k formats/opus.mka

# Tagged files of the formats libsndfile and libmpg123 decode (their tags are read by libavformat).
sox -n -r 44100 -c 1 -b 16 -D "$tmp/short.wav" synth 0.5 sine 997 vol 0.1
lame --quiet -V 6 "$tmp/short.wav" formats/tagged.mp3
sox "$tmp/short.wav" formats/tagged.flac
sox "$tmp/short.wav" -C 2 formats/tagged.ogg
ffmpeg -v error -y -i "$tmp/short.wav" -c:a libopus -b:a 48k formats/tagged.opus

# The same tags in every file, written the way taggers write them (Picard's names).
$PY - <<'EOF'
from mutagen.mp4 import MP4, MP4FreeForm
from mutagen.asf import ASF
from mutagen.apev2 import APEv2
from mutagen.id3 import ID3, TIT2, TPE1, TALB, TPE2, TPOS, TRCK, TDRC, TCON, TBPM, TXXX, UFID
from mutagen.flac import FLAC
from mutagen.oggvorbis import OggVorbis
from mutagen.oggopus import OggOpus

T = dict(title="Sine à 997 Hz", artist="Test Artist", album="Known Signals", album_artist="Various Artists",
         disc="1/2", track="3/12", year="2024", genre="Test Tone",
         mb_track="5f4f0f49-3c2b-4a38-9b6e-0a7d1b2c3d4e", mb_album="0c3e8a2e-1d4b-4e6f-8a9b-1c2d3e4f5a6b",
         rg_track_gain="-6.50 dB", rg_track_peak="0.100006", rg_album_gain="-7.25 dB", rg_album_peak="0.125000",
         bpm="128")

def mp4(path):
    f = MP4(path)
    f["\xa9nam"] = T["title"]; f["\xa9ART"] = T["artist"]; f["\xa9alb"] = T["album"]; f["aART"] = T["album_artist"]
    f["disk"] = [(1, 2)]; f["trkn"] = [(3, 12)]; f["\xa9day"] = T["year"]; f["\xa9gen"] = T["genre"]; f["tmpo"] = [128]
    for key, name in [("mb_track", "MusicBrainz Track Id"), ("mb_album", "MusicBrainz Album Id"),
                      ("rg_track_gain", "replaygain_track_gain"), ("rg_track_peak", "replaygain_track_peak"),
                      ("rg_album_gain", "replaygain_album_gain"), ("rg_album_peak", "replaygain_album_peak")]:
        f["----:com.apple.iTunes:" + name] = [MP4FreeForm(T[key].encode())]
    if path.endswith("itunsmpb.m4a"):
        f["----:com.apple.iTunes:iTunSMPB"] = [MP4FreeForm(
            b" 00000000 00000400 00000334 00000000000204CC" + b" 00000000" * 8)]
    f.save()

def ape(path):
    f = APEv2()
    for key, name in [("title", "Title"), ("artist", "Artist"), ("album", "Album"), ("album_artist", "Album Artist"),
                      ("disc", "Disc"), ("track", "Track"), ("year", "Year"), ("genre", "Genre"),
                      ("mb_track", "MUSICBRAINZ_TRACKID"), ("mb_album", "MUSICBRAINZ_ALBUMID"),
                      ("rg_track_gain", "REPLAYGAIN_TRACK_GAIN"), ("rg_track_peak", "REPLAYGAIN_TRACK_PEAK"),
                      ("rg_album_gain", "REPLAYGAIN_ALBUM_GAIN"), ("rg_album_peak", "REPLAYGAIN_ALBUM_PEAK"),
                      ("bpm", "BPM")]:
        f[name] = T[key]
    f.save(path)

def asf(path):
    f = ASF(path)
    for key, name in [("title", "Title"), ("artist", "Author"), ("album", "WM/AlbumTitle"),
                      ("album_artist", "WM/AlbumArtist"), ("disc", "WM/PartOfSet"), ("year", "WM/Year"),
                      ("genre", "WM/Genre"), ("mb_track", "MusicBrainz/Track Id"), ("mb_album", "MusicBrainz/Album Id"),
                      ("rg_track_gain", "replaygain_track_gain"), ("rg_track_peak", "replaygain_track_peak"),
                      ("rg_album_gain", "replaygain_album_gain"), ("rg_album_peak", "replaygain_album_peak"),
                      ("bpm", "WM/BeatsPerMinute")]:
        f[name] = [T[key]]
    f["WM/TrackNumber"] = ["3"]
    f.save()

def id3(path):
    f = ID3()
    f.add(TIT2(encoding=3, text=T["title"])); f.add(TPE1(encoding=3, text=T["artist"]))
    f.add(TALB(encoding=3, text=T["album"])); f.add(TPE2(encoding=3, text=T["album_artist"]))
    f.add(TPOS(encoding=3, text=T["disc"])); f.add(TRCK(encoding=3, text=T["track"]))
    f.add(TDRC(encoding=3, text=T["year"])); f.add(TCON(encoding=3, text=T["genre"]))
    f.add(TBPM(encoding=3, text=T["bpm"]))
    f.add(UFID(owner="http://musicbrainz.org", data=T["mb_track"].encode()))
    for key, desc in [("mb_track", "MusicBrainz Release Track Id"), ("mb_album", "MusicBrainz Album Id"),
                      ("rg_track_gain", "REPLAYGAIN_TRACK_GAIN"), ("rg_track_peak", "REPLAYGAIN_TRACK_PEAK"),
                      ("rg_album_gain", "REPLAYGAIN_ALBUM_GAIN"), ("rg_album_peak", "REPLAYGAIN_ALBUM_PEAK")]:
        if key != "mb_track": f.add(TXXX(encoding=3, desc=desc, text=T[key]))
    f.save(path, v2_version=4)

def vorbis(f):
    for key, name in [("title", "TITLE"), ("artist", "ARTIST"), ("album", "ALBUM"), ("album_artist", "ALBUMARTIST"),
                      ("year", "DATE"), ("genre", "GENRE"), ("mb_track", "MUSICBRAINZ_TRACKID"),
                      ("mb_album", "MUSICBRAINZ_ALBUMID"), ("rg_track_gain", "REPLAYGAIN_TRACK_GAIN"),
                      ("rg_track_peak", "REPLAYGAIN_TRACK_PEAK"), ("rg_album_gain", "REPLAYGAIN_ALBUM_GAIN"),
                      ("rg_album_peak", "REPLAYGAIN_ALBUM_PEAK"), ("bpm", "BPM")]:
        f[name] = T[key]
    f["DISCNUMBER"] = "1"; f["DISCTOTAL"] = "2"; f["TRACKNUMBER"] = "3"; f["TRACKTOTAL"] = "12"
    f.save()

for p in ["formats/aac_itunsmpb.m4a", "formats/aac_editlist.m4a", "formats/alac.m4a"]: mp4(p)
for p in ["formats/monkeys.ape", "formats/wavpack.wv"]: ape(p)
asf("formats/wma.wma")
id3("formats/tagged.mp3")
vorbis(FLAC("formats/tagged.flac")); vorbis(OggVorbis("formats/tagged.ogg")); vorbis(OggOpus("formats/tagged.opus"))
EOF
du -sh formats
