#define _GNU_SOURCE
#include <unistd.h>
#include "system_shims.h"

int naviscan_syncfs(int fd) {
#ifdef __linux__
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}
