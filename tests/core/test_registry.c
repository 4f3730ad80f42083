/* The registry: every refusal reason is recorded while the good module
 * serves; routing order, preferences, disables; decline fall-through with the
 * reason in the ledger. argv[1] = test module folder, argv[2] = duplicate folder. */
#include <pthread.h>

#include "memra/memra.h"
#include "test.h"

static const char *reason_of(memra_runtime *rt, const char *name_or_path_part)
{
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        CHECK_OK(memra_module_info_get(rt, i, &mi));
        if (strstr(mi.name, name_or_path_part) != NULL || strstr(mi.path, name_or_path_part) != NULL)
            return mi.loaded ? "" : mi.reason;
    }
    TEST_FAIL_AT("no registry record mentions '%s'", name_or_path_part);
    return NULL;
}

static void reenter(const memra_ledger_row *r, void *user)
{
    (void)r;
    (void)memra_ledger_hits((memra_device *)user, MEMRA_OP_scale, "testgood");
}

typedef struct ledger_find {
    const char *op, *module, *reason;
    uint64_t hits, declines;
} ledger_find;

static void visit(const memra_ledger_row *r, void *user)
{
    ledger_find *f = user;
    if (strcmp(r->op, f->op) != 0 || strcmp(r->module, f->module) != 0) return;
    if (r->reason == NULL) f->hits = r->hits;
    else if (f->reason && strcmp(r->reason, f->reason) == 0) f->declines = r->declines;
}

int main(int argc, char **argv)
{
    if (argc < 3) TEST_FAIL_AT("usage: test_registry <module dir> <dup dir>");
    char path[4096];
    snprintf(path, sizeof path, "%s:%s:/nonexistent/memra-modules:relative/dir", argv[1], argv[2]);
    memra_options o = {.struct_size = sizeof o, .module_path = path, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));

    CHECK_STR_EQ(reason_of(rt, "testgood.so"), "");
    CHECK_STR_CONTAINS(reason_of(rt, "testnewabi"), "newer than this core");
    CHECK_STR_CONTAINS(reason_of(rt, "testoldabi"), "older than the oldest");
    CHECK_STR_CONTAINS(reason_of(rt, "testbadsize"), "size mismatch");
    CHECK_STR_CONTAINS(reason_of(rt, "testnoentry"), "entry symbol memra_module_entry missing");
    CHECK_STR_CONTAINS(reason_of(rt, "testinitfail"), "init failed on host");
    CHECK_STR_CONTAINS(reason_of(rt, "testinitfail"), "refusing on purpose");
    CHECK_STR_CONTAINS(reason_of(rt, "testscore0"), "score 0 on every device");
    CHECK_STR_CONTAINS(reason_of(rt, "notalib.so"), "not a loadable shared library");
    CHECK_STR_CONTAINS(reason_of(rt, "/nonexistent/memra-modules"), "does not exist");
    CHECK_STR_CONTAINS(reason_of(rt, "relative/dir"), "never loads modules from the current directory");
    CHECK_STR_CONTAINS(reason_of(rt, argv[2]), "duplicate: module 'testgood' is already loaded from");

    /* Only the good ones (and host) are loaded. */
    int loaded = 0;
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        memra_module_info_get(rt, i, &mi);
        loaded += mi.loaded;
    }
    CHECK_INT_EQ(loaded, 3); /* host, testdecline, testgood */
    /* testnf's scale returns an error status: the admission self-check quarantined it. */
    CHECK_STR_CONTAINS(reason_of(rt, "testnf"), "quarantined by the admission self-check");
    CHECK_STR_CONTAINS(reason_of(rt, "testnf"), "returned not found");

    /* Routing: scale goes testdecline (20) > testgood (10) > host (1). */
    memra_device *host = memra_device_host(rt);
    const char *names[8];
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_scale, names, 8), 3);
    CHECK_STR_EQ(names[0], "testdecline");
    CHECK_STR_EQ(names[1], "testgood");
    CHECK_STR_EQ(names[2], "host");
    /* With the self-check off (MEMRA_ADMISSION=off) testnf serves, and a module
     * whose op fails with NOT_FOUND ran exactly once. */
    {
        const char *off[] = {"MEMRA_ADMISSION=off", NULL};
        memra_options oo = o;
        oo.settings = off;
        memra_runtime *rt2;
        CHECK_OK(memra_open(&oo, &rt2));
        CHECK_STR_EQ(reason_of(rt2, "testnf"), "");
        memra_device *h2 = memra_device_host(rt2);
        CHECK_INT_EQ(memra_routing_get(h2, MEMRA_OP_scale, names, 8), 4);
        CHECK_STR_EQ(names[2], "testnf"); /* ties (10) by name: testgood < testnf */
        float w[2] = {1.0f, 3.0f};
        memra_op_args na = {.struct_size = sizeof na, .src = (memra_dptr)(uintptr_t)w, .n = 2, .s = 2.0f};
        CHECK_STATUS(memra_module_call(h2, "testnf", MEMRA_OP_scale, &na), MEMRA_STATUS_NOT_FOUND);
        CHECK(w[0] == 2.0f && w[1] == 6.0f);
        memra_close(rt2);
    }
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_gemm_f16, names, 8), 1);
    CHECK_STR_EQ(names[0], "host");

    /* Decline falls through: odd n declines in testdecline, testgood serves. */
    float v[3] = {1.5f, -2.0f, 0.25f};
    memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)v, .n = 3, .s = 2.0f};
    memra_status st = memra_module_call(host, "testdecline", MEMRA_OP_scale, &a);
    CHECK_INT_EQ(st, MEMRA_STATUS_DECLINED);
    CHECK_STR_EQ(a.decline_reason, "odd length");
    CHECK(v[0] == 1.5f); /* untouched on decline */
    CHECK_OK(memra_module_call(host, "testgood", MEMRA_OP_scale, &a));
    CHECK(v[0] == 3.0f && v[1] == -4.0f && v[2] == 0.5f);
    ledger_find f = {.op = "scale", .module = "testdecline", .reason = "odd length"};
    memra_ledger_visit(rt, visit, &f);
    CHECK_INT_EQ(f.declines, 1);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_scale, "testgood"), 1);

    /* A ledger callback may call back into memra (no lock is held). */
    memra_ledger_visit(rt, reenter, host);

    /* Preferences are data: prefer host for scale, disable testdecline. */
    CHECK_OK(memra_routing_configure(rt, "scale=host", "testdecline"));
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_scale, names, 8), 2);
    CHECK_STR_EQ(names[0], "host");
    CHECK_STR_EQ(names[1], "testgood");
    CHECK_STATUS(memra_routing_configure(rt, "nosuchop=host", NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_routing_configure(rt, "scale", NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_OK(memra_routing_configure(rt, "", "scale=testgood"));
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_scale, names, 8), 2);
    CHECK_STR_EQ(names[0], "testdecline");
    CHECK_STR_EQ(names[1], "host");

    /* A module that does not provide the op is NOT_FOUND by name. */
    CHECK_STATUS(memra_module_call(host, "testgood", MEMRA_OP_gemm_f16, &a), MEMRA_STATUS_NOT_FOUND);
    CHECK_STATUS(memra_module_call(host, "nosuch", MEMRA_OP_scale, &a), MEMRA_STATUS_NOT_FOUND);

    /* A decline's reason stays readable after its module is gone. */
    CHECK_OK(memra_routing_configure(rt, "", ""));
    float odd[3] = {1, 2, 3};
    memra_op_args da = {.struct_size = sizeof da, .src = (memra_dptr)(uintptr_t)odd, .n = 3, .s = 2.0f};
    CHECK_STATUS(memra_module_call(host, "testdecline", MEMRA_OP_scale, &da), MEMRA_STATUS_DECLINED);
    CHECK_OK(memra_module_unload(rt, "testdecline"));
    CHECK_STR_EQ(da.decline_reason, "odd length");

    /* Hot-unload and reload. */
    CHECK_OK(memra_module_unload(rt, "testgood"));
    CHECK_STATUS(memra_module_call(host, "testgood", MEMRA_OP_scale, &a), MEMRA_STATUS_NOT_FOUND);
    CHECK_STR_EQ(reason_of(rt, "testgood.so"), "unloaded");
    CHECK_STATUS(memra_module_unload(rt, "host"), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_module_load(rt, "testgood.so"), MEMRA_STATUS_INVALID_ARGUMENT); /* relative */
    memra_close(rt);

    /* Bad preference text at open is a clear error, not a silent default. */
    memra_options bad = {.struct_size = sizeof bad, .no_cuda = 1, .no_default_modules = 1, .prefer = "gemm=host"};
    CHECK_STATUS(memra_open(&bad, &rt), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "'gemm' is not an op");
    printf("ok\n");
    return 0;
}
