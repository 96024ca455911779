#ifndef NAVISCAN_SYSTEM_SHIMS_H
#define NAVISCAN_SYSTEM_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/* Flushes the whole file system holding the open file `fd` (Linux syncfs): one call makes a batch
   of written files and their directory entries durable. Returns 0, or -1 with errno set. */
int naviscan_syncfs(int fd);

/* Hands memory the allocator holds but no longer uses back to the system (glibc malloc_trim; a
   no-op elsewhere). */
void naviscan_release_free_memory(void);

/* Library watching (Linux inotify; on other systems every call fails with ENOSYS, and the server
   falls back to periodic re-scans). */

/* What a watch reports, as bits of `naviscan_watch_event.kind`. */
enum {
    NAVISCAN_WATCH_WRITTEN = 1,       /* data written (IN_MODIFY) */
    NAVISCAN_WATCH_CLOSED = 2,        /* closed after writing (IN_CLOSE_WRITE) */
    NAVISCAN_WATCH_CREATED = 4,       /* created (IN_CREATE): a writer may follow */
    NAVISCAN_WATCH_REMOVED = 8,       /* deleted, or moved out (IN_DELETE, IN_MOVED_FROM) */
    NAVISCAN_WATCH_DIRECTORY = 16,    /* the entry is a directory (IN_ISDIR) */
    NAVISCAN_WATCH_GONE = 32,         /* the watched directory itself is gone (IN_IGNORED, IN_DELETE_SELF) */
    NAVISCAN_WATCH_OVERFLOW = 64,     /* events were lost (IN_Q_OVERFLOW): re-scan everything */
    NAVISCAN_WATCH_ATTRIBUTES = 128,  /* metadata changed (IN_ATTRIB: a touch, a chmod) */
    NAVISCAN_WATCH_MOVED_IN = 256,    /* moved in whole (IN_MOVED_TO) */
};

typedef struct {
    int watch;          /* the directory's watch descriptor */
    uint32_t kind;      /* NAVISCAN_WATCH_* bits */
    const char *name;   /* the entry's name inside the directory ("" for the directory itself) */
} naviscan_watch_event;

/* A non-blocking, close-on-exec inotify descriptor, or -1 with errno set. */
int naviscan_watch_open(void);

/* Watches one directory (not its subdirectories) for everything a library change can be. Returns
   the watch descriptor, or -1 with errno set. */
int naviscan_watch_add(int fd, const char *directory);

/* Waits up to `timeout_ms` for events and reads them into `buffer`. Returns the byte count, 0 on
   timeout, or -1 with errno set. */
long naviscan_watch_read(int fd, void *buffer, size_t capacity, int timeout_ms);

/* Decodes the event at `*offset` in a buffer filled by naviscan_watch_read and advances `*offset`.
   Returns 1 with `event` filled, 0 at the end of the buffer. `event->name` points into `buffer`. */
int naviscan_watch_next(const void *buffer, size_t length, size_t *offset, naviscan_watch_event *event);

/* Extended attributes (Linux; elsewhere every call fails with ENOSYS). POSIX ACLs are the attributes
   system.posix_acl_access and system.posix_acl_default, so they travel with the rest. */

/* Makes `to_fd` carry exactly the extended attributes of `from_fd`: each one set with its value (left
   alone where it is already equal), and those `to_fd` has that `from_fd` lacks removed. A file system
   without extended attributes counts as having none. Returns 0, or -1 with errno set. */
int naviscan_xattr_copy(int from_fd, int to_fd);

/* 1 when both files carry the same extended attributes with the same values, 0 when not, -1 with
   errno set. */
int naviscan_xattr_equal(int a_fd, int b_fd);

#endif
