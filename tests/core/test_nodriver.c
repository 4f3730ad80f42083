/* memra runs without a CUDA driver and says why; the toolkit's stub library
 * is recognised as a stub. argv[1]: "missing" or a path to the stub. */
#include <stdint.h>
#include <stdlib.h>

#include "memra/memra.h"
#include "test.h"

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_nodriver missing|<stub path>");
    const char *want;
    if (strcmp(argv[1], "missing") == 0) {
        setenv("MEMRA_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
        want = "no CUDA driver found";
    } else {
        FILE *f = fopen(argv[1], "rb");
        if (f == NULL) TEST_SKIP("no stub library at %s", argv[1]);
        fclose(f);
        setenv("MEMRA_CUDA_DRIVER", argv[1], 1);
        want = "stub library";
    }
    memra_options o = {.struct_size = sizeof o, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    CHECK_STR_CONTAINS(memra_driver_status(rt), want);
    CHECK_INT_EQ(memra_driver_version(rt), 0);
    CHECK_INT_EQ(memra_device_count(rt), 1);
    const memra_device_caps *c = memra_device_caps_get(memra_device_get(rt, 0));
    CHECK_INT_EQ(c->arch, MEMRA_ARCH_HOST);
    CHECK_STR_EQ(c->profile, "host");
    CHECK(memra_device_host(rt) == memra_device_get(rt, 0));
    /* A buffer round trip on the host device. */
    memra_buffer *b;
    CHECK_OK(memra_buffer_create(memra_device_host(rt), 64, &b));
    char in[64], out[64];
    for (int i = 0; i < 64; i++) in[i] = (char)(i * 7 + 1);
    CHECK_OK(memra_buffer_write(b, 0, in, 64));
    CHECK_OK(memra_buffer_read(b, 0, out, 64));
    CHECK(memcmp(in, out, 64) == 0);
    CHECK_STATUS(memra_buffer_write(b, 60, in, 8), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_buffer_create(memra_device_host(rt), 0, &b), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_buffer_create(memra_device_host(rt), SIZE_MAX, &b), MEMRA_STATUS_INVALID_ARGUMENT);
    memra_buffer_destroy(b);
    memra_buffer_destroy(NULL);
    memra_close(rt);
    memra_close(NULL);
    /* A bad forced profile is a clear error. */
    setenv("MEMRA_ARCH", "sm77", 1);
    CHECK_STATUS(memra_open(&o, &rt), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "MEMRA_ARCH=sm77");
    CHECK_STR_CONTAINS(memra_last_error(), "expected one of sm90|sm120|cuda|host");
    printf("ok: %s\n", want);
    return 0;
}
