/* Measured routing: memra_tune_race over the GEMM test modules (testslow with
 * its two variants, testgemm, host), entries recorded and consulted by
 * memra_matmul before the scores, shape-class neighbours, the tuning file
 * (written, read back, and ignored whole when corrupt, foreign, unsafe, or
 * naming a changed module version), memra_tune_clear.
 * argv[1] = the GEMM test module folder. */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/sha256.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

static char g_dir[256], g_file[512];
static const char *g_mods;

static memra_runtime *open_rt(const char *extra)
{
    static char cache[300];
    snprintf(cache, sizeof cache, "MEMRA_CACHE_DIR=%s", g_dir);
    /* a wall-clock limit: raised for sanitizers on a busy machine (testslow is slow on purpose) */
    const char *settings[] = {cache, "MEMRA_ADMISSION_TIMEOUT_MS=120000", extra, NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .ignore_environment = 1,
                       .module_path = g_mods, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

static uint64_t hits(memra_runtime *rt, const char *module)
{
    return memra_ledger_hits(memra_device_host(rt), MEMRA_OP_gemm_bf16, module);
}

/* One matmul through the routing of a bf16 weight [n x k] at m; checks y against the host module. */
static void matmul_once(memra_runtime *rt, int m, int n, int k)
{
    memra_device *host = memra_device_host(rt);
    uint16_t *wb = malloc((size_t)n * k * 2);
    float *x = malloc((size_t)m * k * 4), *y = malloc((size_t)m * n * 4), *yr = malloc((size_t)m * n * 4);
    CHECK(wb && x && y && yr);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
    for (int i = 0; i < n * k; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        wb[i] = memra_bf16_from_f32((float)((int)(s % 2001) - 1000) / 1000.0f);
    }
    for (int i = 0; i < m * k; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((int)(s % 2001) - 1000) / 500.0f;
    }
    x[0] = 1.5f;
    memra_weight_desc wd = {.struct_size = sizeof wd, .format = MEMRA_FORMAT_BF16, .out_f = n, .in_f = k, .data = wb,
                            .size = (size_t)n * k * 2, .name = "tune-test"};
    memra_weight *w;
    CHECK_OK(memra_weight_create(rt, &wd, &w));
    CHECK_OK(memra_weight_prepare(w, host));
    CHECK_OK(memra_matmul(host, w, (memra_dptr)(uintptr_t)x, m, (memra_dptr)(uintptr_t)y, NULL));
    memra_op_args a = {.struct_size = sizeof a};
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = m, .n = n, .k = k, .w = (memra_dptr)(uintptr_t)wb,
                               .x = (memra_dptr)(uintptr_t)x, .y = (memra_dptr)(uintptr_t)yr, .ldy = n, .alpha = 1.0f};
    CHECK_OK(memra_module_call(host, "host", MEMRA_OP_gemm_bf16, &a));
    /* Every test module and the host sum exact products in double: equal to 1e-6 of the mass at most. */
    for (int i = 0; i < m * n; i++) CHECK(fabsf(y[i] - yr[i]) <= 1e-6f * (1.0f + fabsf(yr[i])) * (float)k);
    memra_weight_destroy(w);
    free(wb), free(x), free(y), free(yr);
}

static const char *entry_state(memra_runtime *rt, int32_t n, int32_t k, int32_t mc)
{
    for (int i = 0; i < memra_tune_count(rt); i++) {
        memra_tune_entry e = {.struct_size = sizeof e};
        CHECK_OK(memra_tune_entry_get(rt, i, &e));
        if (e.n == n && e.k == k && e.m_class == mc) return e.state;
    }
    return NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    char *b = malloc(1 << 16);
    *len = fread(b, 1, (1 << 16) - 1, f);
    b[*len] = '\0';
    fclose(f);
    return b;
}

static void spit(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(text, 1, len, f) == len);
    fclose(f);
    chmod(path, 0600);
}

/* Rewrite the file's body with `from` replaced by `to`, with a valid checksum. */
static void rewrite(const char *from, const char *to)
{
    size_t len;
    char *t = slurp(g_file, &len), out[1 << 16];
    char *body = strchr(strchr(t, '\n') + 1, '\n') + 1;
    char nb[1 << 16];
    size_t o = 0;
    for (char *p = body; *p;) {
        if (strncmp(p, from, strlen(from)) == 0) {
            memcpy(nb + o, to, strlen(to));
            o += strlen(to);
            p += strlen(from);
        } else nb[o++] = *p++;
    }
    uint8_t d[MEMRA__SHA256_BYTES];
    char hex[65];
    memra__sha256(nb, o, d);
    memra__hex(d, sizeof d, hex);
    int h = snprintf(out, sizeof out, "memra-tune\t2\nsha256\t%s\n", hex);
    memcpy(out + h, nb, o);
    spit(g_file, out, (size_t)h + o);
    free(t);
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_tune <gemm module folder>");
    g_mods = argv[1];
    snprintf(g_dir, sizeof g_dir, "/tmp/memra-tune-test.XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    snprintf(g_file, sizeof g_file, "%s/tune/tuning.memra", g_dir);

    memra_runtime *rt = open_rt(NULL);
    memra_device *host = memra_device_host(rt);
    CHECK_STR_EQ(memra_tune_file(rt), g_file);
    CHECK_STR_EQ(memra_tune_file_status(rt), "absent");
    CHECK_INT_EQ(memra_tune_m_class(1), 1);
    CHECK_INT_EQ(memra_tune_m_class(16), 16);
    CHECK_INT_EQ(memra_tune_m_class(17), 32);
    CHECK_INT_EQ(memra_tune_m_class(4096), 4096);

    /* The race: five arms, each checked and timed, each ran (ledger). */
    memra_tune_result r = {.struct_size = sizeof r};
    CHECK_OK(memra_tune_race(host, MEMRA_OP_gemm_bf16, 16, 64, 64, 3, &r));
    CHECK_INT_EQ(r.n_arms, 5); /* testslow, testslow.reps4, testslow.reps1, testgemm, host */
    CHECK_STR_EQ(r.arms[0].module, "testslow");
    CHECK_STR_EQ(r.arms[0].variant, "");
    CHECK_STR_EQ(r.arms[2].variant, "reps1");
    for (int i = 0; i < r.n_arms; i++) {
        printf("  %s.%s %.1f us hits %llu %s\n", r.arms[i].module, r.arms[i].variant, r.arms[i].median_us,
               (unsigned long long)r.arms[i].hits, r.arms[i].verdict);
        CHECK(r.arms[i].ok);
        /* the check, the batch-sizing sample (a warm-up and one call), then per repetition a warm-up and the
         * batch (twice for the baseline: its twin) */
        CHECK_INT_EQ(r.arms[i].hits, 3 + (uint64_t)r.reps_done * (uint64_t)(1 + r.batch) * (i == r.baseline ? 2 : 1));
        CHECK(r.arms[i].median_us > 0.0);
        /* the spread (appended quartiles) brackets the median */
        CHECK(r.q1_us[i] > 0.0 && r.q1_us[i] <= r.arms[i].median_us && r.arms[i].median_us <= r.q3_us[i]);
    }
    {
        /* a caller built before the quartiles were appended: its struct_size is honoured */
        memra_tune_result *old = calloc(1, sizeof *old);
        CHECK(old != NULL);
        old->struct_size = (uint32_t)offsetof(memra_tune_result, q1_us);
        old->q1_us[0] = -1.0;
        CHECK_OK(memra_tune_race(host, MEMRA_OP_gemm_bf16, 16, 64, 64, 1, old));
        CHECK_INT_EQ(old->n_arms, 5);
        CHECK(old->q1_us[0] == -1.0); /* past its size: untouched */
        CHECK_INT_EQ(old->struct_size, (uint32_t)offsetof(memra_tune_result, q1_us));
        free(old);
    }
    CHECK_INT_EQ(r.baseline, 0);
    CHECK(r.winner >= 0);
    CHECK_INT_EQ(r.reps_done, 3); /* reps 3 is below the default min_reps 5: every repetition runs */
    CHECK_STR_EQ(r.stop, "reps");
    /* 8 repetitions against 1: the default must be slower than reps1; a real win is chosen. */
    CHECK(r.arms[0].median_us > 2.0 * r.arms[2].median_us);
    CHECK(r.gain[2] > 2.0 && r.gain_lo[2] > 1.0 && r.gain_lo[2] <= r.gain[2] && r.gain[2] <= r.gain_hi[2]);
    CHECK(r.noise_floor >= 0.03);
    CHECK(r.chosen >= 0 && r.chosen != r.baseline && r.gain_lo[r.chosen] > 1.0);
    CHECK(r.self_gain > 0.0 && r.self_lo <= r.self_gain && r.self_gain <= r.self_hi);
    {
        /* the appended knobs: a budget stops after min_reps; rep_us gets every repetition's times */
        double *rep = calloc(40 * (MEMRA_TUNE_MAX_ARMS + 1), sizeof *rep);
        memra_tune_result rb = {.struct_size = sizeof rb, .budget_ms = 1.0, .min_reps = 4, .rep_us = rep, .rep_cap = 40};
        CHECK_OK(memra_tune_race(host, MEMRA_OP_gemm_bf16, 16, 64, 64, 40, &rb));
        CHECK_INT_EQ(rb.reps_done, 4);
        CHECK_STR_EQ(rb.stop, "budget");
        for (int q = 0; q < 4; q++) {
            for (int i = 0; i < rb.n_arms; i++) CHECK(rep[q * (MEMRA_TUNE_MAX_ARMS + 1) + i] > 0.0);
            CHECK(rep[q * (MEMRA_TUNE_MAX_ARMS + 1) + MEMRA_TUNE_MAX_ARMS] > 0.0); /* the twin */
        }
        CHECK(rep[4 * (MEMRA_TUNE_MAX_ARMS + 1)] == 0.0); /* past reps_done: untouched */
        free(rep);
    }
    CHECK_STATUS(memra_tune_race(host, MEMRA_OP_scale, 16, 64, 64, 3, &r), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STATUS(memra_tune_race(host, MEMRA_OP_gemm_bf16, 16, 64, 60, 3, &r), MEMRA_STATUS_INVALID_ARGUMENT);

    /* A race at m = 40 judges 16 sampled rows: a wrong arm (testwrong, admitted
     * here with the self-check off) is excluded, never timed, never the winner. */
    {
        memra_runtime *rw = open_rt("MEMRA_ADMISSION=off");
        memra_tune_result rr = {.struct_size = sizeof rr};
        CHECK_OK(memra_tune_race(memra_device_host(rw), MEMRA_OP_gemm_bf16, 40, 64, 64, 2, &rr));
        int seen = 0;
        for (int i = 0; i < rr.n_arms; i++) {
            printf("  m=40: %s.%s %s\n", rr.arms[i].module, rr.arms[i].variant, rr.arms[i].verdict);
            if (strcmp(rr.arms[i].module, "testwrong") == 0) {
                seen = 1;
                CHECK(!rr.arms[i].ok);
                CHECK_STR_CONTAINS(rr.arms[i].verdict, "wrong: gemm_bf16 m=40 n=64 k=64, 16 rows");
                CHECK(rr.arms[i].median_us == 0.0);
            } else if (strcmp(rr.arms[i].module, "testfail") == 0) {
                CHECK(!rr.arms[i].ok);
                CHECK_STR_CONTAINS(rr.arms[i].verdict, "error: module error");
            } else {
                CHECK(rr.arms[i].ok);
            }
        }
        CHECK(seen);
        CHECK(rr.winner >= 0 && strcmp(rr.arms[rr.winner].module, "testwrong") != 0);
        memra_close(rw);
    }

    /* Scores route gemm_bf16 to testslow (40); a tuned class routes to testgemm. */
    uint64_t s0 = hits(rt, "testslow"), g0 = hits(rt, "testgemm");
    matmul_once(rt, 16, 64, 64);
    CHECK_INT_EQ(hits(rt, "testslow") - s0, 1);
    CHECK_OK(memra_tune_record(host, MEMRA_OP_gemm_bf16, 16, 64, 64, "testgemm", NULL, 10.0, 20.0));
    CHECK_OK(memra_tune_record(host, MEMRA_OP_gemm_bf16, 200, 64, 64, "testslow", "reps1", 10.0, 20.0));
    CHECK_STATUS(memra_tune_record(host, MEMRA_OP_gemm_bf16, 16, 64, 64, "testslow", "reps7", 1, 1),
                 MEMRA_STATUS_NOT_FOUND);
    CHECK_STATUS(memra_tune_record(host, MEMRA_OP_gemm_bf16, 16, 64, 64, "testwrong", NULL, 1, 1),
                 MEMRA_STATUS_NOT_FOUND); /* quarantined */
    s0 = hits(rt, "testslow"), g0 = hits(rt, "testgemm");
    matmul_once(rt, 16, 64, 64); /* class 16: testgemm */
    matmul_once(rt, 9, 64, 64);  /* class 16 */
    matmul_once(rt, 40, 64, 64); /* class 64: nearest tuned classes 16 and 256 -> 16 (2 vs 2 steps: the smaller) */
    CHECK_INT_EQ(hits(rt, "testgemm") - g0, 3);
    matmul_once(rt, 130, 64, 64); /* class 256: testslow.reps1 */
    matmul_once(rt, 16, 64, 128); /* (n, k) never tuned: the scores, testslow */
    CHECK_INT_EQ(hits(rt, "testslow") - s0, 2);
    {
        /* A "no win" class keeps the scores' pick and is not served by a neighbour's entry. */
        memra_tune_claim nw = {.struct_size = sizeof nw, .win = 0, .module = "testgemm", .median_us = 10.0,
                               .baseline_us = 10.1, .gain = 1.01, .gain_lo = 0.98, .gain_hi = 1.04,
                               .noise_floor = 0.03, .reps = 20};
        CHECK_OK(memra_tune_record_claim(host, MEMRA_OP_gemm_bf16, 64, 64, 64, &nw));
        CHECK_STR_CONTAINS(entry_state(rt, 64, 64, 64), "no win: the scores route");
        s0 = hits(rt, "testslow"), g0 = hits(rt, "testgemm");
        matmul_once(rt, 40, 64, 64); /* class 64: no win, the scores (testslow), not class 16's testgemm */
        CHECK_INT_EQ(hits(rt, "testslow") - s0, 1);
        CHECK_INT_EQ(hits(rt, "testgemm") - g0, 0);
        /* memra_tune_use(0): the scores everywhere; (1): the table again */
        CHECK_OK(memra_tune_use(rt, 0));
        matmul_once(rt, 16, 64, 64);
        CHECK_INT_EQ(hits(rt, "testslow") - s0, 2);
        CHECK_OK(memra_tune_use(rt, 1));
        matmul_once(rt, 16, 64, 64);
        CHECK_INT_EQ(hits(rt, "testgemm") - g0, 1);
        memra_tune_claim bad = nw;
        bad.struct_size = 8;
        CHECK_STATUS(memra_tune_record_claim(host, MEMRA_OP_gemm_bf16, 64, 64, 64, &bad), MEMRA_STATUS_INVALID_ARGUMENT);
    }
    /* A preference wins over measurements. */
    CHECK_OK(memra_routing_configure(rt, "gemm_bf16=host", NULL));
    g0 = hits(rt, "testgemm");
    matmul_once(rt, 16, 64, 64);
    CHECK_INT_EQ(hits(rt, "testgemm") - g0, 0);
    CHECK_OK(memra_routing_configure(rt, "", NULL));

    /* Saved, read back at open: the same routing. */
    CHECK_OK(memra_tune_save(rt));
    struct stat st;
    CHECK(stat(g_file, &st) == 0 && (st.st_mode & 0777) == 0600);
    memra_close(rt);
    rt = open_rt(NULL);
    CHECK_STR_EQ(memra_tune_file_status(rt), "read 3 entries");
    CHECK_STR_EQ(entry_state(rt, 64, 64, 16), "active");
    memra_tune_entry e = {.struct_size = sizeof e};
    CHECK_OK(memra_tune_entry_get(rt, 1, &e));
    CHECK_STR_EQ(e.source, g_file);
    CHECK_INT_EQ(e.win, 1);
    {
        memra_tune_entry nw = {.struct_size = sizeof nw};
        CHECK_OK(memra_tune_entry_get(rt, 2, &nw));
        CHECK_INT_EQ(nw.win, 0); /* the "no win" record read back with its claim */
        CHECK(fabs(nw.gain - 1.01) < 1e-9 && fabs(nw.gain_lo - 0.98) < 1e-9 && fabs(nw.noise_floor - 0.03) < 1e-9);
        CHECK_INT_EQ(nw.reps, 20);
        /* a caller built before the claim was appended */
        memra_tune_entry old = {.struct_size = (uint32_t)offsetof(memra_tune_entry, win), .win = 7};
        CHECK_OK(memra_tune_entry_get(rt, 2, &old));
        CHECK_INT_EQ(old.win, 7);
    }
    CHECK_STR_EQ(e.variant, "reps1");
    CHECK_STR_EQ(e.module_version, "1.0.0-test");
    g0 = hits(rt, "testgemm");
    matmul_once(rt, 16, 64, 64);
    CHECK_INT_EQ(hits(rt, "testgemm") - g0, 1);
    memra_close(rt);
    /* MEMRA_TUNE=0: read, shown, not used. */
    rt = open_rt("MEMRA_TUNE=0");
    CHECK_STR_CONTAINS(memra_tune_file_status(rt), "not used");
    s0 = hits(rt, "testslow");
    matmul_once(rt, 16, 64, 64);
    CHECK_INT_EQ(hits(rt, "testslow") - s0, 1);
    memra_close(rt);

    /* A changed module version: that entry is ignored (with a log line), the other kept. */
    rewrite("testgemm\t1.0.0-test", "testgemm\t0.9.0-old");
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(entry_state(rt, 64, 64, 16), "module version changed");
    CHECK_STR_EQ(entry_state(rt, 64, 64, 256), "active");
    s0 = hits(rt, "testslow");
    matmul_once(rt, 16, 64, 64); /* its neighbour class 256 (testslow.reps1) now serves class 16 */
    CHECK_INT_EQ(hits(rt, "testslow") - s0, 1);
    memra_close(rt);
    /* Another machine's key: kept, ignored here. */
    rewrite("host cc0", "NVIDIA H200 cc90");
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(entry_state(rt, 64, 64, 256), "no device here has this key");
    memra_close(rt);

    /* Corrupt, foreign or unsafe files are ignored whole, never trusted in part. */
    size_t len;
    char *good = slurp(g_file, &len);
    char *bad = malloc(len + 1);
    memcpy(bad, good, len + 1);
    bad[len - 3] ^= 1; /* one bit of the body */
    spit(g_file, bad, len);
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(memra_tune_file_status(rt), "checksum mismatch");
    CHECK_INT_EQ(memra_tune_count(rt), 0);
    memra_close(rt);
    {
        /* A version 1 file (the format before claims), checksum and all valid: treated as absent. */
        const char *v1body = "entry\thost cc0 sms2 driver0 memra0.1.0\tgemm_bf16\t64\t64\t16\ttestgemm\t1.0.0-test\t-"
                             "\t10.000\t20.000\n";
        uint8_t d[MEMRA__SHA256_BYTES];
        char hex[65], v1[1024];
        memra__sha256(v1body, strlen(v1body), d);
        memra__hex(d, sizeof d, hex);
        int h = snprintf(v1, sizeof v1, "memra-tune\t1\nsha256\t%s\n%s", hex, v1body);
        spit(g_file, v1, (size_t)h);
        rt = open_rt(NULL);
        CHECK_STR_CONTAINS(memra_tune_file_status(rt), "absent: format version 1 is not 2");
        CHECK_INT_EQ(memra_tune_count(rt), 0);
        memra_close(rt);
    }
    spit(g_file, "not a tuning file\n", 18);
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(memra_tune_file_status(rt), "magic");
    memra_close(rt);
    spit(g_file, good, len);
    chmod(g_file, 0666);
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(memra_tune_file_status(rt), "writable by others");
    memra_close(rt);
    char link[600];
    snprintf(link, sizeof link, "%s/tune/real.memra", g_dir);
    spit(link, good, len);
    unlink(g_file);
    CHECK(symlink(link, g_file) == 0);
    rt = open_rt(NULL);
    CHECK_STR_CONTAINS(memra_tune_file_status(rt), "symbolic link");
    memra_close(rt);
    unlink(g_file);
    spit(g_file, good, len);
    rt = open_rt(NULL);
    CHECK_INT_EQ(memra_tune_count(rt), 3); /* two entries and the "no win" */
    /* --clear: nothing in memory, no file. */
    CHECK_OK(memra_tune_clear(rt));
    CHECK_INT_EQ(memra_tune_count(rt), 0);
    CHECK(access(g_file, F_OK) != 0);
    memra_close(rt);
    unlink(link);
    char tdir[600];
    snprintf(tdir, sizeof tdir, "%s/tune", g_dir);
    rmdir(tdir);
    rmdir(g_dir);
    free(good);
    free(bad);
    printf("ok\n");
    return 0;
}
