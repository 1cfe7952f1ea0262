// The floor for a serial hot-cache walk: openat + getdents64 + close for
// every directory, d_type only, no stat, no output; counts entries.
// With -s it also fstatat()s every entry and sums st_blocks (the floor for du).
// Build: cc -O2 -o floor floor.c (bench/run.sh does)   Run: floor [-s] DIR [bufsize]
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct d64 { unsigned long ino; long off; unsigned short reclen; unsigned char type; char name[]; };

static char *buf;
static size_t bufsz = 64 * 1024;
static long entries, dirs;
static int do_stat;
static unsigned long long blocks;

static void walk(int dfd) {
    // collect subdir names first so the directory fd can be closed before descending
    size_t cap = 64, n = 0; char **sub = malloc(cap * sizeof *sub);
    for (;;) {
        long got = syscall(SYS_getdents64, dfd, buf, bufsz);
        if (got <= 0) break;
        for (long pos = 0; pos < got;) {
            struct d64 *d = (struct d64 *)(buf + pos);
            pos += d->reclen;
            if (d->name[0] == '.' && (!d->name[1] || (d->name[1] == '.' && !d->name[2]))) continue;
            entries++;
            if (do_stat) { struct stat st; if (!fstatat(dfd, d->name, &st, AT_SYMLINK_NOFOLLOW)) blocks += st.st_blocks; }
            if (d->type == DT_DIR || d->type == DT_UNKNOWN) {
                if (n == cap) sub = realloc(sub, (cap *= 2) * sizeof *sub);
                sub[n++] = strdup(d->name);
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        int c = openat(dfd, sub[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c >= 0) { dirs++; walk(c); }
        free(sub[i]);
    }
    free(sub);
    close(dfd);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "-s")) { do_stat = 1; argv++; argc--; }
    if (argc < 2) { fprintf(stderr, "usage: floor [-s] DIR [bufsize]\n"); return 2; }
    if (argc > 2) bufsz = strtoul(argv[2], 0, 0);
    buf = malloc(bufsz);
    int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) { perror(argv[1]); return 1; }
    walk(fd);
    printf("%ld entries, %ld dirs, %llu KiB\n", entries + 1, dirs + 1, blocks / 2);
    return 0;
}
