/* A module built before repack_q8_0 and gemm_q8_0r were appended to the op
 * table reports a shorter struct_size; the registry copies its table only up
 * to that size, so the new ops read NULL and are never routed to it, even
 * though the test module's memory past its size holds functions (that fail
 * loudly if called). argv[1] = path of testoldtable.so. */
#include "memra/memra.h"
#include "test.h"

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_optable_tail <testoldtable.so>");
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    CHECK_OK(memra_module_load(rt, argv[1]));
    memra_device *host = memra_device_host(rt);

    /* Admitted, and its v1 op serves (score 10 over host's 1). */
    const char *names[8];
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_scale, names, 8), 2);
    CHECK_STR_EQ(names[0], "testoldtable");
    float v[4] = {1, 2, 3, 4};
    memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)v, .n = 4, .s = 2.0f};
    CHECK_OK(memra_module_call(host, "testoldtable", MEMRA_OP_scale, &a));
    CHECK(v[3] == 8.0f);

    /* The appended ops: not provided, not routed, not callable by name. */
    CHECK_INT_EQ(memra_module_provides(host, "testoldtable", MEMRA_OP_repack_q8_0), 0);
    CHECK_INT_EQ(memra_module_provides(host, "testoldtable", MEMRA_OP_gemm_q8_0r), 0);
    CHECK_INT_EQ(memra_module_provides(host, "host", MEMRA_OP_repack_q8_0), 1);
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_repack_q8_0, names, 8), 1);
    CHECK_STR_EQ(names[0], "host");
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_gemm_q8_0r, names, 8), 1);
    CHECK_STR_EQ(names[0], "host");
    memra_op_args g = {.struct_size = sizeof g};
    CHECK_STATUS(memra_module_call(host, "testoldtable", MEMRA_OP_gemm_q8_0r, &g), MEMRA_STATUS_NOT_FOUND);
    CHECK_STATUS(memra_module_call(host, "testoldtable", MEMRA_OP_repack_q8_0, &g), MEMRA_STATUS_NOT_FOUND);

    /* Even with host disabled for the new ops, nothing falls to the old module. */
    CHECK_OK(memra_routing_configure(rt, "repack_q8_0=testoldtable", "host"));
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_repack_q8_0, names, 8), 0);
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_gemm_q8_0r, names, 8), 0);
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_scale, names, 8), 1);
    CHECK_STATUS(memra_module_call(host, "testoldtable", MEMRA_OP_repack_q8_0, &g), MEMRA_STATUS_NOT_FOUND);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_repack_q8_0, "testoldtable"), 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_gemm_q8_0r, "testoldtable"), 0);
    memra_close(rt);
    printf("ok\n");
    return 0;
}
