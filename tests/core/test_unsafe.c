/* Modules are never loaded from a folder or file others can write, unless
 * asked explicitly. argv[1] = path of testgood.so. */
#include <sys/stat.h>
#include <unistd.h>

#include "memra/memra.h"
#include "test.h"

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    if (!a || !b) return -1;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    fclose(a);
    fclose(b);
    return 0;
}

static int loaded(memra_runtime *rt, const char *name, const char **reason)
{
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        memra_module_info_get(rt, i, &mi);
        if (strstr(mi.path, name) || strcmp(mi.name, name) == 0) {
            *reason = mi.reason;
            return mi.loaded;
        }
    }
    *reason = "(not seen)";
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_unsafe <testgood.so>");
    char dir[] = "/tmp/memra-unsafe-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[512];
    snprintf(file, sizeof file, "%s/testgood.so", dir);
    CHECK(copy_file(argv[1], file) == 0);
    const char *why;
    memra_runtime *rt;
    memra_options o = {.struct_size = sizeof o, .module_path = dir, .no_cuda = 1, .no_default_modules = 1};

    /* Safe folder and file: loaded. */
    chmod(dir, 0755);
    chmod(file, 0755);
    CHECK_OK(memra_open(&o, &rt));
    CHECK(loaded(rt, "testgood", &why));
    memra_close(rt);

    /* World-writable folder: refused with the reason. */
    chmod(dir, 0777);
    CHECK_OK(memra_open(&o, &rt));
    CHECK(!loaded(rt, dir, &why));
    CHECK_STR_CONTAINS(why, "unsafe module folder");
    CHECK_STR_CONTAINS(why, "writable by anyone");
    CHECK_STATUS(memra_module_load(rt, file), MEMRA_STATUS_MODULE_ERROR);
    memra_close(rt);

    /* ...unless asked explicitly. */
    o.allow_unsafe_modules = 1;
    CHECK_OK(memra_open(&o, &rt));
    CHECK(loaded(rt, "testgood", &why));
    memra_close(rt);
    o.allow_unsafe_modules = 0;

    /* Group-writable file in a safe folder: refused. */
    chmod(dir, 0755);
    chmod(file, 0775);
    CHECK_OK(memra_open(&o, &rt));
    CHECK(!loaded(rt, "testgood", &why));
    CHECK_STR_CONTAINS(why, "unsafe file");
    memra_close(rt);

    unlink(file);
    rmdir(dir);
    printf("ok\n");
    return 0;
}
