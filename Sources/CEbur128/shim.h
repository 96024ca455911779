#ifndef NAVISCAN_CEBUR128_SHIM_H
#define NAVISCAN_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
