#ifndef NAVISCAN_CMPG123_SHIM_H
#define NAVISCAN_CMPG123_SHIM_H
#include <mpg123.h>

/* mpg123.h renames several functions through macros (mpg123_param -> mpg123_param2, large-file
   suffixes on some platforms). Swift does not see macro aliases, so these wrappers give Swift one
   stable name whatever the platform's header does. */
/* fmt123.h is shared with libsyn123; whichever module includes it first owns its enum, so each shim
   re-exports the one encoding naviscan uses. */
static const int naviscan_mpg123_float32 = MPG123_ENC_FLOAT_32;

static inline int naviscan_mpg123_param(mpg123_handle *mh, enum mpg123_parms key, long value, double fvalue) {
    return mpg123_param(mh, key, value, fvalue);
}
static inline int naviscan_mpg123_open(mpg123_handle *mh, const char *path) {
    return mpg123_open(mh, path);
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
