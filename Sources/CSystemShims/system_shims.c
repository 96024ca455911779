#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include "system_shims.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <poll.h>
#include <sys/xattr.h>
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

#ifdef __linux__
/* The NUL-separated attribute names of `fd` in a malloc'd buffer (*names, *length); none on a file
   system without attributes. Returns 0, or -1 with errno set. */
static int xattr_names(int fd, char **names, ssize_t *length) {
    *names = NULL;
    *length = 0;
    for (;;) {
        ssize_t size = flistxattr(fd, NULL, 0);
        if (size < 0) return (errno == ENOTSUP) ? 0 : -1;
        if (size == 0) return 0;
        char *buffer = malloc((size_t)size);
        if (!buffer) return -1;
        ssize_t got = flistxattr(fd, buffer, (size_t)size);
        if (got >= 0) {
            *names = buffer;
            *length = got;
            return 0;
        }
        free(buffer);
        if (errno != ERANGE) return -1; /* grew in between: ask again */
    }
}

/* The value of attribute `name` in a malloc'd buffer; -1 with errno set (ENODATA when absent). */
static ssize_t xattr_value(int fd, const char *name, char **value) {
    *value = NULL;
    for (;;) {
        ssize_t size = fgetxattr(fd, name, NULL, 0);
        if (size < 0) return -1;
        char *buffer = malloc(size > 0 ? (size_t)size : 1);
        if (!buffer) return -1;
        ssize_t got = fgetxattr(fd, name, buffer, (size_t)size);
        if (got >= 0) {
            *value = buffer;
            return got;
        }
        free(buffer);
        if (errno != ERANGE) return -1;
    }
}

static int names_contain(const char *names, ssize_t length, const char *name) {
    for (ssize_t at = 0; at < length; at += (ssize_t)strlen(names + at) + 1) {
        if (strcmp(names + at, name) == 0) return 1;
    }
    return 0;
}

/* 1 when `to_fd` holds `name` with exactly `value`, else 0. */
static int holds(int to_fd, const char *name, const char *value, ssize_t size) {
    char *current;
    ssize_t got = xattr_value(to_fd, name, &current);
    int same = got == size && (size == 0 || memcmp(current, value, (size_t)size) == 0);
    free(current);
    return same;
}

int naviscan_xattr_copy(int from_fd, int to_fd) {
    char *from_names, *to_names;
    ssize_t from_length, to_length;
    if (xattr_names(from_fd, &from_names, &from_length) != 0) return -1;
    if (xattr_names(to_fd, &to_names, &to_length) != 0) {
        free(from_names);
        return -1;
    }
    int result = 0;
    for (ssize_t at = 0; at < to_length && result == 0; at += (ssize_t)strlen(to_names + at) + 1) {
        const char *name = to_names + at;
        if (!names_contain(from_names, from_length, name) && fremovexattr(to_fd, name) != 0 && errno != ENODATA) result = -1;
    }
    for (ssize_t at = 0; at < from_length && result == 0; at += (ssize_t)strlen(from_names + at) + 1) {
        const char *name = from_names + at;
        char *value;
        ssize_t size = xattr_value(from_fd, name, &value);
        if (size < 0) {
            if (errno == ENODATA) continue; /* removed in between */
            result = -1;
            break;
        }
        if (!holds(to_fd, name, value, size) && fsetxattr(to_fd, name, value, (size_t)size, 0) != 0) result = -1;
        free(value);
    }
    int saved = errno;
    free(from_names);
    free(to_names);
    errno = saved;
    return result;
}

int naviscan_xattr_equal(int a_fd, int b_fd) {
    char *a_names, *b_names;
    ssize_t a_length, b_length;
    if (xattr_names(a_fd, &a_names, &a_length) != 0) return -1;
    if (xattr_names(b_fd, &b_names, &b_length) != 0) {
        free(a_names);
        return -1;
    }
    int equal = 1;
    int count_a = 0, count_b = 0;
    for (ssize_t at = 0; at < b_length; at += (ssize_t)strlen(b_names + at) + 1) count_b++;
    for (ssize_t at = 0; at < a_length && equal == 1; at += (ssize_t)strlen(a_names + at) + 1) {
        count_a++;
        char *value;
        ssize_t size = xattr_value(a_fd, a_names + at, &value);
        if (size < 0) {
            equal = -1;
            break;
        }
        if (!holds(b_fd, a_names + at, value, size)) equal = 0;
        free(value);
    }
    if (equal == 1 && count_a != count_b) equal = 0;
    int saved = errno;
    free(a_names);
    free(b_names);
    errno = saved;
    return equal;
}
#else
int naviscan_xattr_copy(int from_fd, int to_fd) {
    (void)from_fd;
    (void)to_fd;
    errno = ENOSYS;
    return -1;
}

int naviscan_xattr_equal(int a_fd, int b_fd) {
    (void)a_fd;
    (void)b_fd;
    errno = ENOSYS;
    return -1;
}
#endif
