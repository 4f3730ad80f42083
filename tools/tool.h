/* Commands of the `memra` program; each returns the process exit code. */
#ifndef MEMRA_TOOLS_TOOL_H
#define MEMRA_TOOLS_TOOL_H

#include <stdio.h>

#include "memra/memra.h"

int memra_tool_version(int argc, char **argv);
int memra_tool_info(int argc, char **argv);
int memra_tool_check(int argc, char **argv);
int memra_tool_bench(int argc, char **argv);
int memra_tool_bench_accprobe(int argc, char **argv);
int memra_tool_bench_moe(int argc, char **argv);
/* The expert groups of model file `path` through memra_matmul_experts beside a
 * loop of per-expert memra_matmul calls at m tokens, uniform and skewed routing
 * (bench_moe.c): a table on stdout, rows into jf when set. 0, or 1. */
int tool_bench_moe_file(memra_runtime *rt, memra_device *dev, const char *path, int64_t m, int64_t reps, uint64_t seed,
                        FILE *jf, int *first_json);
int memra_tool_jit(int argc, char **argv);
int memra_tool_model(int argc, char **argv);
int memra_tool_tune(int argc, char **argv);
/* memra_open with a printed reason on failure. */
memra_status memra_tool_open(memra_runtime **rt);

#endif
