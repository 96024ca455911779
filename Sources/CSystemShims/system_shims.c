#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include "system_shims.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <poll.h>
#include <sys/inotify.h>
#endif

int naviscan_syncfs(int fd) {
#ifdef __linux__
    return syncfs(fd);
#else
    return fsync(fd);
#endif
}

void naviscan_release_free_memory(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

#ifdef __linux__
int naviscan_watch_open(void) { return inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }

int naviscan_watch_add(int fd, const char *directory) {
    return inotify_add_watch(fd, directory,
                             IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM
                             | IN_DELETE_SELF | IN_ATTRIB | IN_ONLYDIR);
}

long naviscan_watch_read(int fd, void *buffer, size_t capacity, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready = poll(&p, 1, timeout_ms);
    if (ready <= 0) return ready;
    ssize_t n = read(fd, buffer, capacity);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    return (long)n;
}

int naviscan_watch_next(const void *buffer, size_t length, size_t *offset, naviscan_watch_event *event) {
    if (*offset + sizeof(struct inotify_event) > length) return 0;
    const struct inotify_event *raw = (const struct inotify_event *)((const char *)buffer + *offset);
    *offset += sizeof(struct inotify_event) + raw->len;
    uint32_t kind = 0;
    if (raw->mask & IN_MODIFY) kind |= NAVISCAN_WATCH_WRITTEN;
    if (raw->mask & IN_CLOSE_WRITE) kind |= NAVISCAN_WATCH_CLOSED;
    if (raw->mask & IN_CREATE) kind |= NAVISCAN_WATCH_CREATED;
    if (raw->mask & IN_MOVED_TO) kind |= NAVISCAN_WATCH_MOVED_IN;
    if (raw->mask & (IN_DELETE | IN_MOVED_FROM)) kind |= NAVISCAN_WATCH_REMOVED;
    if (raw->mask & IN_ISDIR) kind |= NAVISCAN_WATCH_DIRECTORY;
    if (raw->mask & (IN_IGNORED | IN_DELETE_SELF)) kind |= NAVISCAN_WATCH_GONE;
    if (raw->mask & IN_Q_OVERFLOW) kind |= NAVISCAN_WATCH_OVERFLOW;
    if (raw->mask & IN_ATTRIB) kind |= NAVISCAN_WATCH_ATTRIBUTES;
    event->watch = raw->wd;
    event->kind = kind;
    event->name = raw->len > 0 ? raw->name : "";
    return 1;
}
#else
int naviscan_watch_open(void) { errno = ENOSYS; return -1; }
int naviscan_watch_add(int fd, const char *directory) { (void)fd; (void)directory; errno = ENOSYS; return -1; }
long naviscan_watch_read(int fd, void *buffer, size_t capacity, int timeout_ms) {
    (void)fd; (void)buffer; (void)capacity; (void)timeout_ms; errno = ENOSYS; return -1;
}
int naviscan_watch_next(const void *buffer, size_t length, size_t *offset, naviscan_watch_event *event) {
    (void)buffer; (void)length; (void)offset; (void)event; return 0;
}
#endif
