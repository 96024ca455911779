#ifndef NAVISCAN_CSYN123_SHIM_H
#define NAVISCAN_CSYN123_SHIM_H
#include <syn123.h>

/* See CMpg123/shim.h: fmt123.h belongs to one module only. */
static const int naviscan_syn123_float32 = MPG123_ENC_FLOAT_32;
#endif
