#ifndef NAVISCAN_CSNDFILE_SHIM_H
#define NAVISCAN_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
