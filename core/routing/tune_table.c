/* Measured routing: the tuning table, its file, and the lookup routing makes
 * before the scores. Changing the table (record, clear, use) is
 * tune_edit.c's, which republishes; the race of `memra tune` that fills it is
 * core/observe/tune_race.c.
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

#include "base/error.h"
#include "core/routing/routing.h"
#include "jit/sha256.h"

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

int memra__tune_op(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
}

void memra__tune_key(const memra_device *dev, char *out, size_t len)
{
    snprintf(out, len, "%s cc%d sms%d driver%d memra%s", dev->caps.name, dev->caps.cc, dev->caps.sm_count,
             dev->caps.driver_version, MEMRA_VERSION_STRING); /* memra_version() */
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

int memra__tune_add(memra_runtime *rt, const memra__tune_ent *e)
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
    if (!field_copy(e->key, sizeof e->key, f[1]) || !memra__tune_op(e->op)) return 0;
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
        if (!parsed || !memra__tune_add(rt, &ent)) {
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

/* ---- the table's API ------------------------------------------------------------ */


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

int memra_tune_count(const memra_runtime *rt) { return rt ? rt->n_tune : 0; }

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
