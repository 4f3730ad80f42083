/* Measured routing: the tuning table, its file, the race of `memra tune`, and
 * the lookup routing makes before the scores.
 *
 * The file (docs/ARCHITECTURE.md, "Tuning file") is text, one record a line,
 * fields separated by one TAB:
 *   line 1   "memra-tune" TAB format version ("2")
 *   line 2   "sha256" TAB the lower-case hex SHA-256 of every byte after line 2
 *   then     "entry" or "nowin" TAB device key TAB op TAB n TAB k TAB m class
 *            TAB module TAB module version TAB variant ("-" for the default)
 *            TAB median us TAB baseline us TAB gain TAB gain low TAB gain high
 *            TAB noise floor TAB repetitions
 * An "entry" routes its class to the module; a "nowin" line records that the
 * race found no real win there (module: the best arm seen), so the class keeps
 * the scores' pick and is not served by a neighbour's entry. A version 1 file
 * (no claims) is treated as absent: memra tune rebuilds it.
 * The device key is "<name> cc<cc> sms<SMs> driver<version> memra<version>":
 * an entry applies only to a device whose key is the same. It is read once at
 * memra_open from MEMRA_TUNE_FILE (absolute) or <cache root>/tune/tuning.memra
 * (the JIT cache's root): the file's folder must be the user's and writable by
 * nobody else, the file a regular file (O_NOFOLLOW) of the user, mode without
 * group/other write, at most 1 MiB; any failed check, a wrong magic, version
 * or checksum, or one malformed line, and the whole file is ignored with a
 * log line (never trusted in part). Written by memra_tune_save as the JIT
 * cache writes: folders made 0700, a fresh O_EXCL temporary, fsync, rename. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/observe/admission.h"
#include "base/error.h"
#include "jit/sha256.h"
#include "core/observe/tune_stats.h"

#define TUNE_MAGIC "memra-tune"
#define TUNE_VERSION 2
#define TUNE_MAX_BYTES (1u << 20)
#define TUNE_MAX_ENTRIES 4096

int32_t memra_tune_m_class(int32_t m)
{
    if (m <= 1) return 1;
    int32_t c = 1;
    while (c < m && c < (1 << 20)) c <<= 1;
    return c;
}

static int is_gemm_op(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
}

void memra__tune_key(const memra_device *dev, char *out, size_t len)
{
    snprintf(out, len, "%s cc%d sms%d driver%d memra%s", dev->caps.name, dev->caps.cc, dev->caps.sm_count,
             dev->caps.driver_version, memra_version());
}

/* ---- the file's location and checks --------------------------------------- */

static int owner_only(int fd, const char *what, char *why, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, len, "stat %s: %s", what, strerror(errno));
        return 0;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, len, "%s belongs to uid %u, not the current user (uid %u)", what, (unsigned)st.st_uid,
                 (unsigned)geteuid());
        return 0;
    }
    if ((st.st_mode & 022) != 0) {
        snprintf(why, len, "%s is writable by %s (mode %03o)", what, (st.st_mode & 002) ? "others" : "its group",
                 (unsigned)(st.st_mode & 0777));
        return 0;
    }
    return 1;
}

static void tune_locate(memra_runtime *rt)
{
    rt->tune_path[0] = '\0';
    const char *f = memra__config_lookup(&rt->cfg, "MEMRA_TUNE_FILE");
    if (f != NULL && f[0] != '\0') {
        if (f[0] != '/') {
            snprintf(rt->tune_status, sizeof rt->tune_status, "MEMRA_TUNE_FILE=%.300s is relative: no tuning file", f);
            memra__log(MEMRA_LOG_WARN, "tune", "%s", rt->tune_status);
            return;
        }
        snprintf(rt->tune_path, sizeof rt->tune_path, "%s", f);
        return;
    }
    const char *dir = memra__config_lookup(&rt->cfg, "MEMRA_CACHE_DIR");
    const char *xdg = memra__env("XDG_CACHE_HOME"), *home = memra__env("HOME");
    int n;
    if (dir != NULL && dir[0] != '\0') n = snprintf(rt->tune_path, sizeof rt->tune_path, "%s/tune/tuning.memra", dir);
    else if (xdg != NULL && xdg[0] == '/')
        n = snprintf(rt->tune_path, sizeof rt->tune_path, "%s/memra/tune/tuning.memra", xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(rt->tune_path, sizeof rt->tune_path, "%s/.cache/memra/tune/tuning.memra", home);
    else n = -1;
    if (n < 0 || (size_t)n >= sizeof rt->tune_path - 32) {
        rt->tune_path[0] = '\0';
        snprintf(rt->tune_status, sizeof rt->tune_status, "no tuning file: no MEMRA_CACHE_DIR, XDG_CACHE_HOME or HOME");
    }
}

/* Split path into its folder and file name (both within buffers of PATH_MAX). */
static int split_path(const char *path, char *dir, char *base)
{
    const char *sl = strrchr(path, '/');
    if (sl == NULL || strlen(path) >= PATH_MAX) return 0;
    size_t dl = (size_t)(sl - path);
    memcpy(dir, path, dl ? dl : 1);
    dir[dl ? dl : 1] = '\0';
    snprintf(base, PATH_MAX, "%s", sl + 1);
    return base[0] != '\0';
}

/* ---- parsing ---------------------------------------------------------------- */

static int add_entry(memra_runtime *rt, const memra__tune_ent *e)
{
    for (int i = 0; i < rt->n_tune; i++) {
        memra__tune_ent *o = &rt->tune[i];
        if (strcmp(o->key, e->key) == 0 && o->op == e->op && o->n == e->n && o->k == e->k && o->mc == e->mc) {
            *o = *e;
            return 1;
        }
    }
    if (rt->n_tune >= TUNE_MAX_ENTRIES) return 0;
    if (rt->n_tune == rt->cap_tune) {
        int cap = rt->cap_tune ? rt->cap_tune * 2 : 32;
        memra__tune_ent *t = realloc(rt->tune, (size_t)cap * sizeof *t);
        if (t == NULL) return 0;
        rt->tune = t;
        rt->cap_tune = cap;
    }
    rt->tune[rt->n_tune++] = *e;
    return 1;
}

static int field_copy(char *dst, size_t cap, const char *s)
{
    size_t l = strlen(s);
    if (l == 0 || l >= cap) return 0;
    memcpy(dst, s, l + 1);
    return 1;
}

static int parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) return 0;
    *out = (int32_t)v;
    return 1;
}

static int parse_us(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0.0) || v > 1e12) return 0;
    *out = v;
    return 1;
}

/* One "entry" line (NUL-terminated, no newline) into e; 0 on any flaw. */
static int parse_line(char *line, memra__tune_ent *e)
{
    char *f[17];
    int n = 0;
    for (char *p = line; n < 17;) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (t == NULL) break;
        *t = '\0';
        p = t + 1;
    }
    if (n != 16 || (strcmp(f[0], "entry") != 0 && strcmp(f[0], "nowin") != 0)) return 0;
    memset(e, 0, sizeof *e);
    e->win = f[0][0] == 'e';
    e->op = memra_op_from_name(f[2]);
    if (!field_copy(e->key, sizeof e->key, f[1]) || !is_gemm_op(e->op)) return 0;
    if (!parse_i32(f[3], 1, 1 << 24, &e->n) || !parse_i32(f[4], 1, 1 << 24, &e->k) ||
        !parse_i32(f[5], 1, 1 << 20, &e->mc) || memra_tune_m_class(e->mc) != e->mc)
        return 0;
    if (!field_copy(e->module, sizeof e->module, f[6]) || !field_copy(e->modver, sizeof e->modver, f[7])) return 0;
    if (strcmp(f[8], "-") != 0 && !field_copy(e->variant, sizeof e->variant, f[8])) return 0;
    if (!parse_us(f[9], &e->us) || !parse_us(f[10], &e->base_us)) return 0;
    if (!parse_us(f[11], &e->gain) || !parse_us(f[12], &e->gain_lo) || !parse_us(f[13], &e->gain_hi) ||
        !parse_us(f[14], &e->floor) || !parse_i32(f[15], 0, 1 << 24, &e->reps))
        return 0;
    e->from_file = 1;
    e->dev = -1;
    return 1;
}

static void tune_read(memra_runtime *rt)
{
    char dir[PATH_MAX], base[PATH_MAX], why[PATH_MAX + 200];
    if (!split_path(rt->tune_path, dir, base)) {
        snprintf(rt->tune_status, sizeof rt->tune_status, "ignored: %.400s is not a file path", rt->tune_path);
        return;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT) snprintf(rt->tune_status, sizeof rt->tune_status, "absent");
        else snprintf(rt->tune_status, sizeof rt->tune_status, "absent (%.300s: %s)", dir, strerror(errno));
        return;
    }
    uint8_t *buf = NULL;
    int fd = -1;
    const char *bad = NULL;
    if (!owner_only(dfd, dir, why, sizeof why)) {
        bad = why;
        goto out;
    }
    fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) snprintf(rt->tune_status, sizeof rt->tune_status, "absent");
        else if (errno == ELOOP) bad = "it is a symbolic link";
        else {
            snprintf(why, sizeof why, "open: %s", strerror(errno));
            bad = why;
        }
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        bad = "not a regular file";
        goto out;
    }
    if (!owner_only(fd, base, why, sizeof why)) {
        bad = why;
        goto out;
    }
    if (st.st_size > (off_t)TUNE_MAX_BYTES) {
        bad = "larger than 1 MiB";
        goto out;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (buf == NULL) {
        bad = "out of memory";
        goto out;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got != size) {
        bad = "short read";
        goto out;
    }
    buf[size] = '\0';
    /* line 1: magic and version */
    char *l1 = (char *)buf, *nl = memchr(l1, '\n', size);
    char head[64];
    snprintf(head, sizeof head, "%s\t%d", TUNE_MAGIC, TUNE_VERSION);
    if (nl == NULL || strncmp(l1, TUNE_MAGIC "\t", strlen(TUNE_MAGIC) + 1) != 0) {
        bad = "not a memra tuning file (magic)";
        goto out;
    }
    if ((size_t)(nl - l1) != strlen(head) || memcmp(l1, head, strlen(head)) != 0) {
        /* An older (or newer) format: treated as absent, rebuilt by the next memra tune. */
        const char *v = l1 + strlen(TUNE_MAGIC) + 1;
        const int vl = (int)(nl - v) < 8 ? (int)(nl - v) : 8;
        snprintf(rt->tune_status, sizeof rt->tune_status,
                 "absent: format version %.*s is not %d (an older file: memra tune rebuilds it)", vl, v, TUNE_VERSION);
        memra__log(MEMRA_LOG_INFO, "tune", "tuning file %s: %s", rt->tune_path, rt->tune_status);
        goto out;
    }
    char *l2 = nl + 1, *nl2 = memchr(l2, '\n', size - (size_t)(l2 - l1));
    if (nl2 == NULL || nl2 - l2 != 7 + 64 || strncmp(l2, "sha256\t", 7) != 0) {
        bad = "no checksum line";
        goto out;
    }
    char *body = nl2 + 1;
    size_t blen = size - (size_t)(body - l1);
    uint8_t dig[MEMRA__SHA256_BYTES];
    char hex[2 * MEMRA__SHA256_BYTES + 1];
    memra__sha256(body, blen, dig);
    memra__hex(dig, sizeof dig, hex);
    if (memcmp(hex, l2 + 7, 64) != 0) {
        bad = "checksum mismatch";
        goto out;
    }
    if (blen > 0 && body[blen - 1] != '\n') {
        bad = "the last line is not terminated";
        goto out;
    }
    int lines = 0, n0 = rt->n_tune;
    for (char *p = body; p < body + blen;) {
        char *e = memchr(p, '\n', (size_t)(body + blen - p));
        *e = '\0';
        memra__tune_ent ent;
        lines++;
        const int parsed = parse_line(p, &ent);
        if (!parsed || !add_entry(rt, &ent)) {
            if (parsed && rt->n_tune >= TUNE_MAX_ENTRIES)
                snprintf(why, sizeof why, "line %d is entry %d, past the cap of %d entries", lines + 2, lines,
                         TUNE_MAX_ENTRIES);
            else if (parsed) snprintf(why, sizeof why, "line %d: out of memory", lines + 2);
            else snprintf(why, sizeof why, "line %d is malformed", lines + 2);
            bad = why;
            rt->n_tune = n0;
            goto out;
        }
        p = e + 1;
    }
    snprintf(rt->tune_status, sizeof rt->tune_status, "read %d entr%s", rt->n_tune - n0, rt->n_tune - n0 == 1 ? "y" : "ies");
out:
    if (bad != NULL) {
        snprintf(rt->tune_status, sizeof rt->tune_status, "ignored: %.400s", bad);
        memra__log(MEMRA_LOG_WARN, "tune", "tuning file %s ignored: %s", rt->tune_path, bad);
    }
    free(buf);
    if (fd >= 0) close(fd);
    close(dfd);
}

void memra__tune_open(memra_runtime *rt)
{
    const char *on = memra__config_lookup(&rt->cfg, "MEMRA_TUNE");
    rt->tune_on = on == NULL || strcmp(on, "0") != 0;
    snprintf(rt->tune_status, sizeof rt->tune_status, "absent");
    tune_locate(rt);
    if (rt->tune_path[0] != '\0') tune_read(rt);
    if (!rt->tune_on) {
        size_t l = strlen(rt->tune_status);
        snprintf(rt->tune_status + l, sizeof rt->tune_status - l, " (not used: MEMRA_TUNE=0)");
    }
    MEMRA__DEBUG("tune", "tuning file %s: %s", rt->tune_path[0] ? rt->tune_path : "(none)", rt->tune_status);
}

void memra__tune_close(memra_runtime *rt)
{
    free(rt->tune);
    rt->tune = NULL;
    rt->n_tune = rt->cap_tune = 0;
}

/* ---- routing ------------------------------------------------------------------ */

memra_status memra__tune_resolve(memra_runtime *rt, memra_device *dev, memra__snapshot *s)
{
    char key[200];
    memra__tune_key(dev, key, sizeof key);
    for (int i = 0; i < rt->n_tune; i++) {
        memra__tune_ent *e = &rt->tune[i];
        if (strcmp(e->key, key) != 0) continue;
        e->dev = dev->index;
        const char *why = NULL;
        char wb[200];
        int lane = -1, variant = -1;
        if (!e->win) {
            /* Measured: no arm beat the scores' pick here; the class keeps it (lane -1). */
            snprintf(e->state, sizeof e->state, "no win: the scores route (best %.48s%s%.32s %.2fx [%.2f, %.2f], floor %.0f%%)",
                     e->module, e->variant[0] ? "." : "", e->variant, e->gain, e->gain_lo, e->gain_hi, e->floor * 100.0);
            if (!rt->tune_on) continue;
            memra__tuned *t = realloc(s->tuned[e->op], (size_t)(s->n_tuned[e->op] + 1) * sizeof *t);
            if (t == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "tuned routing");
            s->tuned[e->op] = t;
            t[s->n_tuned[e->op]++] = (memra__tuned){.n = e->n, .k = e->k, .mc = e->mc, .lane = -1, .variant = -1};
            continue;
        }
        for (int l = 0; l < s->n_lanes[e->op]; l++)
            if (strcmp(s->lanes[e->op][l].mod->name, e->module) == 0) lane = l;
        if (!rt->tune_on) why = "MEMRA_TUNE=0";
        else if (lane < 0) why = "module not loaded (or not routed for this op) on this device";
        else if (strcmp(s->lanes[e->op][lane].mod->version, e->modver) != 0) {
            snprintf(wb, sizeof wb, "module version changed (tuned %.60s, loaded %.60s)", e->modver,
                     s->lanes[e->op][lane].mod->version);
            why = wb;
        } else if (e->variant[0] != '\0' &&
                   (variant = memra__variant_index(s->lanes[e->op][lane].mod, dev, e->op, e->variant)) < 0)
            why = "the module no longer lists that variant";
        if (why != NULL) {
            if (strcmp(e->state, why) != 0) e->logged = 0;
            snprintf(e->state, sizeof e->state, "ignored: %.180s", why);
            if (!e->logged && rt->tune_on)
                memra__log(MEMRA_LOG_WARN, "tune", "tuned entry %s n=%d k=%d m<=%d -> %s%s%s on %s ignored: %s",
                           memra_op_name(e->op), e->n, e->k, e->mc, e->module, e->variant[0] ? "." : "", e->variant,
                           dev->label, why);
            e->logged = 1;
            continue;
        }
        snprintf(e->state, sizeof e->state, "active");
        e->logged = 0;
        memra__tuned *t = realloc(s->tuned[e->op], (size_t)(s->n_tuned[e->op] + 1) * sizeof *t);
        if (t == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "tuned routing");
        s->tuned[e->op] = t;
        t[s->n_tuned[e->op]++] = (memra__tuned){.n = e->n, .k = e->k, .mc = e->mc, .lane = lane, .variant = variant};
    }
    return MEMRA_STATUS_OK;
}

static int log2i(int32_t v)
{
    int l = 0;
    while (v > 1) v >>= 1, l++;
    return l;
}

const memra__tuned *memra__tune_find(const memra__snapshot *s, memra_op op, const memra_gemm_args *g)
{
    if (s->n_tuned[op] == 0) return NULL;
    /* A preference names the module: it wins over measurements. */
    if (s->n_lanes[op] > 0 && s->lanes[op][0].score >= (1 << 20)) return NULL;
    const int32_t mc = memra_tune_m_class(g->m);
    const memra__tuned *best = NULL;
    int bestd = 1 << 30;
    for (int i = 0; i < s->n_tuned[op]; i++) {
        const memra__tuned *t = &s->tuned[op][i];
        if (t->n != g->n || t->k != g->k) continue;
        int d = abs(log2i(t->mc) - log2i(mc));
        if (d < bestd || (d == bestd && best != NULL && t->mc < best->mc)) {
            best = t;
            bestd = d;
        }
    }
    return best;
}

/* ---- the race ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values, interpolated between order statistics. */
static double quantile_sorted(const double *v, int n, double q)
{
    const double pos = q * (double)(n - 1);
    const int lo = (int)pos;
    const double f = pos - (double)lo;
    return lo + 1 < n ? v[lo] * (1.0 - f) + v[lo + 1] * f : v[lo];
}

/* The judged rows of a race: at most SUB_ROWS of the m rows (the first, the
 * last and evenly spaced ones), so the host reference and the mass of a
 * 4096-row GEMM cost what 16 rows cost. The sub case borrows the full case's
 * weight and grid; its x holds the sampled rows, its output layout (ldy, the
 * untouched rows around) mirrors the full one's, filled with the same values. */
#define SUB_ROWS 16
typedef struct sub_case {
    acase c;
    int rows[SUB_ROWS];
    int n_rows;
    float *x;
} sub_case;

static int sub_build(const acase *full, int m, sub_case *s)
{
    const memra_gemm_args *g = &full->a.gemm;
    s->n_rows = m < SUB_ROWS ? m : SUB_ROWS;
    for (int i = 0; i < s->n_rows; i++) s->rows[i] = s->n_rows == 1 ? 0 : (int)((int64_t)i * (m - 1) / (s->n_rows - 1));
    s->c = *full;
    s->c.a.gemm.m = s->n_rows;
    if (m > SUB_ROWS) snprintf(s->c.shape, sizeof s->c.shape, "%.30s, 16 rows", full->shape); /* y[i, j]: i-th sampled row */
    s->x = malloc((size_t)s->n_rows * (size_t)g->k * sizeof(float));
    const int64_t ldy = g->ldy;
    s->c.out_bytes = (size_t)(s->n_rows + 2) * (size_t)ldy * sizeof(float);
    float *init = malloc(s->c.out_bytes);
    s->c.out_init = init;
    if (s->x == NULL || init == NULL) return 0;
    const float *fx = NULL;
    for (int i = 0; i < full->n_in; i++)
        if (full->in_off[i] == OFF(gemm.x)) {
            fx = full->in[i];
            s->c.in[i] = s->x;
            s->c.in_bytes[i] = (size_t)s->n_rows * (size_t)g->k * sizeof(float);
        }
    if (fx == NULL) return 0;
    for (int i = 0; i < s->n_rows; i++) memcpy(s->x + (size_t)i * g->k, fx + (size_t)s->rows[i] * g->k, (size_t)g->k * 4);
    const float *finit = full->out_init;
    for (int r = 0; r < s->n_rows + 2; r++) {
        int64_t fr = r == 0 ? 0 : r == s->n_rows + 1 ? g->m + 1 : 1 + s->rows[r - 1];
        memcpy(init + r * ldy, finit + fr * ldy, (size_t)ldy * 4);
    }
    return 1;
}

/* Map the full output's judged rows (and the rows around) into the sub layout. */
static void sub_rows(const acase *full, const sub_case *s, const float *got, float *out)
{
    const int64_t ldy = full->a.gemm.ldy, m = full->a.gemm.m;
    for (int r = 0; r < s->n_rows + 2; r++) {
        int64_t fr = r == 0 ? 0 : r == s->n_rows + 1 ? m + 1 : 1 + s->rows[r - 1];
        memcpy(out + r * ldy, got + fr * ldy, (size_t)ldy * 4);
    }
}

static void sub_free(sub_case *s)
{
    free(s->x);
    free(s->c.out_init);
    memset(s, 0, sizeof *s);
}

typedef struct arm_run {
    const memra__lane *lane;
    int variant;
    double *times; /* us per call at each repetition (reps entries) */
} arm_run;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* One sample of an arm: one untimed warm-up call (its operands in L2 or the
 * CPU caches, and any lazy set-up paid, as for every arm), then `batch`
 * calls back to back between two timer marks; *us = the interval / batch. */
static memra_status sample_arm(memra_device *dev, memra_timer *timer, const memra__lane *l, int variant, memra_op op,
                               const memra_op_args *a, int batch, memra_status *call_st, uint64_t *hits, double *us)
{
    memra__lane lane = *l;
    lane.variant = variant;
    const uint64_t h0 = atomic_load(&lane.cell->hits);
    memra_op_args ca = *a;
    memra_status cs = memra__lane_invoke(dev, &lane, op, &ca), st = MEMRA_STATUS_OK;
    double ms = 0.0;
    if (cs == MEMRA_STATUS_OK) st = memra_timer_start(timer, NULL);
    for (int b = 0; b < batch && cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK; b++) {
        ca = *a;
        cs = memra__lane_invoke(dev, &lane, op, &ca);
    }
    if (cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK) st = memra_timer_stop(timer, NULL);
    if (cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(timer, &ms);
    *hits += atomic_load(&lane.cell->hits) - h0;
    *call_st = cs;
    *us = ms * 1e3 / (double)batch;
    return st;
}

/* The half-width of an interval relative to its point, the larger side. */
static double half_width(double p, double lo, double hi)
{
    const double u = hi / p - 1.0, d = 1.0 - lo / p;
    return u > d ? u : d;
}

#define TUNE_FLOOR_MIN 0.03
#define TUNE_SAMPLE_US 500.0 /* a sample's batch is sized to take about this long */
#define TUNE_BATCH_MAX 16

memra_status memra_tune_race(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, int reps,
                             memra_tune_result *out)
{
    if (dev == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_race: %s is NULL", dev ? "out" : "dev");
    const size_t min_size = offsetof(memra_tune_result, q1_us); /* before the quartiles were appended */
    if (out->struct_size < min_size)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_race: struct_size %u (want at least %zu)",
                           out->struct_size, min_size);
    if ((int)op < 0 || op >= MEMRA_OP_COUNT_ || !is_gemm_op(op))
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "memra_tune_race: %s is not a GEMM op", memra_op_name(op));
    if (m < 1 || n < 1 || k < 32 || k % 32 != 0 || m > (1 << 20) || n > (1 << 20) || k > (1 << 20) || reps < 1 ||
        reps > 10000)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_tune_race: m %d, n %d, k %d (a multiple of 32), reps %d out of range", m, n, k, reps);
    memra_runtime *rt = dev->rt;
    memra_tune_result res;
    memset(&res, 0, sizeof res);
    res.struct_size = sizeof res;
    res.winner = res.baseline = res.chosen = -1;
    /* The appended IN knobs, read only where the caller's struct covers them. */
    const int knobs = out->struct_size >= offsetof(memra_tune_result, reps_done);
    const double budget_ms = knobs && out->budget_ms > 0.0 ? out->budget_ms : 0.0;
    const double target = (knobs && out->target_pct > 0.0 ? out->target_pct : 1.0) * 1e-2;
    int min_reps = knobs && out->min_reps > 0 ? out->min_reps : 5;
    min_reps = min_reps < 3 ? 3 : min_reps;
    double *const rep_us = knobs ? out->rep_us : NULL;
    const int rep_cap = knobs && out->rep_us != NULL ? out->rep_cap : 0;
    if (knobs) {
        res.budget_ms = out->budget_ms, res.target_pct = out->target_pct, res.min_reps = out->min_reps;
        res.rep_us = out->rep_us, res.rep_cap = out->rep_cap;
    }
    const double t_setup = now_ms();
    double *twin = calloc((size_t)reps, sizeof *twin);
    if (twin == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
    memra__snapshot *s = memra__snapshot_acquire(dev);
    if (s == NULL) {
        free(twin);
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "no routing on %s", dev->label);
    }
    memra_device *host = rt->devices[rt->n_devices - 1];
    memra__modrec *href = memra__host_rec(rt);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    acase c, run;
    memra_status st = MEMRA_STATUS_OK;
    void *ref = NULL, *got = NULL;
    memra_dptr bufs[MEMRA__ACASE_MAX_IN] = {0}, ob = 0;
    arm_run arms[MEMRA_TUNE_MAX_ARMS];
    int na = 0;
    memra_timer *timer = NULL;
    sub_case sub;
    void *sub_got = NULL;
    double *sub_mass = NULL;
    memset(&sub, 0, sizeof sub);
    memset(&c, 0, sizeof c);
    if (href == NULL || !memra__acase_gemm(((uint64_t)ts.tv_nsec << 16) ^ (uint64_t)ts.tv_sec, op, m, n, k, &c)) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: inputs");
        goto done;
    }
    run = c;
    const int q8 = op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
    if (q8 && !memra__acase_operands(host, href, &c, &run)) {
        st = MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "memra_tune_race: the host could not make the q8 operands");
        goto done_case;
    }
    got = malloc(c.out_bytes);
    const char *dwhy = NULL;
    if (got == NULL || !sub_build(&c, m, &sub)) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: outputs");
        goto done_ops;
    }
    /* The host reference (and the judge's mass) on the sampled rows only. */
    acase subrun = sub.c;
    const int subq8 = q8 && memra__acase_operands(host, href, &sub.c, &subrun);
    ref = malloc(sub.c.out_bytes);
    sub_got = malloc(sub.c.out_bytes);
    if ((q8 && !subq8) || ref == NULL || sub_got == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
    else st = memra__acase_run(host, href, &subrun, ref, &dwhy, -1);
    if (subq8) memra__acase_operands_free(&sub.c, &subrun);
    if (st != MEMRA_STATUS_OK) goto done_ops;
    /* The judge's mass, made once for every arm (16 rows x n x k: on the 27b sheet half a
     * second each time it is remade). */
    sub_mass = memra__acase_mass(&sub.c);
    if (sub_mass == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: mass");
        goto done_ops;
    }
    sub.c.mass = sub_mass;
    /* Inputs and output on the device, once. */
    memra_op_args a = run.a;
    a.struct_size = sizeof a;
    for (int i = 0; i < run.n_in && st == MEMRA_STATUS_OK; i++) {
        st = memra__dev_alloc(dev, run.in_bytes[i], &bufs[i]);
        if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, bufs[i], run.in[i], run.in_bytes[i]);
        memcpy((char *)&a + run.in_off[i], &bufs[i], sizeof(memra_dptr));
    }
    if (st == MEMRA_STATUS_OK) st = memra__dev_alloc(dev, run.out_bytes, &ob);
    memcpy((char *)&a + run.out_off, &ob, sizeof ob);
    if (st == MEMRA_STATUS_OK) st = memra_timer_create(dev, &timer);
    if (st != MEMRA_STATUS_OK) goto done_ops;
    /* The arms: every lane (score order), its default then each variant. */
    for (int l = 0; l < s->n_lanes[op] && na < MEMRA_TUNE_MAX_ARMS; l++) {
        size_t nv = 0;
        memra__variants(s->lanes[op][l].mod, dev, op, &nv);
        for (int v = -1; v < (int)nv && na < MEMRA_TUNE_MAX_ARMS; v++) {
            memra_tune_arm *ar = &res.arms[na];
            const memra__lane *lane = &s->lanes[op][l];
            snprintf(ar->module, sizeof ar->module, "%s", lane->mod->name);
            if (v >= 0) {
                size_t nv2 = 0;
                const memra_variant *vl = memra__variants(lane->mod, dev, op, &nv2);
                snprintf(ar->variant, sizeof ar->variant, "%s", vl[v].name);
            }
            arms[na] = (arm_run){.lane = lane, .variant = v, .times = calloc((size_t)reps, sizeof(double))};
            if (arms[na].times == NULL) {
                st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
                goto done_arms;
            }
            na++;
        }
    }
    res.n_arms = na;
    /* Check each arm first: its result must match the host before a time counts. */
    for (int i = 0; i < na; i++) {
        memra_tune_arm *ar = &res.arms[i];
        memra__lane lane = *arms[i].lane;
        lane.variant = arms[i].variant;
        uint64_t h0 = atomic_load(&lane.cell->hits);
        memra_status cs = memra__dev_upload(dev, ob, run.out_init, run.out_bytes);
        memra_op_args ca = a;
        if (cs == MEMRA_STATUS_OK) cs = memra__lane_invoke(dev, &lane, op, &ca);
        if (cs == MEMRA_STATUS_OK) cs = memra__dev_download(dev, got, ob, run.out_bytes);
        ar->hits = atomic_load(&lane.cell->hits) - h0;
        char why[200];
        if (cs == MEMRA_STATUS_DECLINED) snprintf(ar->verdict, sizeof ar->verdict, "declined: %.180s", ca.decline_reason);
        else if (cs != MEMRA_STATUS_OK)
            snprintf(ar->verdict, sizeof ar->verdict, "error: %s: %.150s", memra_status_str(cs), memra_last_error());
        else if (sub_rows(&c, &sub, got, sub_got), !memra__acase_judge(&sub.c, sub_got, ref, why, sizeof why))
            snprintf(ar->verdict, sizeof ar->verdict, "wrong: %.180s", why);
        else {
            ar->ok = 1;
            snprintf(ar->verdict, sizeof ar->verdict, "ok");
        }
    }
    memra__clear_error();
    res.setup_ms = now_ms() - t_setup;
    /* The baseline: what the scores route to, the first lane whose default passed
     * (a lane that declines falls through to the next in dispatch as here). */
    for (int i = 0; i < na && res.baseline < 0; i++)
        if (res.arms[i].ok && arms[i].variant < 0) res.baseline = i;
    /* The batch: one call of each ok arm timed alone (after its check), the
     * fastest sized to about TUNE_SAMPLE_US per sample; the same for all arms. */
    double t_min = 0.0;
    for (int i = 0; i < na && st == MEMRA_STATUS_OK; i++) {
        if (!res.arms[i].ok) continue;
        memra_status cs;
        double us = 0.0;
        st = sample_arm(dev, timer, arms[i].lane, arms[i].variant, op, &a, 1, &cs, &res.arms[i].hits, &us);
        if (cs != MEMRA_STATUS_OK) {
            res.arms[i].ok = 0;
            snprintf(res.arms[i].verdict, sizeof res.arms[i].verdict, "failed while timed: %s", memra_status_str(cs));
            if (res.baseline == i) res.baseline = -1;
        } else if (us > 0.0 && (t_min == 0.0 || us < t_min)) t_min = us;
    }
    int batch = t_min > 0.0 ? (int)ceil(TUNE_SAMPLE_US / t_min) : 1;
    batch = batch < 1 ? 1 : batch > TUNE_BATCH_MAX ? TUNE_BATCH_MAX : batch;
    res.batch = batch;
    /* The slots of a repetition: every ok arm, and the baseline's twin (slot na). */
    int slots[MEMRA_TUNE_MAX_ARMS + 1], ns = 0;
    for (int i = 0; i < na; i++)
        if (res.arms[i].ok) slots[ns++] = i;
    if (res.baseline >= 0) slots[ns++] = na;
    const double t_race = now_ms();
    snprintf(res.stop, sizeof res.stop, "reps");
    int r = 0;
    for (; r < reps && st == MEMRA_STATUS_OK && ns > 1; r++) {
        for (int j = 0; j < ns && st == MEMRA_STATUS_OK; j++) {
            const int slot = slots[(j + r) % ns], i = slot == na ? res.baseline : slot;
            if (!res.arms[i].ok) continue;
            memra_status cs;
            double us = 0.0;
            st = sample_arm(dev, timer, arms[i].lane, arms[i].variant, op, &a, batch, &cs, &res.arms[i].hits, &us);
            if (st != MEMRA_STATUS_OK) break;
            if (cs != MEMRA_STATUS_OK) {
                res.arms[i].ok = 0;
                snprintf(res.arms[i].verdict, sizeof res.arms[i].verdict, "failed while timed: %s",
                         memra_status_str(cs));
                continue;
            }
            (slot == na ? twin : arms[i].times)[r] = us;
        }
        /* Stop early: after min_reps, when the intervals that decide are narrow, or the budget is spent. */
        const int done = r + 1;
        if (done < min_reps || st != MEMRA_STATUS_OK) continue;
        if (budget_ms > 0.0 && now_ms() - t_race >= budget_ms) {
            snprintf(res.stop, sizeof res.stop, "budget");
            r++;
            break;
        }
        if (res.baseline < 0 || !res.arms[res.baseline].ok || (done - min_reps) % 2 != 0) continue;
        const double *bt = arms[res.baseline].times;
        double p, lo, hi, best = 0.0, best_hw = 1.0;
        /* a coarser bootstrap (500 resamples) to decide when to stop; the verdict uses the full one */
        if (!memra__boot_gain(bt, twin, done, 500, MEMRA__BOOT_SEED, &p, &lo, &hi)) continue;
        const double self_hw = half_width(p, lo, hi);
        int any_up = 0;
        for (int i = 0; i < na; i++) {
            if (!res.arms[i].ok || i == res.baseline) continue;
            double gp, gl, gh;
            if (!memra__boot_gain(bt, arms[i].times, done, 500, MEMRA__BOOT_SEED, &gp, &gl, &gh)) continue;
            if (gh > 1.0) any_up = 1;
            if (gp > best) best = gp, best_hw = half_width(gp, gl, gh);
        }
        if (self_hw <= target && (!any_up || best_hw <= target)) {
            snprintf(res.stop, sizeof res.stop, any_up ? "narrow" : "settled: no arm above the baseline");
            r++;
            break;
        }
    }
    res.reps_done = r;
    res.race_ms = now_ms() - t_race;
    for (int i = 0; i < na; i++) {
        memra_tune_arm *ar = &res.arms[i];
        if (!ar->ok || r == 0) continue;
        double *sorted = malloc((size_t)r * sizeof *sorted);
        if (sorted == NULL) {
            st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
            break;
        }
        memcpy(sorted, arms[i].times, (size_t)r * sizeof *sorted);
        qsort(sorted, (size_t)r, sizeof(double), cmp_double);
        ar->median_us = r % 2 ? sorted[r / 2] : 0.5 * (sorted[r / 2 - 1] + sorted[r / 2]);
        res.q1_us[i] = quantile_sorted(sorted, r, 0.25);
        res.q3_us[i] = quantile_sorted(sorted, r, 0.75);
        free(sorted);
        if (res.winner < 0 || ar->median_us < res.arms[res.winner].median_us) res.winner = i;
    }
    /* The verdict: gains over the baseline with their intervals, the floor from its twin. */
    res.noise_floor = TUNE_FLOOR_MIN;
    if (res.baseline >= 0 && res.arms[res.baseline].ok && r >= 2) {
        const double *bt = arms[res.baseline].times;
        if (memra__boot_gain(bt, twin, r, MEMRA__BOOT_ITERS, MEMRA__BOOT_SEED, &res.self_gain, &res.self_lo,
                             &res.self_hi)) {
            const double miss = fmax(res.self_hi - 1.0, 1.0 - res.self_lo);
            if (miss > res.noise_floor) res.noise_floor = miss;
        }
        for (int i = 0; i < na; i++) {
            if (!res.arms[i].ok) continue;
            if (!memra__boot_gain(bt, arms[i].times, r, MEMRA__BOOT_ITERS, MEMRA__BOOT_SEED, &res.gain[i],
                                  &res.gain_lo[i], &res.gain_hi[i]))
                continue;
            if (i != res.baseline && res.gain_lo[i] > 1.0 && res.gain[i] >= 1.0 + res.noise_floor &&
                (res.chosen < 0 || res.gain[i] > res.gain[res.chosen]))
                res.chosen = i;
        }
    }
    if (rep_us != NULL)
        for (int q = 0; q < r && q < rep_cap; q++)
            for (int i = 0; i <= MEMRA_TUNE_MAX_ARMS; i++) {
                double v = 0.0;
                if (i < na && res.arms[i].ok) v = arms[i].times[q];
                else if (i == MEMRA_TUNE_MAX_ARMS && res.baseline >= 0) v = twin[q];
                rep_us[(size_t)q * (MEMRA_TUNE_MAX_ARMS + 1) + (size_t)i] = v;
            }
done_arms:
    for (int i = 0; i < na; i++) free(arms[i].times);
done_ops:
    memra_timer_destroy(timer);
    for (int i = 0; i < run.n_in; i++) memra__dev_free(dev, bufs[i]);
    memra__dev_free(dev, ob);
    if (q8) memra__acase_operands_free(&c, &run);
done_case:
    free(sub_mass);
    free(ref);
    free(got);
    free(sub_got);
    sub_free(&sub);
    memra__acase_free(&c);
done:
    memra__snapshot_release(s);
    free(twin);
    if (st == MEMRA_STATUS_OK) {
        const uint32_t size = out->struct_size < sizeof res ? out->struct_size : (uint32_t)sizeof res;
        res.struct_size = out->struct_size;
        memcpy(out, &res, size);
    }
    return st;
}

/* ---- the table's API ------------------------------------------------------------ */

memra_status memra__registry_republish(memra_runtime *rt); /* registry.c, caller holds reg_lock */

memra_status memra_tune_record(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, const char *module,
                               const char *variant, double median_us, double baseline_us)
{
    const double g = median_us > 0.0 ? baseline_us / median_us : 0.0;
    const memra_tune_claim c = {.struct_size = sizeof c, .win = 1, .module = module, .variant = variant,
                                .median_us = median_us, .baseline_us = baseline_us, .gain = g, .gain_lo = g,
                                .gain_hi = g};
    return memra_tune_record_claim(dev, op, m, n, k, &c);
}

memra_status memra_tune_record_claim(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k,
                                     const memra_tune_claim *claim)
{
    if (claim == NULL || claim->struct_size < sizeof *claim)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: NULL claim or struct_size too small");
    const char *module = claim->module, *variant = claim->variant;
    const double median_us = claim->median_us, baseline_us = claim->baseline_us;
    if (dev == NULL || module == NULL || !((int)op >= 0 && op < MEMRA_OP_COUNT_) || !is_gemm_op(op) || m < 1 ||
        n < 1 || k < 1 || !(median_us >= 0.0) || !(baseline_us >= 0.0) || !(claim->gain >= 0.0) ||
        !(claim->gain_lo >= 0.0) || !(claim->gain_hi >= 0.0) || !(claim->noise_floor >= 0.0) || claim->reps < 0 ||
        claim->gain > 1e12 || claim->gain_lo > 1e12 || claim->gain_hi > 1e12 || claim->noise_floor > 1e12 ||
        median_us > 1e12 || baseline_us > 1e12)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: bad argument");
    memra_runtime *rt = dev->rt;
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, module);
    memra__tune_ent e;
    memset(&e, 0, sizeof e);
    memra_status st = MEMRA_STATUS_OK;
    if (r == NULL) st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_tune_record: '%s' is not admitted on %s", module, dev->label);
    else if (variant != NULL && variant[0] != '\0' && memra__variant_index(r, dev, op, variant) < 0)
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_tune_record: '%s' has no variant '%s' of %s", module, variant,
                         memra_op_name(op));
    else if (strlen(r->version) == 0 || strlen(r->version) >= sizeof e.modver || strpbrk(r->version, "\t\n") != NULL)
        st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: module %s's version text cannot be recorded",
                         module);
    if (st == MEMRA_STATUS_OK) {
        memra__tune_key(dev, e.key, sizeof e.key);
        if (strpbrk(e.key, "\t\n") != NULL)
            st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: the device name has a tab or newline");
        e.dev = dev->index;
        e.op = op;
        e.n = n;
        e.k = k;
        e.mc = memra_tune_m_class(m);
        snprintf(e.module, sizeof e.module, "%s", module);
        snprintf(e.modver, sizeof e.modver, "%s", r->version);
        snprintf(e.variant, sizeof e.variant, "%s", variant ? variant : "");
        e.us = median_us;
        e.base_us = baseline_us;
        e.win = claim->win != 0;
        e.gain = claim->gain, e.gain_lo = claim->gain_lo, e.gain_hi = claim->gain_hi, e.floor = claim->noise_floor;
        e.reps = claim->reps;
    }
    memra__snapshot_release(s);
    if (st != MEMRA_STATUS_OK) return st;
    pthread_mutex_lock(&rt->reg_lock);
    if (!add_entry(rt, &e)) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_record: table full");
    else st = memra__registry_republish(rt);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0700) == 0) return chmod(path, 0700) == 0;
    struct stat st;
    return errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/') continue;
        *p = '\0';
        struct stat st;
        if (stat(buf, &st) != 0 && !make_dir(buf)) return 0;
        *p = '/';
    }
    return make_dir(buf);
}

static memra_status write_file(memra_runtime *rt, const char *text, size_t len)
{
    char dir[PATH_MAX], base[PATH_MAX], why[PATH_MAX + 200];
    if (rt->tune_path[0] == '\0' || !split_path(rt->tune_path, dir, base))
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "no tuning file location: %s", rt->tune_status);
    if (!make_dirs(dir)) return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "making the folder %s: %s", dir, strerror(errno));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "open %s: %s", dir, strerror(errno));
    if (!owner_only(dfd, dir, why, sizeof why)) {
        close(dfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "tuning folder not trusted: %s", why);
    }
    char tmp[PATH_MAX];
    int fd = -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t salt = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (int i = 0; i < 16 && fd < 0; i++) {
        salt = salt * 6364136223846793005ull + 1442695040888963407ull;
        snprintf(tmp, sizeof tmp, ".%.200s.tmp.%06llx", base, (unsigned long long)(salt >> 40));
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        close(dfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "creating a temporary file in %s: %s", dir, strerror(e));
    }
    const char *step = "write";
    int ok = 1;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) ok = 0;
        else off += (size_t)w;
    }
    if (ok && !(ok = fsync(fd) == 0)) step = "fsync";
    int e = errno;
    if (close(fd) != 0 && ok) ok = 0, e = errno, step = "close";
    if (ok && !(ok = renameat(dfd, tmp, dfd, base) == 0)) e = errno, step = "rename";
    if (!ok) {
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "writing %s: %s: %s", rt->tune_path, step, strerror(e));
    }
    fsync(dfd);
    close(dfd);
    return MEMRA_STATUS_OK;
}

memra_status memra_tune_save(memra_runtime *rt)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_save: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    size_t cap = 256 + (size_t)rt->n_tune * 512, len = 0;
    char *body = malloc(cap), *text = malloc(cap + 128);
    memra_status st = MEMRA_STATUS_OK;
    if (body == NULL || text == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_save");
    for (int i = 0; st == MEMRA_STATUS_OK && i < rt->n_tune; i++) {
        const memra__tune_ent *e = &rt->tune[i];
        int w = snprintf(body + len, cap - len,
                         "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%.3f\t%.3f\t%.4f\t%.4f\t%.4f\t%.4f\t%d\n",
                         e->win ? "entry" : "nowin", e->key, memra_op_name(e->op), e->n, e->k, e->mc, e->module,
                         e->modver, e->variant[0] ? e->variant : "-", e->us, e->base_us, e->gain, e->gain_lo,
                         e->gain_hi, e->floor, e->reps);
        if (w < 0 || (size_t)w >= cap - len) st = MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "memra_tune_save: line too long");
        else len += (size_t)w;
    }
    if (st == MEMRA_STATUS_OK) {
        uint8_t dig[MEMRA__SHA256_BYTES];
        char hex[2 * MEMRA__SHA256_BYTES + 1];
        memra__sha256(body, len, dig);
        memra__hex(dig, sizeof dig, hex);
        int h = snprintf(text, 128, "%s\t%d\nsha256\t%s\n", TUNE_MAGIC, TUNE_VERSION, hex);
        memcpy(text + h, body, len);
        st = write_file(rt, text, (size_t)h + len);
        if (st == MEMRA_STATUS_OK)
            snprintf(rt->tune_status, sizeof rt->tune_status, "written: %d entr%s", rt->n_tune,
                     rt->n_tune == 1 ? "y" : "ies");
    }
    pthread_mutex_unlock(&rt->reg_lock);
    free(body);
    free(text);
    return st;
}

memra_status memra_tune_clear(memra_runtime *rt)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_clear: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    rt->n_tune = 0;
    memra_status st = memra__registry_republish(rt);
    if (st == MEMRA_STATUS_OK && rt->tune_path[0] != '\0' && unlink(rt->tune_path) != 0 && errno != ENOENT)
        st = MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "removing %s: %s", rt->tune_path, strerror(errno));
    if (st == MEMRA_STATUS_OK) snprintf(rt->tune_status, sizeof rt->tune_status, "cleared");
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

int memra_tune_count(const memra_runtime *rt) { return rt ? rt->n_tune : 0; }

memra_status memra_tune_use(memra_runtime *rt, int on)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_use: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    memra_status st = MEMRA_STATUS_OK;
    if (rt->tune_on != (on != 0)) {
        rt->tune_on = on != 0;
        st = memra__registry_republish(rt);
    }
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

memra_status memra_tune_entry_get(const memra_runtime *rt, int index, memra_tune_entry *out)
{
    if (rt == NULL || out == NULL || out->struct_size < offsetof(memra_tune_entry, win))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_entry_get: NULL or struct_size too small");
    if (index < 0 || index >= rt->n_tune)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_entry_get: index %d out of range", index);
    const memra__tune_ent *e = &rt->tune[index];
    out->device = e->dev;
    out->device_key = e->key;
    out->op = e->op;
    out->n = e->n;
    out->k = e->k;
    out->m_class = e->mc;
    out->module = e->module;
    out->module_version = e->modver;
    out->variant = e->variant;
    out->median_us = e->us;
    out->baseline_us = e->base_us;
    out->state = e->dev < 0 ? "ignored: no device here has this key" : e->state[0] ? e->state : "active";
    out->source = e->from_file ? rt->tune_path : "this process";
    if (out->struct_size >= sizeof *out) {
        out->win = e->win;
        out->gain = e->gain, out->gain_lo = e->gain_lo, out->gain_hi = e->gain_hi, out->noise_floor = e->floor;
        out->reps = e->reps;
    }
    return MEMRA_STATUS_OK;
}

const char *memra_tune_file(const memra_runtime *rt) { return rt ? rt->tune_path : NULL; }
const char *memra_tune_file_status(const memra_runtime *rt) { return rt ? rt->tune_status : NULL; }
