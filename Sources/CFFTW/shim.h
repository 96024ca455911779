#ifndef NAVISCAN_CFFTW_SHIM_H
#define NAVISCAN_CFFTW_SHIM_H
/* Single precision only (fftw3f). */
#include <fftw3.h>
#endif
