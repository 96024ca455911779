#ifndef NAVISCAN_CMPG123_SHIM_H
#define NAVISCAN_CMPG123_SHIM_H
#include <mpg123.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* mpg123.h renames several functions through macros (mpg123_param -> mpg123_param2, large-file
   suffixes on some platforms). Swift does not see macro aliases, so these wrappers give Swift one
   stable name whatever the platform's header does. */
/* fmt123.h is shared with libsyn123; whichever module includes it first owns its enum, so each shim
   re-exports the one encoding naviscan uses. */
static const int naviscan_mpg123_float32 = MPG123_ENC_FLOAT_32;

static inline int naviscan_mpg123_param(mpg123_handle *mh, enum mpg123_parms key, long value, double fvalue) {
    return mpg123_param(mh, key, value, fvalue);
}
/* mpg123's own reader makes two read() calls per MPEG frame (header, then body): some 80 system calls
   per second of audio, several percent of the whole analysis. A stdio stream with a 256 kB buffer
   makes one per 256 kB. The stream belongs to the caller: close it after mpg123_close(). */
typedef struct {
    FILE *file;
    char buffer[1 << 18];
} naviscan_mpg123_stream;

static inline mpg123_ssize_t naviscan_mpg123_read_stream(void *stream, void *buffer, size_t count) {
    FILE *file = ((naviscan_mpg123_stream *)stream)->file;
    size_t n = fread(buffer, 1, count, file);
    return (n == 0 && ferror(file)) ? -1 : (mpg123_ssize_t)n;
}
static inline off_t naviscan_mpg123_seek_stream(void *stream, off_t offset, int whence) {
    FILE *file = ((naviscan_mpg123_stream *)stream)->file;
    return fseeko(file, offset, whence) == 0 ? ftello(file) : (off_t)-1;
}
static inline void naviscan_mpg123_close_stream(void *stream) {
    fclose(((naviscan_mpg123_stream *)stream)->file);
    free(stream);
}
/* Returns the open stream, or NULL with errno set (fopen) or *result set (mpg123). */
static inline void *naviscan_mpg123_open_buffered(mpg123_handle *mh, const char *path, int *result) {
    *result = MPG123_ERR;
    naviscan_mpg123_stream *stream = (naviscan_mpg123_stream *)malloc(sizeof(naviscan_mpg123_stream));
    if (!stream) return NULL;
    stream->file = fopen(path, "rb");
    if (!stream->file) { free(stream); return NULL; }
    /* glibc ignores the size unless it is given the buffer too. */
    setvbuf(stream->file, stream->buffer, _IOFBF, sizeof stream->buffer);
    *result = mpg123_replace_reader_handle(mh, naviscan_mpg123_read_stream, naviscan_mpg123_seek_stream, NULL);
    if (*result == MPG123_OK) *result = mpg123_open_handle(mh, stream);
    if (*result != MPG123_OK) { naviscan_mpg123_close_stream(stream); return NULL; }
    return stream;
}
static inline long long naviscan_mpg123_length(mpg123_handle *mh) {
    return (long long)mpg123_length(mh);
}
static inline int naviscan_mpg123_accurate(mpg123_handle *mh) {
    long value = 0;
    double fvalue = 0;
    if (mpg123_getstate(mh, MPG123_ACCURATE, &value, &fvalue) != MPG123_OK) return 0;
    return value != 0;
}
#endif
