/* The `memra` program: info, check, bench, jit.
 * Exit codes: 0 success, 1 a check or command failed (or its output could
 * not be written), 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memra/memra.h"
#include "tools/tool.h"
#include "tools/tool_opt.h"

static const char k_usage[] =
    "usage: memra [--version] [--help] <command> [args]\n"
    "\n"
    "commands:\n"
    "  info [--json[=FILE]]  devices, profiles, capabilities, modules (loaded/refused and why),\n"
    "                        each device's op routing, the JIT cache\n"
    "  check [options]       every op of every loaded module against the host reference\n"
    "  bench [options]       the seed shape sheets, arms interleaved, medians, a JSON receipt\n"
    "  bench accprobe        the s32-vs-f32 accumulator probe\n"
    "  bench OP [--vs ...]   one op's routed lane, or two modules raced\n"
    "  jit ls|warm|clear     the JIT cache\n"
    "  tune [options]        race modules and variants per shape class; winners to the tuning file\n"
    "  help CMD [SUB]        the same as 'memra CMD [SUB] --help'\n"
    "  model ls FILE [--json] a GGUF / safetensors file's tensors, metadata and each weight's lane\n"
    "\n"
    "Every command takes -h/--help, '--opt value' and '--opt=value'; '--json -' writes the\n"
    "receipt to stdout and the table to stderr.\n"
    "environment: MEMRA_ARCH, MEMRA_MODULE_PATH, MEMRA_PREFER, MEMRA_DISABLE, MEMRA_LOG=debug,\n"
    "             MEMRA_STATS=1, MEMRA_CACHE_DIR, MEMRA_JIT_CACHE=0, MEMRA_F16_BUDGET_MB,\n"
    "             MEMRA_FP8BLK_JIT=0, MEMRA_FP8BLK_TILE=BMxBN[xWMxWN], MEMRA_SM120_FP8BLK=f8f6f4|mxf8f6f4\n"
    "Exit: 0 success, 1 a failure (a check, a command, or writing its output), 2 usage error.\n";

memra_status memra_tool_open(memra_runtime **rt)
{
    memra_status st = memra_open(NULL, rt);
    if (st != MEMRA_STATUS_OK)
        fprintf(stderr, "memra: cannot start: %s: %s\n", memra_status_str(st), memra_last_error());
    return st;
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command k_commands[] = {
    {"info", memra_tool_info}, {"check", memra_tool_check}, {"bench", memra_tool_bench},
    {"jit", memra_tool_jit},   {"model", memra_tool_model}, {"version", memra_tool_version},
    {"tune", memra_tool_tune},
    {"--version", memra_tool_version},
};

/* argv[0] is the command's name. */
static int dispatch(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (strcmp(argv[0], k_commands[i].name) == 0) return k_commands[i].run(argc, argv);
    fprintf(stderr, "memra: unknown %s '%s'\n\n%s", argv[0][0] == '-' ? "option" : "command", argv[0], k_usage);
    return 2;
}

/* memra help CMD [SUB]: the command line CMD [SUB] --help. */
static int help(int n, char **words)
{
    if (n == 0) {
        fputs(k_usage, stdout);
        return 0;
    }
    if (n > 2) {
        fprintf(stderr, "memra help: one command and at most one subcommand, not %d words\n", n);
        return 2;
    }
    char *argv[4] = {words[0], n > 1 ? words[1] : NULL, NULL, NULL};
    argv[n] = (char *)"--help";
    return dispatch(n + 1, argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(k_usage, stderr);
        return 2;
    }
    /* A file or pipe gets a buffer that holds a whole report, so a failed write surfaces in the
     * explicit flush (tool_stdout_flush) with its errno, not inside a printf that later calls
     * overwrite. */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, NULL, _IOFBF, (size_t)1 << 16);
    const char *cmd = argv[1];
    int rc;
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(k_usage, stdout);
        rc = 0;
    } else if (strcmp(cmd, "help") == 0) {
        rc = help(argc - 2, argv + 2);
    } else {
        rc = dispatch(argc - 1, argv + 1);
    }
    return tool_stdout_close(rc);
}
