/* Every public function of include/memra/ (every header) given a NULL out parameter, a
 * struct_size of 0 or too small, a non-finite alpha, or sizes that overflow:
 * each answers INVALID_ARGUMENT (or, for functions without a status, leaves
 * its output alone and says so in memra_last_error), and nothing crashes. */
#include <math.h>
#include <stdint.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

#define CHECK_INVALID(expr) CHECK_STATUS((expr), MEMRA_STATUS_INVALID_ARGUMENT)

static void visit_noop(const memra_ledger_row *row, void *user)
{
    (void)row;
    (void)user;
}

int main(void)
{
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt = NULL;

    /* memra_open: NULL out, options too small. */
    CHECK_INVALID(memra_open(&o, NULL));
    memra_options small = o;
    small.struct_size = 0;
    CHECK_INVALID(memra_open(&small, &rt));
    CHECK(rt == NULL);
    small.struct_size = 4;
    CHECK_INVALID(memra_open(&small, &rt));
    CHECK_OK(memra_open(&o, &rt));
    memra_device *dev = memra_device_host(rt);
    CHECK(dev != NULL);

    /* Getters. */
    CHECK_INVALID(memra_module_info_get(rt, 0, NULL));
    CHECK_INVALID(memra_device_clocks_get(dev, NULL));
    CHECK_INVALID(memra_device_clocks_get(NULL, NULL));
    CHECK_INVALID(memra_jit_info_get(rt, NULL));
    CHECK_INVALID(memra_jit_disk_status(rt, NULL, 10));
    size_t cnt = 0;
    memra_jit_entry_info *ents = NULL;
    CHECK_INVALID(memra_jit_list(rt, NULL, &cnt));
    CHECK_INVALID(memra_jit_list(rt, &ents, NULL));
    CHECK(memra_device_caps_get(NULL) == NULL);

    /* memra_routing_get: NULL names with cap > 0, negative cap. */
    const char *names[4] = {"x", "x", "x", "x"};
    CHECK_INT_EQ(memra_routing_get(dev, MEMRA_OP_scale, NULL, 4), -1);
    CHECK_STR_CONTAINS(memra_last_error(), "names is NULL");
    CHECK_INT_EQ(memra_routing_get(dev, MEMRA_OP_scale, names, -1), -1);
    int n = memra_routing_get(dev, MEMRA_OP_scale, NULL, 0); /* count query */
    CHECK(n >= 1);
    CHECK_INT_EQ(memra_routing_get(dev, MEMRA_OP_scale, names, 4), n);
    CHECK_STR_EQ(names[0], "host");

    /* memra_caps_describe: NULL buffer answered, not dereferenced. */
    memra_caps_describe(MEMRA_CAP_HOST, NULL, 10);
    CHECK_STR_CONTAINS(memra_last_error(), "memra_caps_describe");
    char cb[8] = "unset";
    memra_caps_describe(MEMRA_CAP_HOST, cb, 0); /* len 0: nothing written */
    CHECK_STR_EQ(cb, "unset");

    /* Buffers and timers. */
    memra_buffer *buf = NULL;
    CHECK_INVALID(memra_buffer_create(dev, 64, NULL));
    CHECK_INVALID(memra_buffer_create(NULL, 64, &buf));
    CHECK_OK(memra_buffer_create(dev, 64, &buf));
    CHECK_INVALID(memra_buffer_write(buf, 0, NULL, 8));
    CHECK_INVALID(memra_buffer_read(buf, 0, NULL, 8));
    CHECK_INVALID(memra_buffer_write(buf, SIZE_MAX - 2, cb, 8)); /* offset + bytes wraps */
    CHECK_INVALID(memra_buffer_read(buf, SIZE_MAX - 2, cb, 8));
    memra_timer *tm = NULL;
    CHECK_INVALID(memra_timer_create(dev, NULL));
    CHECK_OK(memra_timer_create(dev, &tm));
    CHECK_OK(memra_timer_start(tm, NULL));
    CHECK_OK(memra_timer_stop(tm, NULL));
    CHECK_INVALID(memra_timer_elapsed_ms(tm, NULL));
    CHECK_INVALID(memra_timer_elapsed_ms(NULL, NULL));
    memra_timer_destroy(tm);

    /* Ledger: a NULL callback or file is refused quietly (void functions). */
    memra_ledger_visit(rt, NULL, NULL);
    CHECK_STR_CONTAINS(memra_last_error(), "memra_ledger_visit");
    memra_ledger_visit(rt, visit_noop, NULL);

    /* Weights: struct_size 0 / too small, NULL out. */
    float wf[4 * 32];
    for (int i = 0; i < 4 * 32; i++) wf[i] = (float)((i * 37) % 11) - 5.0f;
    memra_weight_desc wd = {.struct_size = sizeof wd, .format = MEMRA_FORMAT_F32, .out_f = 4, .in_f = 32,
                            .data = wf, .size = sizeof wf};
    memra_weight *w = NULL;
    CHECK_INVALID(memra_weight_create(rt, &wd, NULL));
    memra_weight_desc wd0 = wd;
    wd0.struct_size = 0;
    CHECK_INVALID(memra_weight_create(rt, &wd0, &w));
    wd0.struct_size = 8;
    CHECK_INVALID(memra_weight_create(rt, &wd0, &w));
    CHECK(w == NULL);
    CHECK_OK(memra_weight_create(rt, &wd, &w));
    memra_weight_state ws;
    CHECK_INVALID(memra_weight_query(w, dev, NULL));
    CHECK_OK(memra_weight_prepare(w, dev));
    CHECK_OK(memra_weight_query(w, dev, &ws));

    /* memra_matmul_ex: struct_size 0 / too small, non-finite alpha. */
    memra_buffer *x = NULL, *y = NULL;
    CHECK_OK(memra_buffer_create(dev, 2 * 32 * 4, &x));
    CHECK_OK(memra_buffer_create(dev, 2 * 4 * 4, &y));
    float xv[64];
    for (int i = 0; i < 64; i++) xv[i] = (float)((i * 13) % 7) - 3.0f;
    CHECK_OK(memra_buffer_write(x, 0, xv, sizeof xv));
    memra_matmul_args ma = {.struct_size = sizeof ma, .x = memra_buffer_ptr(x), .m = 2, .y = memra_buffer_ptr(y),
                            .alpha = 1.0f};
    CHECK_OK(memra_matmul_ex(dev, w, &ma));
    memra_matmul_args bad = ma;
    bad.struct_size = 0;
    CHECK_INVALID(memra_matmul_ex(dev, w, &bad));
    CHECK_STR_CONTAINS(memra_last_error(), "struct_size");
    bad.struct_size = 4;
    CHECK_INVALID(memra_matmul_ex(dev, w, &bad));
    bad = ma;
    bad.alpha = NAN;
    CHECK_INVALID(memra_matmul_ex(dev, w, &bad));
    CHECK_STR_CONTAINS(memra_last_error(), "alpha");
    bad.alpha = INFINITY;
    CHECK_INVALID(memra_matmul_ex(dev, w, &bad));
    bad.alpha = -INFINITY;
    CHECK_INVALID(memra_matmul_ex(dev, w, &bad));

    /* memra_module_call: op args struct_size 0 / too small. */
    memra_op_args oa = {.struct_size = sizeof oa, .src = memra_buffer_ptr(y), .n = 8, .s = 2.0f};
    CHECK_OK(memra_module_call(dev, "host", MEMRA_OP_scale, &oa));
    oa.struct_size = 0;
    CHECK_INVALID(memra_module_call(dev, "host", MEMRA_OP_scale, &oa));
    oa.struct_size = 8;
    CHECK_INVALID(memra_module_call(dev, "host", MEMRA_OP_scale, &oa));

    /* The format helpers without a status write nothing through NULL. */
    memra_q8_0_encode(NULL, NULL);
    memra_decode_row(MEMRA_FORMAT_F32, wf, 32, NULL);
    memra_decode_row(MEMRA_FORMAT_F32, NULL, 32, xv);

    /* Sizes that would overflow are answered 0 (the documented "invalid"). */
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_F32, INT64_MAX), 0);
    CHECK(memra_format_row_bytes(MEMRA_FORMAT_F16, INT64_MAX - 1) == (uint64_t)(INT64_MAX - 1) * 2u); /* fits */
    CHECK(memra_format_row_bytes(MEMRA_FORMAT_Q8_0, INT64_MAX / 32 * 32) == (uint64_t)(INT64_MAX / 32) * 34u); /* fits */
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_F32, 1024), 4096);
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_F32, -4), 0);
    CHECK_INT_EQ(memra_q8_1_bytes(INT64_MAX, 512), 0);
    CHECK_INT_EQ(memra_q8_1_bytes(4, INT64_MAX), 0);
    CHECK_INT_EQ(memra_q8_1_bytes(-1, 512), 0);
    CHECK_INT_EQ(memra_q8_1_bytes(4, 512), 4 * 4 * 160);
    CHECK_INT_EQ(memra_q8_0r_bytes(INT64_MAX, 128), 0);
    CHECK_INT_EQ(memra_q8_0r_bytes(4, INT64_MAX), 0);
    CHECK_INT_EQ(memra_q8_0r_bytes(4, 256), 2 * 4 * 144);
    /* A weight whose byte count would wrap is refused by its shape. */
    memra_weight_desc huge = wd;
    huge.out_f = INT64_MAX;
    CHECK_INVALID(memra_weight_create(rt, &huge, &w));

    memra_weight_destroy(w);
    memra_buffer_destroy(x);
    memra_buffer_destroy(y);
    memra_buffer_destroy(buf);
    memra_close(rt);
    printf("ok\n");
    return 0;
}
