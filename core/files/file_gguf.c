/* GGUF v2 / v3 (little-endian): header, key/values, tensor infos, data.
 *
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x { string key, u32 type, value }          string = u64 length + bytes
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
 *   padding to general.alignment (u32, a power of two; 32 when absent)
 *   data: each tensor at data_start + offset, offset a multiple of the alignment
 *
 * Every read is checked against the mapping's size before it is made; counts
 * are checked against the bytes left (each entry takes at least a minimum
 * number of bytes) before anything is allocated for them. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/files/file_internal.h"

enum { GT_U8, GT_I8, GT_U16, GT_I16, GT_U32, GT_I32, GT_F32, GT_BOOL, GT_STRING, GT_ARRAY, GT_U64, GT_I64, GT_F64 };
static const char *const k_vt_name[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64",
                                        "i64", "f64"};
static const int k_vt_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8}; /* bytes at least (string: its length) */

#define GGUF_MAX_ARRAY_DEPTH 4

/* ggml types: name, values per block, bytes per block, memra format (-1: none). */
typedef struct ggml_type {
    int id;
    const char *name;
    int bv, bb;
    int format;
} ggml_type;

static const ggml_type k_types[] = {
    {0, "F32", 1, 4, MEMRA_FORMAT_F32},       {1, "F16", 1, 2, MEMRA_FORMAT_F16},
    {2, "Q4_0", 32, 18, MEMRA_FORMAT_Q4_0},   {3, "Q4_1", 32, 20, -1},
    {6, "Q5_0", 32, 22, -1},                  {7, "Q5_1", 32, 24, -1},
    {8, "Q8_0", 32, 34, MEMRA_FORMAT_Q8_0},   {9, "Q8_1", 32, 36, -1},
    {10, "Q2_K", 256, 84, -1},                {11, "Q3_K", 256, 110, -1},
    {12, "Q4_K", 256, 144, MEMRA_FORMAT_Q4_K}, {13, "Q5_K", 256, 176, MEMRA_FORMAT_Q5_K},
    {14, "Q6_K", 256, 210, MEMRA_FORMAT_Q6_K}, {15, "Q8_K", 256, 292, -1},
    {16, "IQ2_XXS", 256, 66, -1},             {17, "IQ2_XS", 256, 74, -1},
    {18, "IQ3_XXS", 256, 98, -1},             {19, "IQ1_S", 256, 50, -1},
    {20, "IQ4_NL", 32, 18, -1},               {21, "IQ3_S", 256, 110, -1},
    {22, "IQ2_S", 256, 82, -1},               {23, "IQ4_XS", 256, 136, -1},
    {24, "I8", 1, 1, -1},                     {25, "I16", 1, 2, -1},
    {26, "I32", 1, 4, -1},                    {27, "I64", 1, 8, -1},
    {28, "F64", 1, 8, -1},                    {29, "IQ1_M", 256, 56, -1},
    {30, "BF16", 1, 2, MEMRA_FORMAT_BF16},    {34, "TQ1_0", 256, 54, -1},
    {35, "TQ2_0", 256, 66, -1},               {39, "MXFP4", 32, 17, -1},
};

static const ggml_type *type_of(uint32_t id)
{
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if ((uint32_t)k_types[i].id == id) return &k_types[i];
    return NULL;
}

typedef struct rd {
    const uint8_t *p;
    uint64_t size, pos;
    const char *path;
} rd;

static memra_status need(rd *r, uint64_t n, const char *what)
{
    if (n <= r->size - r->pos) return MEMRA_STATUS_OK;
    return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, r->pos,
                           "truncated: %s needs %llu bytes, %llu left in the file", what, (unsigned long long)n,
                           (unsigned long long)(r->size - r->pos));
}

static uint64_t get_le(rd *r, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | r->p[r->pos + (uint64_t)i];
    r->pos += (uint64_t)n;
    return v;
}

static memra_status u32(rd *r, const char *what, uint32_t *out)
{
    memra_status st = need(r, 4, what);
    if (st == MEMRA_STATUS_OK) *out = (uint32_t)get_le(r, 4);
    return st;
}

static memra_status u64(rd *r, const char *what, uint64_t *out)
{
    memra_status st = need(r, 8, what);
    if (st == MEMRA_STATUS_OK) *out = get_le(r, 8);
    return st;
}

/* A string: its bytes stay in the mapping (*s, *len). */
static memra_status str(rd *r, const char *what, const uint8_t **s, uint64_t *len)
{
    const uint64_t at = r->pos;
    memra_status st = u64(r, what, len);
    if (st != MEMRA_STATUS_OK) return st;
    if (*len > r->size - r->pos)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at,
                               "%s: a string of %llu bytes, longer than the %llu bytes left in the file", what,
                               (unsigned long long)*len, (unsigned long long)(r->size - r->pos));
    *s = r->p + r->pos;
    r->pos += *len;
    return MEMRA_STATUS_OK;
}

static char *dup_n(const uint8_t *s, uint64_t n)
{
    char *c = malloc((size_t)n + 1);
    if (c) {
        memcpy(c, s, (size_t)n);
        c[n] = 0;
    }
    return c;
}

static memra_meta_type meta_type(uint32_t t)
{
    switch (t) {
    case GT_U8: case GT_U16: case GT_U32: case GT_U64: return MEMRA_META_UINT;
    case GT_I8: case GT_I16: case GT_I32: case GT_I64: return MEMRA_META_INT;
    case GT_F32: case GT_F64: return MEMRA_META_FLOAT;
    case GT_BOOL: return MEMRA_META_BOOL;
    case GT_STRING: return MEMRA_META_STRING;
    default: return MEMRA_META_ARRAY;
    }
}

/* One scalar of type t: read, checked, and returned as the three views. */
static memra_status scalar(rd *r, uint32_t t, int64_t *i, uint64_t *u, double *f)
{
    const int n = k_vt_size[t];
    memra_status st = need(r, (uint64_t)n, k_vt_name[t]);
    if (st != MEMRA_STATUS_OK) return st;
    const uint64_t at = r->pos;
    uint64_t v = get_le(r, n);
    *u = v;
    *i = (int64_t)v;
    *f = 0;
    switch (t) {
    case GT_I8: *i = (int8_t)v; break;
    case GT_I16: *i = (int16_t)v; break;
    case GT_I32: *i = (int32_t)v; break;
    case GT_F32: {
        uint32_t b = (uint32_t)v;
        float x;
        memcpy(&x, &b, 4);
        *f = x;
        break;
    }
    case GT_F64: memcpy(f, &v, 8); break;
    case GT_BOOL:
        if (v > 1)
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at, "a bool of value %llu (0 or 1 wanted)",
                                   (unsigned long long)v);
        *i = (int64_t)v;
        break;
    default: break;
    }
    return MEMRA_STATUS_OK;
}

/* Skip (validate) an array body of `count` elements of type t. */
static memra_status skip_array(rd *r, uint32_t t, uint64_t count, int depth, uint64_t at)
{
    if (t > GT_F64)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at, "array of unknown value type %u", t);
    const uint64_t left = r->size - r->pos;
    if (count > left / (uint64_t)k_vt_size[t])
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at,
                               "array of %llu %s values cannot fit in the %llu bytes left", (unsigned long long)count,
                               k_vt_name[t], (unsigned long long)left);
    if (t == GT_STRING) {
        for (uint64_t e = 0; e < count; e++) {
            const uint8_t *s;
            uint64_t n;
            memra_status st = str(r, "array string", &s, &n);
            if (st != MEMRA_STATUS_OK) return st;
        }
        return MEMRA_STATUS_OK;
    }
    if (t == GT_ARRAY) {
        if (depth >= GGUF_MAX_ARRAY_DEPTH)
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at, "arrays nested deeper than %d",
                                   GGUF_MAX_ARRAY_DEPTH);
        for (uint64_t e = 0; e < count; e++) {
            const uint64_t eat = r->pos;
            uint32_t et;
            uint64_t n;
            memra_status st = u32(r, "array type", &et);
            if (st == MEMRA_STATUS_OK) st = u64(r, "array count", &n);
            if (st == MEMRA_STATUS_OK) st = skip_array(r, et, n, depth + 1, eat);
            if (st != MEMRA_STATUS_OK) return st;
        }
        return MEMRA_STATUS_OK;
    }
    if (t == GT_BOOL) {
        for (uint64_t e = 0; e < count; e++)
            if (r->p[r->pos + e] > 1)
                return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, r->pos + e, "a bool of value %u",
                                       r->p[r->pos + e]);
    }
    r->pos += count * (uint64_t)k_vt_size[t];
    return MEMRA_STATUS_OK;
}

static memra_status read_kv(memra_file *f, rd *r, uint32_t *alignment)
{
    const uint64_t at = r->pos;
    const uint8_t *ks;
    uint64_t kl;
    uint32_t t;
    memra_status st = str(r, "key", &ks, &kl);
    if (st == MEMRA_STATUS_OK) st = u32(r, "value type", &t);
    if (st != MEMRA_STATUS_OK) return st;
    if (kl == 0 || memchr(ks, 0, (size_t)kl) != NULL)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at, "a key that is empty or holds a NUL byte");
    if (t > GT_F64)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, r->pos - 4, "key \"%.*s\": unknown value type %u",
                               (int)(kl > 64 ? 64 : kl), (const char *)ks, t);
    memra__meta *m = memra__file_add_meta(f);
    if (m == NULL || (m->key = dup_n(ks, kl)) == NULL)
        return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->path);
    m->pos = at;
    m->type = meta_type(t);
    char buf[256];
    const uint64_t vat = r->pos;
    if (t == GT_STRING) {
        const uint8_t *s;
        uint64_t n;
        st = str(r, m->key, &s, &n);
        if (st != MEMRA_STATUS_OK) return st;
        m->text = dup_n(s, n);
        m->count = n;
    } else if (t == GT_ARRAY) {
        uint32_t et;
        uint64_t n;
        st = u32(r, "array type", &et);
        if (st == MEMRA_STATUS_OK) st = u64(r, "array count", &n);
        if (st != MEMRA_STATUS_OK) return st;
        const uint64_t body = r->pos;
        st = skip_array(r, et, n, 0, vat);
        if (st != MEMRA_STATUS_OK) return st;
        m->elem_type = meta_type(et);
        m->count = n;
        size_t o = (size_t)snprintf(buf, sizeof buf, "[%llu x %s", (unsigned long long)n, k_vt_name[et]);
        if (et != GT_STRING && et != GT_ARRAY) {
            rd sub = {.p = r->p, .size = r->size, .pos = body, .path = r->path};
            for (uint64_t e = 0; e < n && e < 8 && o < sizeof buf - 32; e++) {
                int64_t iv;
                uint64_t uv;
                double fv;
                scalar(&sub, et, &iv, &uv, &fv);
                const memra_meta_type mt = meta_type(et);
                o += (size_t)(mt == MEMRA_META_FLOAT  ? snprintf(buf + o, sizeof buf - o, "%s%g", e ? ", " : ": ", fv)
                              : mt == MEMRA_META_UINT ? snprintf(buf + o, sizeof buf - o, "%s%llu", e ? ", " : ": ",
                                                                 (unsigned long long)uv)
                                                      : snprintf(buf + o, sizeof buf - o, "%s%lld", e ? ", " : ": ",
                                                                 (long long)iv));
            }
            if (n > 8 && o < sizeof buf) o += (size_t)snprintf(buf + o, sizeof buf - o, ", ...");
        }
        if (o < sizeof buf) snprintf(buf + o, sizeof buf - o, "]");
        m->text = strdup(buf);
    } else {
        st = scalar(r, t, &m->i, &m->u, &m->f);
        if (st != MEMRA_STATUS_OK) return st;
        if (m->type == MEMRA_META_FLOAT) snprintf(buf, sizeof buf, "%.9g", m->f);
        else if (m->type == MEMRA_META_UINT) snprintf(buf, sizeof buf, "%llu", (unsigned long long)m->u);
        else if (m->type == MEMRA_META_BOOL) snprintf(buf, sizeof buf, "%s", m->i ? "true" : "false");
        else snprintf(buf, sizeof buf, "%lld", (long long)m->i);
        m->text = strdup(buf);
        if (strcmp(m->key, "general.alignment") == 0) {
            if (t != GT_U32)
                return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, vat,
                                       "general.alignment is a %s (u32 wanted)", k_vt_name[t]);
            if (m->u == 0 || (m->u & (m->u - 1)) != 0)
                return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, vat,
                                       "general.alignment %llu is not a power of two", (unsigned long long)m->u);
            *alignment = (uint32_t)m->u;
        }
    }
    if (m->text == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->path);
    return MEMRA_STATUS_OK;
}

static memra_status read_tensor(memra_file *f, memra__mapping *map, rd *r, uint64_t *rel_offset)
{
    const uint64_t at = r->pos;
    const uint8_t *ns;
    uint64_t nl;
    uint32_t nd, ty;
    memra_status st = str(r, "tensor name", &ns, &nl);
    if (st != MEMRA_STATUS_OK) return st;
    if (nl == 0 || memchr(ns, 0, (size_t)nl) != NULL)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, at, "a tensor name that is empty or holds a NUL byte");
    const uint64_t dat = r->pos;
    if ((st = u32(r, "n_dims", &nd)) != MEMRA_STATUS_OK) return st;
    if (nd > MEMRA_TENSOR_MAX_DIMS)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, dat, "tensor \"%.*s\": n_dims %u > %d",
                               (int)(nl > 64 ? 64 : nl), (const char *)ns, nd, MEMRA_TENSOR_MAX_DIMS);
    uint64_t ne[MEMRA_TENSOR_MAX_DIMS];
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nd; d++) {
        const uint64_t eat = r->pos;
        if ((st = u64(r, "ne", &ne[d])) != MEMRA_STATUS_OK) return st;
        if (ne[d] > (uint64_t)INT64_MAX || (ne[d] != 0 && elements > ((uint64_t)1 << 62) / ne[d]))
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, eat,
                                   "tensor \"%.*s\": the dimensions' product overflows (ne[%u] = %llu)",
                                   (int)(nl > 64 ? 64 : nl), (const char *)ns, d, (unsigned long long)ne[d]);
        elements *= ne[d];
    }
    const uint64_t tat = r->pos;
    if ((st = u32(r, "tensor type", &ty)) != MEMRA_STATUS_OK) return st;
    const ggml_type *gt = type_of(ty);
    if (gt == NULL)
        return memra__file_bad(MEMRA_STATUS_NOT_SUPPORTED, r->path, tat, "tensor \"%.*s\": unknown ggml type %u",
                               (int)(nl > 64 ? 64 : nl), (const char *)ns, ty);
    if (nd > 0 && ne[0] % (uint64_t)gt->bv != 0)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, dat,
                               "tensor \"%.*s\": ne[0] = %llu is not a multiple of %s's block of %d",
                               (int)(nl > 64 ? 64 : nl), (const char *)ns, (unsigned long long)ne[0], gt->name, gt->bv);
    /* elements < 2^62, but times a type's block bytes the size can still wrap */
    if (elements / (uint64_t)gt->bv > ((uint64_t)1 << 62) / (uint64_t)gt->bb)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r->path, dat,
                               "tensor \"%.*s\": %llu elements of %s are more than 2^62 bytes", (int)(nl > 64 ? 64 : nl),
                               (const char *)ns, (unsigned long long)elements, gt->name);
    const uint64_t oat = r->pos;
    if ((st = u64(r, "tensor offset", rel_offset)) != MEMRA_STATUS_OK) return st;
    memra__tensor *t = memra__file_add_tensor(f);
    if (t == NULL || (t->name = dup_n(ns, nl)) == NULL)
        return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", r->path);
    t->type = gt->name;
    t->has_format = gt->format >= 0;
    t->format = gt->format >= 0 ? (memra_format)gt->format : MEMRA_FORMAT_F32;
    t->n_dims = (int)nd;
    for (uint32_t d = 0; d < nd; d++) t->shape[d] = (int64_t)ne[nd - 1 - d];
    t->elements = elements;
    t->bytes = elements / (uint64_t)gt->bv * (uint64_t)gt->bb;
    t->map = map;
    t->info_pos = oat; /* errors about the extent point at the offset field */
    (void)at;
    return MEMRA_STATUS_OK;
}

static const memra_file *g_cmp_file;
static int by_key(const void *a, const void *b)
{
    const memra__meta *x = &g_cmp_file->meta[*(const size_t *)a], *y = &g_cmp_file->meta[*(const size_t *)b];
    const int c = strcmp(x->key, y->key);
    return c != 0 ? c : (x->pos < y->pos ? -1 : 1);
}
static pthread_mutex_t g_cmp_lock = PTHREAD_MUTEX_INITIALIZER;

/* A repeated key, reported at its second occurrence (sorting: no quadratic scan). */
static memra_status dup_keys(memra_file *f, const char *path)
{
    if (f->n_meta < 2) return MEMRA_STATUS_OK;
    size_t *ord = malloc(f->n_meta * sizeof *ord);
    if (ord == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    for (size_t i = 0; i < f->n_meta; i++) ord[i] = i;
    pthread_mutex_lock(&g_cmp_lock);
    g_cmp_file = f;
    qsort(ord, f->n_meta, sizeof *ord, by_key);
    pthread_mutex_unlock(&g_cmp_lock);
    memra_status st = MEMRA_STATUS_OK;
    for (size_t i = 1; i < f->n_meta; i++)
        if (strcmp(f->meta[ord[i]].key, f->meta[ord[i - 1]].key) == 0) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, f->meta[ord[i]].pos, "duplicate key \"%s\"",
                                 f->meta[ord[i]].key);
            break;
        }
    free(ord);
    return st;
}
static int by_offset(const void *a, const void *b)
{
    const memra__tensor *x = &g_cmp_file->tensors[*(const size_t *)a], *y = &g_cmp_file->tensors[*(const size_t *)b];
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

memra_status memra__gguf_parse(memra_file *f, memra__mapping *map)
{
    rd r = {.p = map->base, .size = map->size, .pos = 4, .path = map->path};
    uint32_t version;
    uint64_t n_tensors, n_kv;
    memra_status st = u32(&r, "version", &version);
    if (st != MEMRA_STATUS_OK) return st;
    if (version != 2 && version != 3)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, 4, "unknown GGUF version %u (memra reads 2 and 3)",
                               version);
    snprintf(f->desc, sizeof f->desc, "GGUF v%u", version);
    if ((st = u64(&r, "tensor count", &n_tensors)) != MEMRA_STATUS_OK) return st;
    if ((st = u64(&r, "metadata count", &n_kv)) != MEMRA_STATUS_OK) return st;
    /* a key/value takes >= 13 bytes (8 length, 4 type, 1 value), a tensor info >= 24 */
    if (n_kv > (r.size - r.pos) / 13)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, 16,
                               "metadata count %llu cannot fit in the %llu bytes left", (unsigned long long)n_kv,
                               (unsigned long long)(r.size - r.pos));
    if (n_tensors > (r.size - r.pos) / 24)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, 8,
                               "tensor count %llu cannot fit in the %llu bytes left", (unsigned long long)n_tensors,
                               (unsigned long long)(r.size - r.pos));
    uint32_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; i++)
        if ((st = read_kv(f, &r, &alignment)) != MEMRA_STATUS_OK) return st;
    if ((st = dup_keys(f, r.path)) != MEMRA_STATUS_OK) return st;
    const size_t first = f->n_tensors;
    uint64_t *rel = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *rel);
    if (rel == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", r.path);
    for (uint64_t i = 0; i < n_tensors && st == MEMRA_STATUS_OK; i++) st = read_tensor(f, map, &r, &rel[i]);
    if (st != MEMRA_STATUS_OK) {
        free(rel);
        return st;
    }
    const uint64_t data = (r.pos + alignment - 1) / alignment * alignment;
    if (n_tensors > 0 && data > r.size) {
        free(rel);
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, r.pos,
                               "truncated: the data section starts at byte %llu (alignment %u), past the end (%llu bytes)",
                               (unsigned long long)data, alignment, (unsigned long long)r.size);
    }
    const uint64_t avail = r.size - (data < r.size ? data : r.size);
    for (uint64_t i = 0; i < n_tensors; i++) {
        memra__tensor *t = &f->tensors[first + i];
        if (rel[i] % alignment != 0)
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, t->info_pos,
                                 "tensor \"%s\": data offset %llu is not a multiple of the alignment %u", t->name,
                                 (unsigned long long)rel[i], alignment);
        else if (rel[i] > avail || t->bytes > avail - rel[i])
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, t->info_pos,
                                 "tensor \"%s\": %llu bytes at data offset %llu end past the file (%llu data bytes)",
                                 t->name, (unsigned long long)t->bytes, (unsigned long long)rel[i],
                                 (unsigned long long)avail);
        if (st != MEMRA_STATUS_OK) break;
        t->offset = data + rel[i];
    }
    free(rel);
    if (st != MEMRA_STATUS_OK) return st;
    /* overlaps: neighbours in offset order */
    size_t *ord = malloc((size_t)(n_tensors ? n_tensors : 1) * sizeof *ord);
    if (ord == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", r.path);
    for (size_t i = 0; i < n_tensors; i++) ord[i] = first + i;
    pthread_mutex_lock(&g_cmp_lock);
    g_cmp_file = f;
    qsort(ord, (size_t)n_tensors, sizeof *ord, by_offset);
    pthread_mutex_unlock(&g_cmp_lock);
    uint64_t end = 0;
    const memra__tensor *prev = NULL;
    for (size_t i = 0; i < n_tensors; i++) {
        const memra__tensor *t = &f->tensors[ord[i]];
        if (t->bytes == 0) continue;
        if (prev != NULL && t->offset < end) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, r.path, t->info_pos,
                                 "tensor \"%s\" (bytes %llu..%llu) overlaps \"%s\" (bytes %llu..%llu)", t->name,
                                 (unsigned long long)t->offset, (unsigned long long)(t->offset + t->bytes), prev->name,
                                 (unsigned long long)prev->offset, (unsigned long long)end);
            break;
        }
        prev = t;
        end = t->offset + t->bytes;
    }
    free(ord);
    return st;
}
