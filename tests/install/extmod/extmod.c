/* A module built out of tree against the installed headers: it links nothing
 * of the core at run time (the headers only). */
#include <memra/module.h>

static int score(const memra_device_caps *caps) { return caps->arch == MEMRA_ARCH_HOST ? 5 : 0; }

static memra_status op_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    (void)call;
    float *p = (float *)(uintptr_t)y;
    for (int64_t i = 0; i < n; i++) p[i] *= s;
    return MEMRA_STATUS_OK;
}

static const memra_op_table ops = {.struct_size = sizeof ops, .scale = op_scale};
static const memra_module_desc desc = {.abi_version = MEMRA_MODULE_ABI_VERSION,
                                       .struct_size = sizeof desc,
                                       .name = "extmod",
                                       .version = "1.0.0",
                                       .score = score,
                                       .ops = &ops};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
const memra_module_desc *memra_module_entry(void) { return &desc; }
