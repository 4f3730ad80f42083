/* Error messages users read carry no source location; at MEMRA_LOG=debug
 * (where memra logs every step for its developers) they do.
 * usage: test_error_location (no arguments) */
#include <string.h>

#include "memra/memra.h"
#include "tests/test.h"

static void log_quiet(int level, const char *component, const char *msg, void *user)
{
    (void)level;
    (void)component;
    (void)msg;
    (void)user;
}

/* A failure made by MEMRA__FAIL inside the library, under MEMRA_LOG=level. */
static void failing_call(const char *level, char *msg, size_t len)
{
    char setting[64];
    snprintf(setting, sizeof setting, "MEMRA_LOG=%s", level);
    const char *const settings[] = {setting, NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .log_fn = log_quiet,
                       .settings = settings, .ignore_environment = 1};
    memra_runtime *rt = NULL;
    CHECK_OK(memra_open(&o, &rt));
    memra_weight *w = NULL;
    CHECK(memra_weight_create(rt, NULL, &w) != MEMRA_STATUS_OK);
    snprintf(msg, len, "%s", memra_last_error());
    memra_close(rt);
}

int main(void)
{
    char plain[1024], debug[1024];
    failing_call("warn", plain, sizeof plain);
    failing_call("debug", debug, sizeof debug);
    printf("warn:  %s\ndebug: %s\n", plain, debug);
    CHECK(plain[0] != '\0');
    CHECK(strstr(plain, ".c:") == NULL);
    CHECK(strstr(debug, ".c:") != NULL);
    CHECK(strncmp(plain, debug, strlen(plain)) == 0); /* the same message, the location added */
    printf("PASS\n");
    return 0;
}
