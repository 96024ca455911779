#ifndef NAVISCAN_SYSTEM_SHIMS_H
#define NAVISCAN_SYSTEM_SHIMS_H

/* Flushes the whole file system holding the open file `fd` (Linux syncfs): one call makes a batch
   of written files and their directory entries durable. Returns 0, or -1 with errno set. */
int naviscan_syncfs(int fd);

#endif
