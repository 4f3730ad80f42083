/* The command line and the output of every `memra` command.
 *
 * Parsing is glibc's getopt_long, one table per command:
 *
 *     static const struct option k_opts[] = {{"m", required_argument, NULL, 'm'},
 *                                            {"help", no_argument, NULL, 'h'}, {0}};
 *     static const tool_cmd k_cmd = {"memra bench", k_help, k_opts};
 *     int o, rc;
 *     while ((o = tool_opt_next(&k_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
 *         if (o == TOOL_OPT_EXIT) return rc;          // help printed (0) or a usage error (2)
 *         if (o == 'm' && tool_opt_i64(&k_cmd, "--m", optarg, 1, 1 << 20, &m)) return 2;
 *     }
 *     // argv[optind .. argc) are the positional arguments
 *
 * `--opt value` and `--opt=value` both work (getopt_long); -h and --help print
 * the command's help to stdout. Each process parses one command line, so the
 * getopt state is never reset. Every message goes to stderr and starts with
 * the command's name. */
#ifndef MEMRA_TOOLS_TOOL_OPT_H
#define MEMRA_TOOLS_TOOL_OPT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tool_cmd {
    const char *name;              /* "memra check" */
    const char *help;              /* printed to stdout by -h / --help */
    const struct option *longopts; /* ends with a zero entry; includes {"help", no_argument, NULL, 'h'} */
} tool_cmd;

#define TOOL_OPT_END (-1)
/* The `val` of {"quiet", no_argument, NULL, TOOL_OPT_QUIET} in a command's
 * table: tool_opt_next takes it itself (tool_quiet = 1, tool_fmt.h). */
#define TOOL_OPT_QUIET 0x51f
#define TOOL_OPT_EXIT (-2)

/* The next option's value (the `val` of its table entry), TOOL_OPT_END after
 * the last, or TOOL_OPT_EXIT with *rc = 0 when the help was printed and
 * *rc = 2 after an unknown option or a missing value (message printed). */
int tool_opt_next(const tool_cmd *c, int argc, char **argv, int *rc);

/* Value parsers: 0 on success; 2 (the usage exit code) after printing
 * "<cmd>: <opt> wants ..., not '<v>'". *out is set only on success. */
int tool_opt_i64(const tool_cmd *c, const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out);
int tool_opt_u64(const tool_cmd *c, const char *opt, const char *v, uint64_t *out);
/* --device: an index, "host" (*out = -2) or, when allow_all, "all" (*out = -1). */
int tool_opt_device(const tool_cmd *c, const char *v, int allow_all, int64_t *out);
/* Report an argument the command does not take; returns 2. */
int tool_opt_unexpected(const tool_cmd *c, const char *arg);

/* A receipt (--json FILE), opened before any work so a target that cannot
 * be written fails at once: returns 0 with *out open, or 2 after a message.
 * "-" is stdout, and then stdout's descriptor is pointed at stderr, so every
 * human-readable line the command prints goes to stderr. */
int tool_receipt_open(const tool_cmd *c, const char *path, FILE **out);
/* Flush and close a receipt (NULL: nothing). 0 after "<cmd>: receipt written
 * to <path>" on stderr (not for "-"), or 1 after a message naming the file and
 * the error. */
int tool_receipt_close(const tool_cmd *c, const char *path, FILE *f);

/* fflush(stdout), remembering the first failure for tool_stdout_close. */
void tool_stdout_flush(void);
/* The program's last step: flush stdout and check it was all written.
 * Returns rc, or 1 (when rc is 0) after "memra: writing stdout: <error>". */
int tool_stdout_close(int rc);

#endif
