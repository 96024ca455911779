"""Prepares files for the tag write-back safety tests with mutagen (not TagLib, not naviscan).
Usage:
  tagfixture.py no-padding FILE.flac         drop a FLAC's padding block and its gain and BPM fields
  tagfixture.py big-comment FILE.flac BYTES  a LYRICS field that makes the Vorbis comment BYTES long, no padding,
                                             no gain or BPM fields
  tagfixture.py id3v23 FILE.mp3              replace an MP3's tag by an ID3v2.3 tag with frames ID3v2.4 dropped
                                             (RVAD, TRDA, TSIZ), a TYER and a "(17)Rock" genre
  tagfixture.py frames FILE.mp3              prints {"version": "2.x", "frames": [[ID, raw bytes in hex], ...]}
  tagfixture.py share FILE                   a POSIX ACL (user::rw- user:1234:r-- group::r-- mask::r-- other::---)
                                             and user.navidrome.note, set with the kernel's setxattr
  tagfixture.py xattrs FILE                  prints every extended attribute as {"name": "value in hex"}"""
import json, os, struct, sys
from mutagen.flac import FLAC
from mutagen.id3 import ID3, TIT2, TPE1, TALB, TYER, TCON, COMM, RVAD, TRDA, TSIZ, APIC

def without_gains(f):
    for key in list(f.tags.keys()):
        if key.upper().startswith(("REPLAYGAIN_", "R128_")) or key.upper() == "BPM":
            del f.tags[key]

def no_padding(path):
    f = FLAC(path)
    without_gains(f)
    f.save(padding=lambda info: 0)

def big_comment(path, size):
    f = FLAC(path)
    without_gains(f)
    f.tags["LYRICS"] = ""
    base = len(f.tags.write(framing=False))
    f.tags["LYRICS"] = "x" * (size - base)
    assert len(f.tags.write(framing=False)) == size
    f.save(padding=lambda info: 0)

def id3v23(path):
    tags = ID3()
    tags.add(TIT2(encoding=1, text="Legacy"))
    tags.add(TPE1(encoding=0, text="Old Tagger"))
    tags.add(TALB(encoding=0, text="Two Three"))
    tags.add(TYER(encoding=0, text="1999"))
    tags.add(TCON(encoding=0, text="(17)Rock"))
    tags.add(COMM(encoding=1, lang="eng", desc="", text="kept byte for byte"))
    tags.add(RVAD(data=b"\x03\x10\x12\x34\x12\x34\x00\x00\x00\x00"))
    tags.add(TRDA(encoding=0, text="1999-05-01"))
    tags.add(TSIZ(encoding=0, text="123456"))
    tags.add(APIC(encoding=0, mime="image/png", type=3, desc="", data=b"\x89PNG\r\n\x1a\n" + b"\x00" * 64))
    tags.save(path, v2_version=3, padding=lambda info: 512)

def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:3] == b"ID3"
    version, flags = data[3], data[5]
    size = (data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]
    at, out = 10, []
    while at + 10 <= 10 + size and data[at] != 0:
        ident = data[at:at + 4].decode()
        raw = data[at + 4:at + 8]
        length = int.from_bytes(raw, "big") if version == 3 else (raw[0] << 21) | (raw[1] << 14) | (raw[2] << 7) | raw[3]
        out.append([ident, data[at + 10:at + 10 + length].hex()])
        at += 10 + length
    print(json.dumps({"version": "2.%d" % version, "frames": out}))

def share(path):
    entries = [(1, 6, 0xFFFFFFFF), (2, 4, 1234), (4, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    os.setxattr(path, "system.posix_acl_access", acl)
    os.setxattr(path, "user.navidrome.note", b"keep me")

def xattrs(path):
    print(json.dumps({name: os.getxattr(path, name).hex() for name in os.listxattr(path)}))

command, path = sys.argv[1], sys.argv[2]
if command == "no-padding": no_padding(path)
elif command == "big-comment": big_comment(path, int(sys.argv[3]))
elif command == "id3v23": id3v23(path)
elif command == "frames": frames(path)
elif command == "share": share(path)
elif command == "xattrs": xattrs(path)
else: sys.exit("unknown command " + command)
