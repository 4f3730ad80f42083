/* Commands of the `memra` program; each returns the process exit code. */
#ifndef MEMRA_TOOLS_TOOL_H
#define MEMRA_TOOLS_TOOL_H

#include "memra/memra.h"

int memra_tool_version(int argc, char **argv);
int memra_tool_info(int argc, char **argv);
int memra_tool_check(int argc, char **argv);
int memra_tool_bench(int argc, char **argv);
int memra_tool_bench_accprobe(int argc, char **argv);
int memra_tool_bench_moe(int argc, char **argv);
int memra_tool_jit(int argc, char **argv);
int memra_tool_model(int argc, char **argv);
int memra_tool_tune(int argc, char **argv);
/* memra_open with a printed reason on failure. */
memra_status memra_tool_open(memra_runtime **rt);

#endif
