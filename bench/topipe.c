// Run a command with its standard output going to a pipe that this program
// drains and discards: the way a listing is usually consumed (`| grep`,
// `| xargs`), without the cost of a shell and `cat` that `sh -c 'CMD | cat'`
// would add to every run. The pipe is read with 64 KiB reads, as cat would.
//
// With -r FILE, the command's peak RSS (KiB, from wait4) is written to FILE.
// Exit status: the command's.
//
// Build: cc -O2 -o topipe topipe.c (bench/run.sh does)   Run: topipe [-r FILE] CMD [ARG...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *rss_file = NULL;
    int arg = 1;
    if (argc > 2 && !strcmp(argv[1], "-r")) { rss_file = argv[2]; arg = 3; }
    if (arg >= argc) { fprintf(stderr, "usage: topipe [-r FILE] CMD [ARG...]\n"); return 2; }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) { perror("pipe"); return 2; }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        dup2(fds[1], 1);
        execvp(argv[arg], argv + arg);
        fprintf(stderr, "topipe: %s: %s\n", argv[arg], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    static char buf[64 * 1024];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) { perror("wait4"); return 2; }
    }
    if (rss_file) {
        FILE *f = fopen(rss_file, "w");
        if (!f) { perror(rss_file); return 2; }
        fprintf(f, "%ld\n", ru.ru_maxrss);
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
