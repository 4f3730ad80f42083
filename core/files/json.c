/* Strict JSON: see json.h. Recursive descent over the bytes with an explicit
 * depth limit; every read is bounds-checked against len. */
#include "core/files/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jparser {
    const unsigned char *s;
    size_t len, pos;
    int max_depth;
    size_t nodes; /* values parsed so far, against MEMRA__JSON_MAX_NODES */
    memra_status st;
    size_t err_pos;
    char *err;
    size_t err_len;
} jparser;

static int jfail(jparser *p, size_t pos, memra_status st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int jfail(jparser *p, size_t pos, memra_status st, const char *fmt, ...)
{
    if (p->st == MEMRA_STATUS_OK) {
        p->st = st;
        p->err_pos = pos;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, p->err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void skip_ws(jparser *p)
{
    while (p->pos < p->len) {
        const unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* ---- strings ----------------------------------------------------------------- */

typedef struct jbuf {
    char *b;
    size_t n, cap;
} jbuf;

static int jbuf_put(jbuf *b, const char *src, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1) cap *= 2;
        char *nb = realloc(b->b, cap);
        if (nb == NULL) return -1;
        b->b = nb;
        b->cap = cap;
    }
    memcpy(b->b + b->n, src, n);
    b->n += n;
    b->b[b->n] = 0;
    return 0;
}

static int utf8_put(jbuf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) u[0] = (char)cp, n = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 63)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 63)), u[2] = (char)(0x80 | (cp & 63)), n = 3;
    else
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 63)), u[2] = (char)(0x80 | ((cp >> 6) & 63)),
        u[3] = (char)(0x80 | (cp & 63)), n = 4;
    return jbuf_put(b, u, n);
}

/* Length of the valid UTF-8 sequence at s[0..avail), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    const unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0; /* overlong, too big */
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                                          /* surrogate */
    return n;
}

static int hex4(jparser *p, size_t at, uint32_t *out)
{
    if (at + 4 > p->len) return jfail(p, at, MEMRA_STATUS_INVALID_ARGUMENT, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned char c = p->s[at + (size_t)i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return jfail(p, at + (size_t)i, MEMRA_STATUS_INVALID_ARGUMENT, "bad hex digit in \\u escape");
        v = v * 16u + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* The string whose opening quote is at p->pos, decoded into *b. */
static int parse_string(jparser *p, jbuf *b)
{
    const size_t start = p->pos;
    p->pos++; /* the quote */
    for (;;) {
        if (p->pos >= p->len) return jfail(p, start, MEMRA_STATUS_INVALID_ARGUMENT, "unterminated string");
        const unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            if (b->b == NULL && jbuf_put(b, "", 0) != 0) return jfail(p, start, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
            return 0;
        }
        if (c < 0x20) return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "raw control character 0x%02x in a string", c);
        if (c == '\\') {
            if (p->pos + 1 >= p->len) return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "truncated escape");
            const unsigned char e = p->s[p->pos + 1];
            char out;
            switch (e) {
            case '"': out = '"'; break;
            case '\\': out = '\\'; break;
            case '/': out = '/'; break;
            case 'b': out = '\b'; break;
            case 'f': out = '\f'; break;
            case 'n': out = '\n'; break;
            case 'r': out = '\r'; break;
            case 't': out = '\t'; break;
            case 'u': {
                uint32_t cp;
                if (hex4(p, p->pos + 2, &cp) != 0) return -1;
                size_t used = 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "lone low surrogate \\u%04x", cp);
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    if (p->pos + 12 > p->len || p->s[p->pos + 6] != '\\' || p->s[p->pos + 7] != 'u')
                        return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "high surrogate \\u%04x without its pair", cp);
                    if (hex4(p, p->pos + 8, &lo) != 0) return -1;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "high surrogate \\u%04x without its pair", cp);
                    cp = 0x10000u + ((cp - 0xD800u) << 10) + (lo - 0xDC00u);
                    used = 12;
                }
                if (utf8_put(b, cp) != 0) return jfail(p, start, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
                p->pos += used;
                continue;
            }
            default: return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "bad escape \\%c", e >= 0x20 && e < 0x7F ? e : '?');
            }
            if (jbuf_put(b, &out, 1) != 0) return jfail(p, start, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
            p->pos += 2;
            continue;
        }
        const size_t n = utf8_len(p->s + p->pos, p->len - p->pos);
        if (n == 0) return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "invalid UTF-8 in a string");
        if (jbuf_put(b, (const char *)p->s + p->pos, n) != 0)
            return jfail(p, start, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
        p->pos += n;
    }
}

/* ---- numbers ---------------------------------------------------------------- */

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int parse_number(jparser *p, memra__json *v)
{
    const size_t start = p->pos;
    size_t i = p->pos;
    int integral = 1;
    if (i < p->len && p->s[i] == '-') i++;
    if (i >= p->len || !is_digit(p->s[i])) return jfail(p, start, MEMRA_STATUS_INVALID_ARGUMENT, "bad number");
    if (p->s[i] == '0') {
        i++;
        if (i < p->len && is_digit(p->s[i])) return jfail(p, start, MEMRA_STATUS_INVALID_ARGUMENT, "number with a leading zero");
    } else {
        while (i < p->len && is_digit(p->s[i])) i++;
    }
    if (i < p->len && p->s[i] == '.') {
        integral = 0;
        i++;
        if (i >= p->len || !is_digit(p->s[i])) return jfail(p, i, MEMRA_STATUS_INVALID_ARGUMENT, "no digit after '.'");
        while (i < p->len && is_digit(p->s[i])) i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        integral = 0;
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (i >= p->len || !is_digit(p->s[i])) return jfail(p, i, MEMRA_STATUS_INVALID_ARGUMENT, "no digit in the exponent");
        while (i < p->len && is_digit(p->s[i])) i++;
    }
    const size_t n = i - start;
    char buf[64];
    char *tmp = n < sizeof buf ? buf : malloc(n + 1);
    if (tmp == NULL) return jfail(p, start, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(tmp, p->s + start, n);
    tmp[n] = 0;
    v->kind = MEMRA__JSON_NUMBER;
    v->number = strtod(tmp, NULL);
    if (integral) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v->is_int = 1;
            v->integer = ll;
        }
    }
    if (tmp != buf) free(tmp);
    p->pos = i;
    return 0;
}

/* ---- values ---------------------------------------------------------------- */

static int parse_value(jparser *p, memra__json *v, int depth);

static int grow(jparser *p, memra__json *v, int object)
{
    if (v->n < v->cap) return 0;
    size_t cap = v->cap ? v->cap * 2 : 8;
    memra__json *items = realloc(v->items, cap * sizeof *items);
    if (items == NULL) return jfail(p, v->pos, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
    v->items = items;
    if (object) {
        char **keys = realloc(v->keys, cap * sizeof *keys);
        if (keys == NULL) return jfail(p, v->pos, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
        v->keys = keys;
        size_t *kl = realloc(v->key_len, cap * sizeof *kl);
        if (kl == NULL) return jfail(p, v->pos, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
        v->key_len = kl;
        size_t *kp = realloc(v->key_pos, cap * sizeof *kp);
        if (kp == NULL) return jfail(p, v->pos, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
        v->key_pos = kp;
    }
    v->cap = cap;
    return 0;
}

typedef struct key_ref {
    const char *k;
    size_t len, pos;
} key_ref;

static int key_cmp(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    const size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->k, y->k, n);
    if (c != 0) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : 1;
}

/* A repeated key is an error (reported at its second occurrence). */
static int dup_keys(jparser *p, const memra__json *v)
{
    if (v->n < 2) return 0;
    key_ref *r = malloc(v->n * sizeof *r);
    if (r == NULL) return jfail(p, v->pos, MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < v->n; i++) r[i] = (key_ref){v->keys[i], v->key_len[i], v->key_pos[i]};
    qsort(r, v->n, sizeof *r, key_cmp);
    int rc = 0;
    for (size_t i = 1; i < v->n; i++)
        if (r[i].len == r[i - 1].len && memcmp(r[i].k, r[i - 1].k, r[i].len) == 0) {
            rc = jfail(p, r[i].pos, MEMRA_STATUS_INVALID_ARGUMENT, "duplicate key \"%.64s\"", r[i].k);
            break;
        }
    free(r);
    return rc;
}

static int literal(jparser *p, const char *word)
{
    const size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "unexpected character");
    p->pos += n;
    return 0;
}

static int parse_value(jparser *p, memra__json *v, int depth)
{
    skip_ws(p);
    memset(v, 0, sizeof *v);
    v->pos = p->pos;
    if (++p->nodes > MEMRA__JSON_MAX_NODES)
        return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "more than %u JSON values", MEMRA__JSON_MAX_NODES);
    if (p->pos >= p->len) return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "truncated: a value expected");
    const unsigned char c = p->s[p->pos];
    if (c == '{' || c == '[') {
        if (depth >= p->max_depth)
            return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "nesting deeper than %d", p->max_depth);
        const int object = c == '{';
        v->kind = object ? MEMRA__JSON_OBJECT : MEMRA__JSON_ARRAY;
        p->pos++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
            p->pos++;
            return 0;
        }
        for (;;) {
            skip_ws(p);
            if (grow(p, v, object) != 0) return -1;
            if (object) {
                if (p->pos >= p->len || p->s[p->pos] != '"')
                    return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "a key (string) expected");
                jbuf kb = {0};
                const size_t kpos = p->pos;
                if (parse_string(p, &kb) != 0) {
                    free(kb.b);
                    return -1;
                }
                v->keys[v->n] = kb.b;
                v->key_len[v->n] = kb.n;
                v->key_pos[v->n] = kpos;
                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') {
                    free(kb.b);
                    return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "':' expected");
                }
                p->pos++;
            }
            memra__json *item = &v->items[v->n];
            int rc = parse_value(p, item, depth + 1);
            v->n++; /* counted even on failure so the free walks it */
            if (rc != 0) return -1;
            skip_ws(p);
            if (p->pos >= p->len) return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "truncated: ',' or '%c' expected", object ? '}' : ']');
            if (p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->s[p->pos] == (object ? '}' : ']')) {
                p->pos++;
                return object ? dup_keys(p, v) : 0;
            }
            return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "',' or '%c' expected", object ? '}' : ']');
        }
    }
    if (c == '"') {
        jbuf b = {0};
        v->kind = MEMRA__JSON_STRING;
        int rc = parse_string(p, &b);
        v->str = b.b;
        v->len = b.n;
        return rc;
    }
    if (c == 't') {
        v->kind = MEMRA__JSON_BOOL;
        v->boolean = 1;
        return literal(p, "true");
    }
    if (c == 'f') {
        v->kind = MEMRA__JSON_BOOL;
        return literal(p, "false");
    }
    if (c == 'n') return literal(p, "null");
    if (c == '-' || is_digit(c)) return parse_number(p, v);
    return jfail(p, p->pos, MEMRA_STATUS_INVALID_ARGUMENT, "unexpected character 0x%02x", c);
}

static void json_free_inner(memra__json *v)
{
    if (v == NULL) return;
    for (size_t i = 0; i < v->n; i++) {
        json_free_inner(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->key_len);
    free(v->key_pos);
    free(v->str);
}

void memra__json_free(memra__json *v)
{
    json_free_inner(v);
    free(v);
}

memra_status memra__json_parse(const char *text, size_t len, int max_depth, memra__json **out, size_t *err_pos,
                               char *err, size_t err_len)
{
    jparser p = {.s = (const unsigned char *)text, .len = len, .max_depth = max_depth, .err = err, .err_len = err_len};
    memra__json *v = calloc(1, sizeof *v);
    if (v == NULL) {
        snprintf(err, err_len, "out of memory");
        *err_pos = 0;
        return MEMRA_STATUS_OUT_OF_MEMORY;
    }
    if (parse_value(&p, v, 0) == 0) {
        skip_ws(&p);
        if (p.pos != p.len) jfail(&p, p.pos, MEMRA_STATUS_INVALID_ARGUMENT, "text after the JSON value");
    }
    if (p.st != MEMRA_STATUS_OK) {
        memra__json_free(v);
        *err_pos = p.err_pos;
        return p.st;
    }
    *out = v;
    return MEMRA_STATUS_OK;
}

const memra__json *memra__json_member(const memra__json *v, const char *key)
{
    if (v == NULL || v->kind != MEMRA__JSON_OBJECT) return NULL;
    const size_t kl = strlen(key);
    for (size_t i = 0; i < v->n; i++)
        if (v->key_len[i] == kl && memcmp(v->keys[i], key, kl) == 0) return &v->items[i];
    return NULL;
}
