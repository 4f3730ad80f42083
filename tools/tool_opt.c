/* The command line and the output of every `memra` command (tool_opt.h). */
#define _GNU_SOURCE

#include "tools/tool_opt.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool_fmt.h"
#include "tools/tool_util.h"

int tool_opt_next(const tool_cmd *c, int argc, char **argv, int *rc)
{
    opterr = 0; /* our messages, with the command's name */
    int o = getopt_long(argc, argv, ":h", c->longopts, NULL);
    while (o == TOOL_OPT_QUIET) { /* --quiet: no progress lines (tool_fmt.h) */
        tool_quiet = 1;
        o = getopt_long(argc, argv, ":h", c->longopts, NULL);
    }
    if (o == -1) return TOOL_OPT_END;
    if (o == 'h') {
        fputs(c->help, stdout);
        *rc = 0;
        return TOOL_OPT_EXIT;
    }
    if (o == '?' || o == ':') {
        const char *arg = argv[optind - 1];
        if (o == ':') fprintf(stderr, "%s: option '%s' needs a value\n", c->name, arg);
        else if (optopt != 0 && strncmp(arg, "--", 2) != 0) fprintf(stderr, "%s: unknown option '-%c'\n", c->name, optopt);
        else if (strchr(arg, '=') != NULL) fprintf(stderr, "%s: unknown option, or one that takes no value: '%s'\n", c->name, arg);
        else fprintf(stderr, "%s: unknown or ambiguous option '%s'\n", c->name, arg);
        fprintf(stderr, "(see '%s --help')\n", c->name);
        *rc = 2;
        return TOOL_OPT_EXIT;
    }
    return o;
}

int tool_opt_i64(const tool_cmd *c, const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (tool_parse_i64(v, lo, hi, out) == 0) return 0;
    fprintf(stderr, "%s: %s wants an integer from %lld to %lld, not '%s'\n", c->name, opt, (long long)lo,
            (long long)hi, v);
    return 2;
}

int tool_opt_u64(const tool_cmd *c, const char *opt, const char *v, uint64_t *out)
{
    if (tool_parse_u64(v, out) == 0) return 0;
    fprintf(stderr, "%s: %s wants an unsigned 64-bit integer, not '%s'\n", c->name, opt, v);
    return 2;
}

int tool_opt_device(const tool_cmd *c, const char *v, int allow_all, int64_t *out)
{
    if (strcmp(v, "host") == 0) {
        *out = -2;
        return 0;
    }
    if (allow_all && strcmp(v, "all") == 0) {
        *out = -1;
        return 0;
    }
    if (tool_parse_i64(v, 0, 1 << 20, out) == 0) return 0;
    fprintf(stderr, "%s: --device wants a device index, 'host'%s, not '%s'\n", c->name, allow_all ? " or 'all'" : "",
            v);
    return 2;
}

int tool_opt_unexpected(const tool_cmd *c, const char *arg)
{
    fprintf(stderr, "%s: unexpected argument '%s'\n(see '%s --help')\n", c->name, arg, c->name);
    return 2;
}

int tool_receipt_open(const tool_cmd *c, const char *path, FILE **out)
{
    FILE *f = NULL;
    if (strcmp(path, "-") == 0) {
        /* The receipt keeps the real stdout; everything printed to stdout
         * from here on lands on stderr. */
        fflush(stdout);
        const int fd = dup(STDOUT_FILENO);
        if (fd >= 0) f = fdopen(fd, "w");
        if (f == NULL || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            fprintf(stderr, "%s: --json -: cannot set up stdout: %s\n", c->name, strerror(errno));
            if (f != NULL) fclose(f);
            else if (fd >= 0) close(fd);
            return 2;
        }
    } else {
        f = fopen(path, "w");
        if (f == NULL) {
            fprintf(stderr, "%s: cannot write the receipt --json %s: %s\n", c->name, path, strerror(errno));
            return 2;
        }
    }
    *out = f;
    return 0;
}

int tool_receipt_close(const tool_cmd *c, const char *path, FILE *f)
{
    if (f == NULL) return 0;
    int e = 0;
    if (fflush(f) != 0) e = errno;
    else if (ferror(f)) e = EIO;
    if (fclose(f) != 0 && e == 0) e = errno;
    if (e == 0) {
        if (strcmp(path, "-") != 0) fprintf(stderr, "%s: receipt written to %s\n", c->name, path);
        return 0;
    }
    fprintf(stderr, "%s: writing the receipt %s: %s\n", c->name, strcmp(path, "-") == 0 ? "(stdout)" : path,
            strerror(e));
    return 1;
}

static int g_stdout_errno; /* the first failed flush of stdout */

void tool_stdout_flush(void)
{
    if (fflush(stdout) != 0 && g_stdout_errno == 0) g_stdout_errno = errno ? errno : EIO;
}

int tool_stdout_close(int rc)
{
    int e = g_stdout_errno;
    if (fflush(stdout) != 0 && e == 0) e = errno ? errno : EIO;
    if (ferror(stdout) && e == 0) e = EIO;
    /* close the descriptor too: a deferred error (NFS) shows there */
    if (fclose(stdout) != 0 && e == 0) e = errno;
    if (e == 0) return rc;
    fprintf(stderr, "memra: writing stdout: %s\n", strerror(e));
    return rc ? rc : 1;
}
