/* Routing of the GPU modules on a FAKE device description (label registry; no
 * GPU): each built module file is dlopen'd and its score() asked about a cc 12.0
 * device (arch SM120, profile sm120, jit_target sm_120a, an RTX 5090) and a
 * cc 9.0 one (an H200). The dispatch order is the registry's rule: highest
 * score first among the modules whose op table has the op.
 *
 *   test_mmq_routing <sm90.so> <sm120.so> <fp8blk.so> <mmq.so>
 */
#include <dlfcn.h>

#include "memra/memra.h"
#include "memra/module.h"
#include "test.h"

enum { M_SM90, M_SM120, M_FP8BLK, M_MMQ, M_COUNT };

static const memra_module_desc *g_desc[M_COUNT];

static const memra_module_desc *open_desc(const char *path)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) TEST_FAIL_AT("dlopen %s: %s", path, dlerror());
    memra_module_entry_fn entry;
    *(void **)&entry = dlsym(dl, "memra_module_entry");
    CHECK(entry != NULL);
    const memra_module_desc *d = entry();
    CHECK(d != NULL && d->score != NULL && d->ops != NULL);
    CHECK_INT_EQ(d->abi_version, MEMRA_MODULE_ABI_VERSION);
    return d; /* kept open for the life of the test */
}

static memra_device_caps fake(memra_arch arch, int cc, const char *profile, const char *target, const char *name)
{
    memra_device_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.arch = arch;
    c.profile = profile;
    c.name = name;
    c.cc = cc;
    c.sm_count = cc == 120 ? 170 : 132;
    c.total_mem = cc == 120 ? 32ull << 30 : 141ull << 30;
    c.driver_version = 13000;
    c.jit_target = target;
    c.smem_per_block_optin = cc == 120 ? 99 * 1024 : 227 * 1024;
    return c;
}

/* The op's slot in a module's table: non-NULL when the module provides it. */
static int provides(const memra_module_desc *d, memra_op op)
{
    const memra_op_table *t = d->ops;
    switch (op) {
#define OP_CASE(name)                                                                                               \
    case MEMRA_OP_##name:                                                                                           \
        return MEMRA_HAS_MEMBER(t, memra_op_table, name) && t->name != NULL;
        MEMRA_OP_LIST(OP_CASE)
#undef OP_CASE
    default: return 0;
    }
}

/* The first module of the dispatch order for op on caps, or NULL. */
static const memra_module_desc *route(const memra_device_caps *caps, memra_op op)
{
    const memra_module_desc *best = NULL;
    int best_score = 0;
    for (int i = 0; i < M_COUNT; i++) {
        int s = g_desc[i]->score(caps);
        if (s > best_score && provides(g_desc[i], op)) {
            best = g_desc[i];
            best_score = s;
        }
    }
    return best;
}

static const char *route_name(const memra_device_caps *caps, memra_op op)
{
    const memra_module_desc *d = route(caps, op);
    return d ? d->name : "(none)";
}

int main(int argc, char **argv)
{
    if (argc < 5) TEST_FAIL_AT("usage: test_mmq_routing <sm90> <sm120> <fp8blk> <mmq>");
    for (int i = 0; i < M_COUNT; i++) g_desc[i] = open_desc(argv[1 + i]);
    CHECK_STR_EQ(g_desc[M_SM90]->name, "sm90");
    CHECK_STR_EQ(g_desc[M_SM120]->name, "sm120");
    CHECK_STR_EQ(g_desc[M_FP8BLK]->name, "fp8blk");
    CHECK_STR_EQ(g_desc[M_MMQ]->name, "mmq");

    const memra_device_caps c120 = fake(MEMRA_ARCH_SM120, 120, "sm120", "sm_120a", "fake RTX 5090 (cc 12.0)");
    const memra_device_caps c90 = fake(MEMRA_ARCH_SM90, 90, "sm90", "sm_90a", "fake H200 (cc 9.0)");
    int s120[M_COUNT], s90[M_COUNT];
    for (int i = 0; i < M_COUNT; i++) {
        s120[i] = g_desc[i]->score(&c120);
        s90[i] = g_desc[i]->score(&c90);
        printf("%-7s score: cc 12.0 %3d, cc 9.0 %3d\n", g_desc[i]->name, s120[i], s90[i]);
    }

    /* cc 12.0: sm120 first, the Hopper modules out */
    for (int i = 0; i < M_COUNT; i++)
        if (i != M_SM120 && s120[M_SM120] <= s120[i])
            TEST_FAIL_AT("cc 12.0: sm120 scores %d, not above %s's %d", s120[M_SM120], g_desc[i]->name, s120[i]);
    CHECK(s120[M_SM120] > 0);
    CHECK_INT_EQ(s120[M_SM90], 0);
    CHECK_INT_EQ(s120[M_FP8BLK], 0);
    CHECK(s120[M_MMQ] > 0); /* the floor stays admitted under sm120 */

    /* cc 9.0: sm120 out, fp8blk admitted below sm90 */
    CHECK_INT_EQ(s90[M_SM120], 0);
    CHECK(s90[M_SM90] > 0);
    CHECK(s90[M_FP8BLK] > 0);
    CHECK(s90[M_FP8BLK] < s90[M_SM90]);

    /* the sm120 op table carries the block-128 lane and the MMQ floor */
    CHECK(provides(g_desc[M_SM120], MEMRA_OP_gemm_fp8_blk));
    CHECK(provides(g_desc[M_SM120], MEMRA_OP_gemm_q8_0));
    CHECK(provides(g_desc[M_SM120], MEMRA_OP_quant_q8_1));
    CHECK(provides(g_desc[M_FP8BLK], MEMRA_OP_gemm_fp8_blk));
    /* every quant_q8_1 here writes the records' sum plane and says so (else the core drops the op) */
    for (int i = 0; i < M_COUNT; i++)
        if (provides(g_desc[i], MEMRA_OP_quant_q8_1)) CHECK(g_desc[i]->q8_1_sums != 0);

    static const memra_op ops[] = {MEMRA_OP_gemm_fp8_blk, MEMRA_OP_gemm_q8_0, MEMRA_OP_quant_q8_1, MEMRA_OP_gemm_fp8,
                                   MEMRA_OP_gemm_f16};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        printf("route %-13s cc 12.0 -> %-6s cc 9.0 -> %s\n", memra_op_name(ops[i]), route_name(&c120, ops[i]),
               route_name(&c90, ops[i]));
    CHECK_STR_EQ(route_name(&c120, MEMRA_OP_gemm_fp8_blk), "sm120");
    CHECK_STR_EQ(route_name(&c120, MEMRA_OP_gemm_q8_0), "sm120");
    CHECK_STR_EQ(route_name(&c120, MEMRA_OP_quant_q8_1), "sm120");
    CHECK_STR_EQ(route_name(&c90, MEMRA_OP_gemm_fp8_blk), "sm90");

    /* jit sources follow the same split: sm_120a variants from sm120 only */
    size_t n = 0;
    if (g_desc[M_SM120]->jit_sources) {
        CHECK(g_desc[M_SM120]->jit_sources(&c120, &n) != NULL);
        CHECK_INT_EQ(n, 2);
    }
    if (g_desc[M_FP8BLK]->jit_sources) {
        CHECK(g_desc[M_FP8BLK]->jit_sources(&c120, &n) == NULL);
        CHECK_INT_EQ(n, 0);
    }
    printf("PASS\n");
    return 0;
}
