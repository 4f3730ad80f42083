/* The configuration layer through the API: options win over the environment
 * and each value records its source; bad values fail memra_open naming the
 * variable and the value; ignore_environment; the log callback receives the
 * configuration's warnings (and nothing reaches it below its level);
 * memra_config_set for module knobs only; the f16 budget per device. */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memra/memra.h"
#include "test.h"

typedef struct log_seen {
    pthread_mutex_t lock;
    int n, n_warn, n_debug, bad_level;
    char last_warn[512];
} log_seen;

static void on_log(int level, const char *component, const char *message, void *user)
{
    log_seen *s = user;
    pthread_mutex_lock(&s->lock);
    s->n++;
    if (level < MEMRA_LOG_ERROR || level > MEMRA_LOG_DEBUG || component == NULL || message == NULL) s->bad_level++;
    if (level == MEMRA_LOG_WARN) {
        s->n_warn++;
        snprintf(s->last_warn, sizeof s->last_warn, "%s: %s", component, message);
    }
    if (level == MEMRA_LOG_DEBUG) s->n_debug++;
    pthread_mutex_unlock(&s->lock);
}

static const memra_config_entry *entry(memra_runtime *rt, const char *name, memra_config_entry *e)
{
    for (int i = 0; i < memra_config_count(rt); i++) {
        CHECK_OK(memra_config_entry_get(rt, i, e));
        if (strcmp(e->name, name) == 0) return e;
    }
    TEST_FAIL_AT("no configuration entry %s", name);
}

static void bad_open(const char *setting, const char *want1, const char *want2)
{
    const char *settings[] = {setting, NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt = (memra_runtime *)(uintptr_t)1;
    CHECK_STATUS(memra_open(&o, &rt), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK(rt == (memra_runtime *)(uintptr_t)1); /* out parameter untouched */
    CHECK_STR_CONTAINS(memra_last_error(), want1);
    CHECK_STR_CONTAINS(memra_last_error(), want2);
    printf("ok: %s refused: %s\n", setting, memra_last_error());
}

int main(void)
{
    /* Source: option beats environment, environment beats default. */
    setenv("MEMRA_HOST_THREADS", "5", 1);
    setenv("MEMRA_STATS", "0", 1);
    const char *settings[] = {"MEMRA_HOST_THREADS=3", "MEMRA_F16_BUDGET_MB=7", "MEMRA_PREFER=gemm_f16=nosuchmod",
                              "MEMRA_NO_SUCH_KNOB=x", NULL};
    log_seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings,
                       .log_fn = on_log, .log_user = &seen};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    memra_config_entry e;
    entry(rt, "MEMRA_HOST_THREADS", &e);
    CHECK_STR_EQ(e.value, "3");
    CHECK_STR_EQ(e.source, "option");
    CHECK_INT_EQ(memra_device_caps_get(memra_device_host(rt))->sm_count, 3);
    entry(rt, "MEMRA_STATS", &e);
    CHECK_STR_EQ(e.source, "environment");
    entry(rt, "MEMRA_Q8_0_RECORDS", &e);
    CHECK_STR_EQ(e.source, "default");
    entry(rt, "MEMRA_NO_SUCH_KNOB", &e);
    CHECK_INT_EQ(e.known, 0);
    CHECK_STR_EQ(memra_config_value(rt, "MEMRA_NO_SUCH_KNOB"), "x");
    CHECK(memra_config_value(rt, "MEMRA_MMQ_BM") == NULL);
    CHECK_INT_EQ(memra_device_f16_budget_get(memra_device_host(rt)), 7);
    CHECK_STR_EQ(memra_device_f16_budget_source(memra_device_host(rt)), "option");
    CHECK_OK(memra_device_f16_budget_set(memra_device_host(rt), 11));
    CHECK_INT_EQ(memra_device_f16_budget_get(memra_device_host(rt)), 11);
    CHECK_STR_EQ(memra_device_f16_budget_source(memra_device_host(rt)), "api");
    CHECK_INT_EQ(memra_device_f16_used(memra_device_host(rt)), 0);
    CHECK(memra_device_f16_budget_source(NULL) == NULL);
    CHECK_STATUS(memra_device_f16_budget_set(NULL, 1), MEMRA_STATUS_INVALID_ARGUMENT);
    /* the floor's route threshold: a NULL device or an m past INT32_MAX refused; no weight, no route */
    CHECK_STATUS(memra_device_floor_f16_m_set(NULL, 1), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_device_floor_f16_m_set(memra_device_host(rt), (int64_t)INT32_MAX + 1), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "memra_device_floor_f16_m_set");
    CHECK_OK(memra_device_floor_f16_m_set(memra_device_host(rt), 64));
    CHECK_OK(memra_device_floor_f16_m_set(memra_device_host(rt), -1));
    CHECK_INT_EQ(memra_weight_floor_f16_m(NULL, memra_device_host(rt)), 0);
    CHECK_OK(memra_device_floor_f16_m_set(memra_device_host(rt), MEMRA_FLOOR_F16_M_AUTO));
    CHECK_OK(memra_device_floor_f16_m_set(memra_device_host(rt), -1));

    /* Warnings: the unknown variable and the module that is not loaded, through
     * the callback (not stderr) and in the list. */
    CHECK(memra_config_warning_count(rt) >= 2);
    int saw_mod = 0, saw_var = 0;
    for (int i = 0; i < memra_config_warning_count(rt); i++) {
        saw_mod |= strstr(memra_config_warning(rt, i), "nosuchmod") != NULL;
        saw_var |= strstr(memra_config_warning(rt, i), "MEMRA_NO_SUCH_KNOB") != NULL;
    }
    CHECK(saw_mod && saw_var);
    CHECK(seen.n_warn >= 2);
    CHECK_INT_EQ(seen.n_debug, 0); /* below the level (warn) */
    CHECK_INT_EQ(seen.bad_level, 0);
    /* memra_routing_configure naming a module that is not loaded: a warning too. */
    const int before = seen.n_warn;
    CHECK_OK(memra_routing_configure(rt, "gemm_q8_0r=alsonotloaded", NULL));
    CHECK_INT_EQ(seen.n_warn, before + 1);
    CHECK_STR_CONTAINS(seen.last_warn, "alsonotloaded");
    CHECK_STATUS(memra_routing_configure(rt, "nosuchop=host", NULL), MEMRA_STATUS_INVALID_ARGUMENT);

    /* memra_config_set: module knobs only, values checked. */
    CHECK_OK(memra_config_set(rt, "MEMRA_MMQ_BM", "64"));
    CHECK_STR_EQ(memra_config_value(rt, "MEMRA_MMQ_BM"), "64");
    entry(rt, "MEMRA_MMQ_BM", &e);
    CHECK_STR_EQ(e.source, "option");
    CHECK_OK(memra_config_set(rt, "MEMRA_MMQ_BM", NULL));
    CHECK(memra_config_value(rt, "MEMRA_MMQ_BM") == NULL);
    CHECK_STATUS(memra_config_set(rt, "MEMRA_MMQ_BM", "-1"), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_config_set(rt, "MEMRA_LOG", "debug"), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STATUS(memra_config_set(rt, "MEMRA_F16_BUDGET_MB", "1"), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), "memra_device_f16_budget_set");
    CHECK_STATUS(memra_config_set(rt, "MEMRA_NOPE", "1"), MEMRA_STATUS_NOT_FOUND);
    /* A tuning loop forces knobs many times (the mmq tests: hundreds): no cap. */
    for (int i = 0; i < 300; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i % 2 ? 64 : 128);
        CHECK_OK(memra_config_set(rt, "MEMRA_MMQ_BM", v));
        CHECK_STR_EQ(memra_config_value(rt, "MEMRA_MMQ_BM"), v);
    }
    memra_close(rt);

    /* MEMRA_LOG=debug as an option: debug lines reach the callback. */
    const char *dbg[] = {"MEMRA_LOG=debug", NULL};
    log_seen seen2 = {.lock = PTHREAD_MUTEX_INITIALIZER};
    memra_options o2 = {.struct_size = sizeof o2, .no_cuda = 1, .no_default_modules = 1, .settings = dbg,
                        .log_fn = on_log, .log_user = &seen2};
    CHECK_OK(memra_open(&o2, &rt));
    memra_op_args a = {.struct_size = sizeof a};
    CHECK_STATUS(memra_module_call(memra_device_host(rt), "nosuch", MEMRA_OP_scale, &a), MEMRA_STATUS_NOT_FOUND);
    CHECK(seen2.n_debug > 0);
    memra_close(rt);

    /* Bad values, named with their value, from options and from the environment. */
    bad_open("MEMRA_F16_BUDGET_MB=abc", "MEMRA_F16_BUDGET_MB=abc", "option");
    bad_open("MEMRA_F16_BUDGET_MB=-1", "MEMRA_F16_BUDGET_MB=-1", "expected an integer");
    bad_open("MEMRA_LOG=verbose", "MEMRA_LOG=verbose", "error|warn|info|debug");
    bad_open("MEMRA_HOST_THREADS=0", "MEMRA_HOST_THREADS=0", "1..256");
    bad_open("MEMRA_FLOOR_F16_M=fast", "MEMRA_FLOOR_F16_M=fast", "0..2147483647|auto");
    bad_open("MEMRA_FLOOR_F16_M=-1", "MEMRA_FLOOR_F16_M=-1", "expected an integer");
    /* an integer knob's words after its range are values, whole words only: 1..16|auto|waves|fill */
    bad_open("MEMRA_W16_SPLIT=wave", "MEMRA_W16_SPLIT=wave", "1..16|auto|waves|fill");
    bad_open("MEMRA_W16_SPLIT=auto|waves", "MEMRA_W16_SPLIT=auto|waves", "expected an integer");
    bad_open("MEMRA_W16_SPLIT=17", "MEMRA_W16_SPLIT=17", "expected an integer");
    bad_open("MEMRA_W16_SPLIT=fil", "MEMRA_W16_SPLIT=fil", "expected an integer");
    /* the 160-token tile's fitted twins: a switch */
    bad_open("MEMRA_W16_XE_FIT=2", "MEMRA_W16_XE_FIT=2", "expected 0 or 1");
    /* the grouped tile's token widths: 160 is one, 192 is not */
    bad_open("MEMRA_W16_TILE=192", "MEMRA_W16_TILE=192", "auto|64|128|160|256");
    {
        const char *one[] = {"MEMRA_W16_TILE=160", NULL};
        memra_options os = {.struct_size = sizeof os, .no_cuda = 1, .no_default_modules = 1, .settings = one};
        CHECK_OK(memra_open(&os, &rt));
        entry(rt, "MEMRA_W16_TILE", &e);
        CHECK_STR_EQ(e.value, "160");
        memra_close(rt);
    }
    for (int i = 0; i < 4; i++) {
        static const char *const ok_split[4] = {"MEMRA_W16_SPLIT=waves", "MEMRA_W16_SPLIT=auto", "MEMRA_W16_SPLIT=16",
                                                "MEMRA_W16_SPLIT=fill"};
        const char *one[] = {ok_split[i], NULL};
        memra_options os = {.struct_size = sizeof os, .no_cuda = 1, .no_default_modules = 1, .settings = one};
        CHECK_OK(memra_open(&os, &rt));
        entry(rt, "MEMRA_W16_SPLIT", &e);
        CHECK_STR_EQ(e.value, ok_split[i] + strlen("MEMRA_W16_SPLIT="));
        memra_close(rt);
    }
    bad_open("MEMRA_FP8_QUANT=fast", "MEMRA_FP8_QUANT=fast", "fused|nocapture|2pass");
    bad_open("MEMRA_DISABLE=nosuchop=host", "MEMRA_DISABLE=nosuchop=host", "not an op");
    bad_open("MEMRA_LOG", "options.settings[0]", "MEMRA_NAME=value");
    setenv("MEMRA_JIT_CACHE_MAX_MB", "lots", 1);
    memra_options o3 = {.struct_size = sizeof o3, .no_cuda = 1, .no_default_modules = 1};
    CHECK_STATUS(memra_open(&o3, &rt), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "MEMRA_JIT_CACHE_MAX_MB=lots (environment)");
    /* ignore_environment: the bad variable is not read at all. */
    memra_options o4 = {.struct_size = sizeof o4, .no_cuda = 1, .no_default_modules = 1, .ignore_environment = 1};
    CHECK_OK(memra_open(&o4, &rt));
    entry(rt, "MEMRA_HOST_THREADS", &e);
    CHECK_STR_EQ(e.source, "default");
    memra_close(rt);
    unsetenv("MEMRA_JIT_CACHE_MAX_MB");

    /* Issue 27: integers are decimal digits only, tiles decimal numbers >= 1,
     * the cache root and tuning file absolute and within PATH_MAX. */
    bad_open("MEMRA_JIT_CACHE_MAX_MB=+1", "MEMRA_JIT_CACHE_MAX_MB=+1", "decimal digits");
    bad_open("MEMRA_JIT_CACHE_MAX_MB=0x10", "MEMRA_JIT_CACHE_MAX_MB=0x10", "decimal digits");
    bad_open("MEMRA_JIT_CACHE_MAX_MB=1e3", "MEMRA_JIT_CACHE_MAX_MB=1e3", "decimal digits");
    bad_open("MEMRA_JIT_CACHE_MAX_MB= 5", "MEMRA_JIT_CACHE_MAX_MB= 5", "decimal digits");
    bad_open("MEMRA_HOST_THREADS=+4", "MEMRA_HOST_THREADS=+4", "expected an integer");
    bad_open("MEMRA_FP8BLK_TILE=0x10", "MEMRA_FP8BLK_TILE=0x10", "1..1024");
    bad_open("MEMRA_FP8BLK_TILE=64x0", "MEMRA_FP8BLK_TILE=64x0", "1..1024");
    bad_open("MEMRA_CACHE_DIR=cache", "MEMRA_CACHE_DIR=cache", "relative path is refused");
    bad_open("MEMRA_TUNE_FILE=t.memra", "MEMRA_TUNE_FILE=t.memra", "relative path is refused");
    {
        static char longp[PATH_MAX + 64];
        snprintf(longp, sizeof longp, "MEMRA_TUNE_FILE=/");
        for (size_t i = strlen(longp); i < sizeof longp - 1; i++) longp[i] = 'a';
        bad_open(longp, "MEMRA_TUNE_FILE=/aaa", "longer than PATH_MAX");
    }
    {
        const char *okv[] = {"MEMRA_JIT_CACHE_MAX_MB=0.5", "MEMRA_FP8BLK_TILE=128x64x2x4", NULL};
        memra_options ok = {.struct_size = sizeof ok, .no_cuda = 1, .no_default_modules = 1, .settings = okv};
        CHECK_OK(memra_open(&ok, &rt));
        memra_close(rt);
    }
    /* Unknown variables are a warning, never a failure, however many; an
     * empty value is reported as such. */
    {
        char names[40][32];
        for (int i = 0; i < 40; i++) {
            snprintf(names[i], sizeof names[i], "MEMRA_UNKNOWN_%02d", i);
            setenv(names[i], "1", 1);
        }
        setenv("MEMRA_SHADOW_RATE", "", 1);
        memra_options o6 = {.struct_size = sizeof o6, .no_cuda = 1, .no_default_modules = 1};
        CHECK_OK(memra_open(&o6, &rt));
        int empty_said = 0, past_cap = 0;
        for (int i = 0; i < memra_config_warning_count(rt); i++) {
            const char *w = memra_config_warning(rt, i);
            empty_said += strstr(w, "MEMRA_SHADOW_RATE is set but empty") != NULL;
            past_cap += strstr(w, "not kept") != NULL;
        }
        printf("warnings: %d (empty said %d, past the cap %d)\n", memra_config_warning_count(rt), empty_said, past_cap);
        CHECK(empty_said == 1);
        CHECK(past_cap >= 1);
        memra_close(rt);
        for (int i = 0; i < 40; i++) unsetenv(names[i]);
        unsetenv("MEMRA_SHADOW_RATE");
    }

    /* An options struct from before the log members (struct_size covers up to
     * `disable`): still accepted, the environment read. */
    memra_options o5 = {.struct_size = (uint32_t)(offsetof(memra_options, disable) + sizeof(const char *)),
                        .no_cuda = 1, .no_default_modules = 1};
    CHECK_OK(memra_open(&o5, &rt));
    entry(rt, "MEMRA_HOST_THREADS", &e);
    CHECK_STR_EQ(e.value, "5");
    CHECK_STR_EQ(e.source, "environment");
    memra_close(rt);
    printf("ok\n");
    return 0;
}
