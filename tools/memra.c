/* The `memra` program: info, check, bench, jit.
 * Exit codes: 0 success, 1 a check or command failed, 2 usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/memra.h"
#include "tools/tool.h"

static const char k_usage[] =
    "usage: memra [--version] [--help] <command> [args]\n"
    "\n"
    "commands:\n"
    "  info [--json]         devices, profiles, capabilities, modules (loaded/refused and why),\n"
    "                        each device's op routing, the JIT cache\n"
    "  check [options]       every op of every loaded module against the host reference\n"
    "  bench [options]       the seed shape sheets, arms interleaved, medians, a JSON receipt\n"
    "  jit ls|warm|clear     the JIT cache\n"
    "  model ls FILE [--json] a GGUF / safetensors file's tensors, metadata and each weight's lane\n"
    "\n"
    "environment: MEMRA_ARCH, MEMRA_MODULE_PATH, MEMRA_PREFER, MEMRA_DISABLE, MEMRA_LOG=debug,\n"
    "             MEMRA_STATS=1, MEMRA_CACHE_DIR, MEMRA_JIT_CACHE=0, MEMRA_F16_BUDGET_MB,\n"
    "             MEMRA_FP8BLK_JIT=0, MEMRA_FP8BLK_TILE=BMxBN[xWMxWN], MEMRA_SM120_FP8BLK=f8f6f4|mxf8f6f4\n"
    "'memra <command> --help' describes a command.\n";

memra_status memra_tool_open(memra_runtime **rt)
{
    memra_status st = memra_open(NULL, rt);
    if (st != MEMRA_STATUS_OK)
        fprintf(stderr, "memra: cannot start: %s: %s\n", memra_status_str(st), memra_last_error());
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(k_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(k_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) return memra_tool_version();
    if (strcmp(cmd, "info") == 0) return memra_tool_info(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0) return memra_tool_check(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return memra_tool_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "jit") == 0) return memra_tool_jit(argc - 1, argv + 1);
    if (strcmp(cmd, "model") == 0) return memra_tool_model(argc - 1, argv + 1);
    fprintf(stderr, "memra: unknown command '%s'\n\n%s", cmd, k_usage);
    return 2;
}
