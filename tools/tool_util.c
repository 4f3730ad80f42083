/* Helpers shared by `memra check` and `memra bench`. */
#define _POSIX_C_SOURCE 200809L

#include "tools/tool_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memra/formats.h"

void tool_rng_seed(tool_rng *r, uint64_t seed) { r->s = seed ? seed : 0x9E3779B97F4A7C15ull; }

uint64_t tool_rng_u64(tool_rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

double tool_rng_unit(tool_rng *r) { return (double)(tool_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

float tool_rng_signed(tool_rng *r, float lo, float hi)
{
    uint64_t u = tool_rng_u64(r);
    float v = (float)(lo + (double)(hi - lo) * ((double)(u >> 11) * (1.0 / 9007199254740992.0)));
    if (v < lo) v = lo;
    return (u & 1u) ? -v : v;
}

uint64_t tool_clock_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    s ^= s >> 29;
    return s ? s : 1;
}

void tool_fill_x(tool_rng *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = tool_rng_signed(r, 0.25f, 4.0f);
}

void tool_fill_f16_w(tool_rng *r, uint16_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) w[i] = memra_f16_from_f32(tool_rng_signed(r, 0.01f, 0.5f));
}

void tool_fill_e4m3_w(tool_rng *r, uint8_t *w, size_t n)
{
    /* exponent field 5..9 (0.25 .. 7.5): a 30x spread, like a real weight's
     * bulk, and never a NaN code or a zero. */
    for (size_t i = 0; i < n; i++) {
        uint64_t u = tool_rng_u64(r);
        unsigned e = 5u + (unsigned)((u >> 8) % 5u), mant = (unsigned)(u >> 16) & 7u, sign = (unsigned)(u >> 24) & 1u;
        w[i] = (uint8_t)(sign << 7 | e << 3 | mant);
    }
}

void tool_fill_grid(tool_rng *r, float *g, size_t n)
{
    for (size_t i = 0; i < n; i++) g[i] = (float)(1.0 / 256.0 + tool_rng_unit(r) * (0.25 - 1.0 / 256.0));
}

void tool_fill_q8_0_w(tool_rng *r, uint8_t *w, int64_t rows, int64_t cols)
{
    const int64_t nb = rows * (cols / MEMRA_QK8_0);
    float v[MEMRA_QK8_0];
    for (int64_t b = 0; b < nb; b++) {
        for (int l = 0; l < MEMRA_QK8_0; l++) v[l] = tool_rng_signed(r, 0.01f, 0.5f);
        memra_q8_0_encode(v, w + (size_t)b * MEMRA_Q8_0_BYTES);
    }
}

void tool_fill_blocks_w(tool_rng *r, memra_format format, uint8_t *w, int64_t rows, int64_t cols)
{
    const uint64_t bytes = memra_format_row_bytes(format, cols) * (uint64_t)rows;
    const int bb = memra_format_block_bytes(format);
    for (uint64_t i = 0; i < bytes; i++) w[i] = (uint8_t)tool_rng_u64(r);
    if (bb <= 0) return;
    for (uint64_t o = 0; o + (uint64_t)bb <= bytes; o += (uint64_t)bb) {
        const uint16_t d = memra_f16_from_f32((float)(1.0 + 2.0 * tool_rng_unit(r)) / 128.0f);
        const uint16_t dm = memra_f16_from_f32((float)(1.0 + 2.0 * tool_rng_unit(r)) / 256.0f);
        const size_t at = format == MEMRA_FORMAT_Q6_K ? 208 : 0;
        w[o + at] = (uint8_t)d, w[o + at + 1] = (uint8_t)(d >> 8);
        if (format == MEMRA_FORMAT_Q4_K || format == MEMRA_FORMAT_Q5_K) w[o + 2] = (uint8_t)dm, w[o + 3] = (uint8_t)(dm >> 8);
    }
}

int tool_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
    *out = (int64_t)v;
    return 0;
}

int tool_parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s == '\0' || *s == '-') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when s holds none
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static int utf8_len(const unsigned char *s)
{
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && s[1] >= 0xA0) return 0; /* surrogates */
    if (c == 0xF0 && s[1] < 0x90) return 0;  /* overlong */
    if (c == 0xF4 && s[1] >= 0x90) return 0; /* past U+10FFFF */
    return n;
}

void tool_json_settings(FILE *f, const memra_runtime *rt)
{
    fputs(",\"settings\":{", f);
    for (int i = 0, first = 1; rt != NULL && i < memra_config_count(rt); i++) {
        memra_config_entry e;
        if (memra_config_entry_get(rt, i, &e) != MEMRA_STATUS_OK || !e.known || strcmp(e.source, "default") == 0)
            continue;
        fputs(first ? "" : ",", f);
        tool_json_str(f, e.name);
        fputs(":{\"value\":", f);
        tool_json_str(f, e.value);
        fputs(",\"source\":", f);
        tool_json_str(f, e.source);
        fputc('}', f);
        first = 0;
    }
    fputc('}', f);
}

/* Always a valid JSON string: control characters and DEL as \u00XX, a byte
 * that is not valid UTF-8 as U+FFFD. */
void tool_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    while (p != NULL && *p) {
        const unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            p++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else {
            const int n = utf8_len(p);
            if (n == 0) {
                fputs("\\ufffd", f);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            }
        }
    }
    fputc('"', f);
}

const char *tool_term_str(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    if (len == 0) return "";
    while (*p && o + 5 < len) {
        const int n = utf8_len(p);
        /* C0 controls, DEL, C1 controls (U+0080..U+009F) and bad bytes as \xNN */
        const int ctl = n == 0 || *p < 0x20 || *p == 0x7F || (n == 2 && p[0] == 0xC2 && p[1] < 0xA0);
        if (ctl) {
            for (int i = 0; i < (n ? n : 1) && o + 5 < len; i++) o += (size_t)snprintf(buf + o, len - o, "\\x%02x", p[i]);
            p += n ? n : 1;
        } else {
            if (o + (size_t)n >= len) break;
            memcpy(buf + o, p, (size_t)n);
            o += (size_t)n;
            p += n;
        }
    }
    buf[o] = '\0';
    return buf;
}

void tool_utc_timestamp(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

void tool_host_name(char *buf, size_t len)
{
    if (len == 0) return;
    if (gethostname(buf, len) != 0) snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tool_median(const double *v, size_t n)
{
    if (n == 0) return 0.0;
    double *c = malloc(n * sizeof *c);
    if (c == NULL) return v[0];
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

void *tool_alloc(size_t n, size_t size)
{
    if (n == 0) n = 1;
    if (size != 0 && n > SIZE_MAX / size) {
        fprintf(stderr, "memra: allocation of %zu x %zu bytes overflows\n", n, size);
        return NULL;
    }
    void *p = malloc(n * size);
    if (p == NULL) fprintf(stderr, "memra: out of host memory (%zu bytes)\n", n * size);
    return p;
}

memra_status tool_upload(memra_device *dev, const void *src, size_t bytes, memra_buffer **out)
{
    memra_buffer *b = NULL;
    memra_status st = memra_buffer_create(dev, bytes ? bytes : 1, &b);
    if (st == MEMRA_STATUS_OK && src != NULL && bytes > 0) st = memra_buffer_write(b, 0, src, bytes);
    if (st != MEMRA_STATUS_OK) {
        memra_buffer_destroy(b);
        return st;
    }
    *out = b;
    return MEMRA_STATUS_OK;
}
