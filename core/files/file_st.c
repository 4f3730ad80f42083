/* safetensors and the sharded index.
 *
 *   u64 N (little-endian), N bytes of JSON (UTF-8; may end in spaces), data.
 *   JSON: { "__metadata__": { "k": "v", ... }?,
 *           "<name>": { "dtype": "BF16", "shape": [d0, ...], "data_offsets": [begin, end] }, ... }
 *   offsets are relative to the data area; sorted, they must tile it from 0 to
 *   its end without a hole or an overlap; end - begin = elements x dtype size.
 *
 *   model.safetensors.index.json:
 *   { "metadata": { ... }?, "weight_map": { "<name>": "<shard file>", ... } }
 *   shards are plain file names beside the index. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/files/file_internal.h"
#include "core/files/json.h"

#define ST_HEADER_MAX (100u << 20) /* bytes of JSON accepted (the reference reader's limit) */
#define ST_JSON_DEPTH 16

typedef struct st_dtype {
    const char *name;
    int size;
    int format; /* memra format, -1 none */
} st_dtype;

static const st_dtype k_dtypes[] = {
    {"BOOL", 1, -1}, {"U8", 1, -1},  {"I8", 1, -1},  {"F8_E5M2", 1, -1}, {"F8_E4M3", 1, MEMRA_FORMAT_E4M3},
    {"I16", 2, -1},  {"U16", 2, -1}, {"F16", 2, MEMRA_FORMAT_F16},       {"BF16", 2, MEMRA_FORMAT_BF16},
    {"I32", 4, -1},  {"U32", 4, -1}, {"F32", 4, MEMRA_FORMAT_F32},       {"F64", 8, -1},
    {"I64", 8, -1},  {"U64", 8, -1}, {"F8_E8M0", 1, -1},
};

static const st_dtype *dtype_of(const char *s)
{
    for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
        if (strcmp(k_dtypes[i].name, s) == 0) return &k_dtypes[i];
    return NULL;
}

static const memra_file *g_cmp_file;
static pthread_mutex_t g_cmp_lock = PTHREAD_MUTEX_INITIALIZER;
static int by_offset(const void *a, const void *b)
{
    const memra__tensor *x = &g_cmp_file->tensors[*(const size_t *)a], *y = &g_cmp_file->tensors[*(const size_t *)b];
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int json_u64(const memra__json *v, uint64_t *out)
{
    if (v == NULL || v->kind != MEMRA__JSON_NUMBER || !v->is_int || v->integer < 0) return 0;
    *out = (uint64_t)v->integer;
    return 1;
}

static memra_status add_str_meta(memra_file *f, const char *key, size_t klen, const char *text, memra_meta_type type,
                                 const memra__json *v)
{
    memra__meta *m = memra__file_add_meta(f);
    if (m == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", f->path);
    m->key = malloc(klen + 1);
    m->text = strdup(text);
    if (m->key == NULL || m->text == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", f->path);
    memcpy(m->key, key, klen);
    m->key[klen] = 0;
    m->type = type;
    if (v != NULL && v->kind == MEMRA__JSON_NUMBER) {
        m->f = v->number;
        if (v->is_int) {
            m->i = v->integer;
            m->u = (uint64_t)v->integer;
            m->type = v->integer < 0 ? MEMRA_META_INT : MEMRA_META_UINT;
        }
    } else if (v != NULL && v->kind == MEMRA__JSON_BOOL) {
        m->i = v->boolean;
    } else if (v != NULL && v->kind == MEMRA__JSON_ARRAY) {
        m->count = v->n;
        m->elem_type = MEMRA_META_OTHER;
    }
    return MEMRA_STATUS_OK;
}

/* One tensor entry of the header (value v of key name). */
static memra_status st_tensor(memra_file *f, memra__mapping *map, const char *path, uint64_t hpos, const char *name,
                              size_t nlen, const memra__json *v)
{
    const uint64_t at = hpos + v->pos;
    if (nlen == 0 || strlen(name) != nlen)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, at, "a tensor name that is empty or holds a NUL byte");
    if (v->kind != MEMRA__JSON_OBJECT)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, at, "tensor \"%s\": an object wanted", name);
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], "dtype") != 0 && strcmp(v->keys[i], "shape") != 0 &&
            strcmp(v->keys[i], "data_offsets") != 0)
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + v->key_pos[i],
                                   "tensor \"%s\": unknown member \"%.64s\"", name, v->keys[i]);
    const memra__json *dt = memra__json_member(v, "dtype"), *sh = memra__json_member(v, "shape"),
                      *off = memra__json_member(v, "data_offsets");
    if (dt == NULL || dt->kind != MEMRA__JSON_STRING)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, at, "tensor \"%s\": no \"dtype\" string", name);
    const st_dtype *d = dtype_of(dt->str);
    if (d == NULL)
        return memra__file_bad(MEMRA_STATUS_NOT_SUPPORTED, path, hpos + dt->pos, "tensor \"%s\": unknown dtype \"%.32s\"",
                               name, dt->str);
    if (sh == NULL || sh->kind != MEMRA__JSON_ARRAY)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, at, "tensor \"%s\": no \"shape\" array", name);
    if (sh->n > MEMRA_TENSOR_MAX_DIMS)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + sh->pos, "tensor \"%s\": %zu dimensions > %d",
                               name, sh->n, MEMRA_TENSOR_MAX_DIMS);
    uint64_t dims[MEMRA_TENSOR_MAX_DIMS], elements = 1;
    for (size_t i = 0; i < sh->n; i++) {
        if (!json_u64(&sh->items[i], &dims[i]))
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + sh->items[i].pos,
                                   "tensor \"%s\": shape[%zu] is not a non-negative integer", name, i);
        if (dims[i] != 0 && elements > ((uint64_t)1 << 62) / dims[i])
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + sh->items[i].pos,
                                   "tensor \"%s\": the dimensions' product overflows", name);
        elements *= dims[i];
    }
    uint64_t b = 0, e = 0;
    if (off == NULL || off->kind != MEMRA__JSON_ARRAY || off->n != 2 || !json_u64(&off->items[0], &b) ||
        !json_u64(&off->items[1], &e) || e < b)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, off ? hpos + off->pos : at,
                               "tensor \"%s\": \"data_offsets\" must be [begin, end] with 0 <= begin <= end", name);
    if (elements > UINT64_MAX / (uint64_t)d->size)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + sh->pos,
                               "tensor \"%s\": %llu elements of %s overflow a 64-bit byte size", name,
                               (unsigned long long)elements, d->name);
    if (e - b != elements * (uint64_t)d->size)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, hpos + off->pos,
                               "tensor \"%s\": data_offsets span %llu bytes, which disagrees with %s x %llu elements = %llu", name,
                               (unsigned long long)(e - b), d->name, (unsigned long long)elements,
                               (unsigned long long)(elements * (uint64_t)d->size));
    memra__tensor *t = memra__file_add_tensor(f);
    if (t == NULL || (t->name = strdup(name)) == NULL)
        return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    t->type = d->name;
    t->has_format = d->format >= 0;
    t->format = d->format >= 0 ? (memra_format)d->format : MEMRA_FORMAT_F32;
    t->n_dims = (int)sh->n;
    for (size_t i = 0; i < sh->n; i++) t->shape[i] = (int64_t)dims[i];
    t->elements = elements;
    t->bytes = e - b;
    t->offset = b; /* relative until the layout check */
    t->map = map;
    t->info_pos = hpos + off->pos;
    return MEMRA_STATUS_OK;
}

memra_status memra__st_parse(memra_file *f, memra__mapping *map, int with_meta)
{
    const char *path = map->path;
    if (map->size < 8)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0,
                               "truncated: %zu bytes, a safetensors file starts with an 8-byte header length", map->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | map->base[i];
    /* The value is the file's first 8 bytes: never shown (the file may be
     * any file a symlink reached), only what is wrong with it. */
    if (n > ST_HEADER_MAX)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0,
                               "not a safetensors file: its 8-byte header length is over the limit of %u bytes",
                               ST_HEADER_MAX);
    if (n > map->size - 8)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0,
                               "not a safetensors file: its 8-byte header length claims more than the %zu bytes the "
                               "file has after it",
                               map->size - 8);
    if (n < 2 || map->base[8] != '{')
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 8, "the header is not a JSON object (no '{')");
    memra__json *root = NULL;
    size_t epos = 0;
    char err[160];
    memra_status st = memra__json_parse((const char *)map->base + 8, (size_t)n, ST_JSON_DEPTH, &root, &epos, err, sizeof err);
    if (st != MEMRA_STATUS_OK) return memra__file_bad(st, path, 8 + epos, "header JSON: %s", err);
    const size_t first = f->n_tensors;
    for (size_t i = 0; i < root->n && st == MEMRA_STATUS_OK; i++) {
        const memra__json *v = &root->items[i];
        if (strcmp(root->keys[i], "__metadata__") == 0 && root->key_len[i] == 12) {
            if (v->kind != MEMRA__JSON_OBJECT) {
                st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 8 + v->pos, "__metadata__ is not an object");
                break;
            }
            for (size_t j = 0; j < v->n && st == MEMRA_STATUS_OK; j++) {
                if (v->items[j].kind != MEMRA__JSON_STRING)
                    st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 8 + v->items[j].pos,
                                         "__metadata__ \"%.64s\": values are strings", v->keys[j]);
                else if (with_meta)
                    st = add_str_meta(f, v->keys[j], v->key_len[j], v->items[j].str, MEMRA_META_STRING, NULL);
            }
            continue;
        }
        st = st_tensor(f, map, path, 8, root->keys[i], root->key_len[i], v);
    }
    memra__json_free(root);
    if (st != MEMRA_STATUS_OK) return st;
    /* the layout: sorted by begin, the tensors tile [0, data) exactly */
    const uint64_t data = 8 + n, avail = map->size - data;
    const size_t count = f->n_tensors - first;
    size_t *ord = malloc((count ? count : 1) * sizeof *ord);
    if (ord == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    for (size_t i = 0; i < count; i++) ord[i] = first + i;
    pthread_mutex_lock(&g_cmp_lock);
    g_cmp_file = f;
    qsort(ord, count, sizeof *ord, by_offset);
    pthread_mutex_unlock(&g_cmp_lock);
    uint64_t end = 0;
    const memra__tensor *prev = NULL;
    for (size_t i = 0; i < count && st == MEMRA_STATUS_OK; i++) {
        const memra__tensor *t = &f->tensors[ord[i]];
        if (t->offset > avail || t->bytes > avail - t->offset)
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, t->info_pos,
                                 "tensor \"%s\": data [%llu, %llu) ends past the data area (%llu bytes)", t->name,
                                 (unsigned long long)t->offset, (unsigned long long)(t->offset + t->bytes),
                                 (unsigned long long)avail);
        else if (t->offset < end)
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, t->info_pos,
                                 "tensor \"%s\": data [%llu, %llu) overlaps \"%s\" [%llu, %llu)", t->name,
                                 (unsigned long long)t->offset, (unsigned long long)(t->offset + t->bytes),
                                 prev->name, (unsigned long long)prev->offset, (unsigned long long)end);
        else if (t->offset > end)
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, t->info_pos,
                                 "tensor \"%s\": data starts at %llu, leaving a hole after byte %llu", t->name,
                                 (unsigned long long)t->offset, (unsigned long long)end);
        if (t->bytes > 0 || prev == NULL) prev = t;
        end = t->offset + t->bytes > end ? t->offset + t->bytes : end;
    }
    if (st == MEMRA_STATUS_OK && end != avail)
        st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, data + end,
                             "the tensors cover %llu of the %llu data bytes (trailing bytes not indexed)",
                             (unsigned long long)end, (unsigned long long)avail);
    if (st == MEMRA_STATUS_OK) {
        /* file order: data-offset order; offsets become absolute */
        memra__tensor *tmp = malloc((count ? count : 1) * sizeof *tmp);
        if (tmp == NULL) st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        else {
            for (size_t i = 0; i < count; i++) tmp[i] = f->tensors[ord[i]];
            for (size_t i = 0; i < count; i++) {
                f->tensors[first + i] = tmp[i];
                f->tensors[first + i].offset += data;
            }
            free(tmp);
        }
    }
    free(ord);
    return st;
}

/* ---- the index --------------------------------------------------------------------- */

static char *dirname_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return strdup(".");
    const size_t n = (size_t)(slash - path);
    char *d = malloc(n + 2);
    if (d == NULL) return NULL;
    if (n == 0) return strcpy(d, "/");
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

/* The weight map's members sorted by key, for lookups in O(log n). */
static const memra__json *g_wm;
static int wm_cmp(const void *a, const void *b)
{
    return strcmp(g_wm->keys[*(const size_t *)a], g_wm->keys[*(const size_t *)b]);
}

/* Members sorted by shard name, then by position: each run of one name
 * starts with its first mention. */
static int wm_val_cmp(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const int c = strcmp(g_wm->items[x].str, g_wm->items[y].str);
    return c != 0 ? c : (x < y ? -1 : 1);
}

static int size_cmp(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static const memra__json *wm_lookup(const memra__json *wm, const size_t *ord, const char *name)
{
    size_t lo = 0, hi = wm->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(wm->keys[ord[mid]], name);
        if (c == 0) return &wm->items[ord[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static void meta_text(const memra__json *v, char *buf, size_t len)
{
    switch (v->kind) {
    case MEMRA__JSON_STRING: snprintf(buf, len, "%s", v->str); break;
    case MEMRA__JSON_NUMBER:
        if (v->is_int) snprintf(buf, len, "%lld", (long long)v->integer);
        else snprintf(buf, len, "%.17g", v->number);
        break;
    case MEMRA__JSON_BOOL: snprintf(buf, len, "%s", v->boolean ? "true" : "false"); break;
    case MEMRA__JSON_NULL: snprintf(buf, len, "null"); break;
    case MEMRA__JSON_ARRAY: snprintf(buf, len, "[%zu values]", v->n); break;
    case MEMRA__JSON_OBJECT: snprintf(buf, len, "{%zu members}", v->n); break;
    }
}

memra_status memra__st_index_parse(memra_file *f, memra__mapping *map)
{
    const char *path = map->path;
    if (map->size > ST_HEADER_MAX)
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0, "an index of %zu bytes is over the limit of %u",
                               map->size, ST_HEADER_MAX);
    memra__json *root = NULL;
    size_t epos = 0;
    char err[160];
    memra_status st = memra__json_parse((const char *)map->base, map->size, ST_JSON_DEPTH, &root, &epos, err, sizeof err);
    if (st != MEMRA_STATUS_OK) return memra__file_bad(st, path, epos, "index JSON: %s", err);
    const memra__json *meta = memra__json_member(root, "metadata"), *wm = memra__json_member(root, "weight_map");
    char *dir = NULL;
    char **shards = NULL;
    size_t n_shards = 0, *wm_ord = NULL;
    if (root->kind != MEMRA__JSON_OBJECT || wm == NULL || wm->kind != MEMRA__JSON_OBJECT) {
        st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, wm ? wm->pos : 0,
                             "an index is an object with a \"weight_map\" object");
        goto done;
    }
    if (meta != NULL) {
        if (meta->kind != MEMRA__JSON_OBJECT) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, meta->pos, "\"metadata\" is not an object");
            goto done;
        }
        for (size_t i = 0; i < meta->n && st == MEMRA_STATUS_OK; i++) {
            const memra__json *v = &meta->items[i];
            char buf[256];
            meta_text(v, buf, sizeof buf);
            const memra_meta_type t = v->kind == MEMRA__JSON_STRING   ? MEMRA_META_STRING
                                      : v->kind == MEMRA__JSON_NUMBER ? MEMRA_META_FLOAT
                                      : v->kind == MEMRA__JSON_BOOL   ? MEMRA_META_BOOL
                                      : v->kind == MEMRA__JSON_ARRAY  ? MEMRA_META_ARRAY
                                                                      : MEMRA_META_OTHER;
            st = add_str_meta(f, meta->keys[i], meta->key_len[i], buf, t, v);
        }
        if (st != MEMRA_STATUS_OK) goto done;
    }
    dir = dirname_of(path);
    shards = calloc(wm->n ? wm->n : 1, sizeof *shards);
    if (dir == NULL || shards == NULL) {
        st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    wm_ord = malloc((wm->n ? wm->n : 1) * sizeof *wm_ord);
    if (wm_ord == NULL) {
        st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < wm->n; i++) {
        wm_ord[i] = i;
        if (strlen(wm->keys[i]) != wm->key_len[i]) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, wm->key_pos[i], "a tensor name holding a NUL byte");
            goto done;
        }
    }
    pthread_mutex_lock(&g_cmp_lock);
    g_wm = wm;
    qsort(wm_ord, wm->n, sizeof *wm_ord, wm_cmp);
    pthread_mutex_unlock(&g_cmp_lock);
    /* the shard names are plain file names beside the index */
    for (size_t i = 0; i < wm->n; i++) {
        const memra__json *v = &wm->items[i];
        if (v->kind != MEMRA__JSON_STRING || v->len == 0 || strlen(v->str) != v->len || strchr(v->str, '/') != NULL ||
            strcmp(v->str, ".") == 0 || strcmp(v->str, "..") == 0) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, v->pos,
                                 "weight_map \"%.64s\": the shard must be a plain file name beside the index",
                                 wm->keys[i]);
            goto done;
        }
    }
    /* the distinct shards in order of first mention, in O(n log n) */
    {
        size_t *byval = malloc((wm->n ? wm->n : 1) * sizeof *byval);
        if (byval == NULL) {
            st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            goto done;
        }
        for (size_t i = 0; i < wm->n; i++) byval[i] = i;
        pthread_mutex_lock(&g_cmp_lock);
        g_wm = wm;
        qsort(byval, wm->n, sizeof *byval, wm_val_cmp);
        pthread_mutex_unlock(&g_cmp_lock);
        size_t nfirst = 0;
        for (size_t i = 0; i < wm->n; i++)
            if (i == 0 || strcmp(wm->items[byval[i]].str, wm->items[byval[i - 1]].str) != 0) byval[nfirst++] = byval[i];
        qsort(byval, nfirst, sizeof *byval, size_cmp);
        for (size_t i = 0; i < nfirst; i++) shards[n_shards++] = wm->items[byval[i]].str;
        free(byval);
    }
    for (size_t s = 0; s < n_shards; s++) {
        const size_t plen = strlen(dir) + strlen(shards[s]) + 2;
        char *sp = malloc(plen);
        if (sp == NULL) {
            st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
            goto done;
        }
        snprintf(sp, plen, "%s/%s", dir, shards[s]);
        memra__mapping *m = NULL;
        st = memra__mapping_open(sp, &m);
        if (st != MEMRA_STATUS_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", memra_last_error());
            size_t at = 0;
            for (size_t i = 0; i < wm->n; i++)
                if (strcmp(wm->items[i].str, shards[s]) == 0) {
                    at = wm->items[i].pos;
                    break;
                }
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, at, "shard \"%s\" cannot be used: %s", shards[s], why);
            free(sp);
            goto done;
        }
        free(sp);
        if ((st = memra__file_add_map(f, m)) != MEMRA_STATUS_OK) goto done;
        const size_t before = f->n_tensors;
        if ((st = memra__st_parse(f, m, 0)) != MEMRA_STATUS_OK) goto done;
        /* every tensor of the shard must be mapped to it */
        for (size_t t = before; t < f->n_tensors; t++) {
            const memra__json *v = wm_lookup(wm, wm_ord, f->tensors[t].name);
            if (v == NULL || strcmp(v->str, shards[s]) != 0) {
                st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, m->path, f->tensors[t].info_pos,
                                     "tensor \"%s\" is in this shard but the index %s", f->tensors[t].name,
                                     v == NULL ? "does not name it" : "maps it to another shard");
                goto done;
            }
        }
    }
    if ((st = memra__file_index_names(f)) != MEMRA_STATUS_OK) goto done;
    /* and every mapped tensor must be in its shard */
    for (size_t i = 0; i < wm->n; i++) {
        size_t lo = 0, hi = f->n_tensors, found = 0;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            const int c = strcmp(f->tensors[f->by_name[mid]].name, wm->keys[i]);
            if (c == 0) {
                found = 1;
                break;
            }
            if (c < 0) lo = mid + 1;
            else hi = mid;
        }
        if (!found) {
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, wm->key_pos[i],
                                 "tensor \"%.64s\" is mapped to shard \"%s\", which does not hold it", wm->keys[i],
                                 wm->items[i].str);
            goto done;
        }
    }
    snprintf(f->desc, sizeof f->desc, "safetensors index (%zu shard%s)", n_shards, n_shards == 1 ? "" : "s");
done:
    free(wm_ord);
    free(shards);
    free(dir);
    memra__json_free(root);
    return st;
}
