/* memra check: placeholder until the case table lands. */
#include <stdio.h>

#include "tools/tool.h"

int memra_tool_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memra check: not built yet\n");
    return 1;
}

int memra_tool_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memra bench: not built yet\n");
    return 1;
}
