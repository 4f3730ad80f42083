/* Op names: memra_op_name and memra_op_from_name, from the one op list. */
#include <string.h>

#include "memra/memra.h"

static const char *const k_op_names[] = {
#define MEMRA__OP_NAME(name) #name,
    MEMRA_OP_LIST(MEMRA__OP_NAME)
#undef MEMRA__OP_NAME
};

const char *memra_op_name(memra_op op)
{
    return ((int)op >= 0 && op < MEMRA_OP_COUNT_) ? k_op_names[op] : "unknown";
}

memra_op memra_op_from_name(const char *name)
{
    for (int i = 0; name != NULL && i < MEMRA_OP_COUNT_; i++)
        if (strcmp(k_op_names[i], name) == 0) return (memra_op)i;
    return MEMRA_OP_COUNT_;
}
