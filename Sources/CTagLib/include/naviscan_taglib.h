#ifndef NAVISCAN_TAGLIB_H
#define NAVISCAN_TAGLIB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The tag a file carries its fields in, as TagLib opens it.
typedef enum {
    NAVISCAN_TAG_NONE = 0,  // not a file TagLib can tag
    NAVISCAN_TAG_ID3V2 = 1, // MP3: TXXX frames, TBPM
    NAVISCAN_TAG_XIPH = 2,  // FLAC, Ogg Vorbis, Opus, Speex: Vorbis comments
    NAVISCAN_TAG_MP4 = 3,   // M4A: freeform ----:com.apple.iTunes: atoms, tmpo
    NAVISCAN_TAG_APE = 4,   // WavPack, Monkey's Audio, Musepack: APEv2
} naviscan_tag_kind;

/// One field by its logical name (REPLAYGAIN_TRACK_GAIN, BPM, R128_TRACK_GAIN, ...). A NULL value
/// removes the field.
typedef struct {
    const char *key;
    const char *value;
} naviscan_tag_field;

/// The tag kind of the file at `path` (0 when TagLib cannot open it).
int naviscan_tag_kind_of(const char *path);

/// Writes `count` fields into the file's own tag, creating the tag when it has none; every other
/// field, atom and picture is kept. MP3s are refused (naviscan edits ID3v2 itself, keeping the
/// tag's version and every frame), and so is a FLAC whose Vorbis comment would pass the format's
/// 16 MiB block limit. Returns 0, or -1 with a message in `error`.
int naviscan_tag_write(const char *path, const naviscan_tag_field *fields, int count, char *error, size_t error_size);

/// Reads the fields named by `keys`: `values[i]` points into `buffer` (NUL-terminated), or is NULL
/// when the file has no such field. Returns 0, or -1 with a message in `error`.
int naviscan_tag_read(const char *path, const char *const *keys, int count, const char **values,
                      char *buffer, size_t buffer_size, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
