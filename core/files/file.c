/* Model files (memra/file.h): mappings, the file object, queries, and weights
 * made over the mapping with no host copy. The format parsers live in
 * file_gguf.c and file_st.c. */

#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "core/files/file_internal.h"
#include "memra/formats.h"

memra_status memra__file_bad(memra_status st, const char *path, uint64_t off, const char *fmt, ...)
{
    char raw[512], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* names from the file may hold escape bytes: never sent to a terminal raw */
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 5 < sizeof msg; p++) {
        if (*p < 0x20 || *p == 0x7F) o += (size_t)snprintf(msg + o, sizeof msg - o, "\\x%02x", *p);
        else msg[o++] = (char)*p;
    }
    msg[o] = '\0';
    return memra__set_error(st, "%s: byte %llu: %s", path, (unsigned long long)off, msg);
}

/* ---- mappings ----------------------------------------------------------------- */

static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a folder" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* A model file is opened O_NONBLOCK (a FIFO never blocks the open) and
 * fstat'ed before any byte is read: only a regular file is mapped. A symlink
 * is followed; the errors name the file it reaches, never its bytes. */
memra_status memra__mapping_open(const char *path, memra__mapping **out)
{
    char shown[PATH_MAX + 64];
    struct stat lsb;
    char real[PATH_MAX];
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) && realpath(path, real) != NULL)
        snprintf(shown, sizeof shown, "%s (a symlink to %s)", path, real);
    else snprintf(shown, sizeof shown, "%s", path);
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return memra__set_error(MEMRA_STATUS_IO_ERROR, "%s: cannot open: %s", shown, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int e = errno;
        close(fd);
        return memra__set_error(MEMRA_STATUS_IO_ERROR, "%s: cannot stat: %s", shown, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return memra__set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s: not a regular file (%s): refused, nothing read",
                                shown, kind_of(sb.st_mode));
    }
    if (sb.st_size == 0) {
        close(fd);
        return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, shown, 0, "the file is empty");
    }
    if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return memra__set_error(MEMRA_STATUS_IO_ERROR, "%s: too large to map", shown);
    }
    const size_t size = (size_t)sb.st_size;
    void *base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int e = errno;
    close(fd);
    if (base == MAP_FAILED) return memra__set_error(MEMRA_STATUS_IO_ERROR, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
    memra__mapping *m = calloc(1, sizeof *m);
    char *p = strdup(path);
    if (m == NULL || p == NULL) {
        munmap(base, size);
        free(m);
        free(p);
        return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    atomic_init(&m->refs, 1);
    m->base = base;
    m->size = size;
    m->path = p;
    *out = m;
    return MEMRA_STATUS_OK;
}

void memra__mapping_release(memra__mapping *m)
{
    if (m == NULL) return;
    if (atomic_fetch_sub(&m->refs, 1) != 1) return;
    if (!m->borrowed) munmap((void *)(uintptr_t)m->base, m->size);
    free(m->path);
    free(m);
}

static void mapping_release_cb(void *user) { memra__mapping_release((memra__mapping *)user); }

/* ---- the file object ---------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    const size_t nc = *cap ? *cap * 2 : 16;
    void *na = realloc(*arr, nc * elem);
    if (na == NULL) return -1;
    memset((char *)na + *cap * elem, 0, (nc - *cap) * elem);
    *arr = na;
    *cap = nc;
    return 0;
}

memra_status memra__file_add_map(memra_file *f, memra__mapping *m)
{
    if (grow((void **)&f->maps, &f->cap_maps, f->n_maps, sizeof *f->maps) != 0) {
        memra__mapping_release(m);
        return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", f->path);
    }
    f->maps[f->n_maps++] = m;
    return MEMRA_STATUS_OK;
}

memra__tensor *memra__file_add_tensor(memra_file *f)
{
    if (grow((void **)&f->tensors, &f->cap_tensors, f->n_tensors, sizeof *f->tensors) != 0) return NULL;
    memra__tensor *t = &f->tensors[f->n_tensors++];
    memset(t, 0, sizeof *t);
    for (int d = 0; d < MEMRA_TENSOR_MAX_DIMS; d++) t->shape[d] = 1;
    return t;
}

memra__meta *memra__file_add_meta(memra_file *f)
{
    if (grow((void **)&f->meta, &f->cap_meta, f->n_meta, sizeof *f->meta) != 0) return NULL;
    memra__meta *m = &f->meta[f->n_meta++];
    memset(m, 0, sizeof *m);
    return m;
}

static const memra_file *g_sort_file; /* qsort has no context argument; set under g_sort_lock */
static pthread_mutex_t g_sort_lock = PTHREAD_MUTEX_INITIALIZER;

static int name_cmp(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const int c = strcmp(g_sort_file->tensors[x].name, g_sort_file->tensors[y].name);
    return c != 0 ? c : (x < y ? -1 : x > y);
}

memra_status memra__file_index_names(memra_file *f)
{
    free(f->by_name);
    f->by_name = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *f->by_name);
    if (f->by_name == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", f->path);
    for (size_t i = 0; i < f->n_tensors; i++) f->by_name[i] = i;
    pthread_mutex_lock(&g_sort_lock);
    g_sort_file = f;
    qsort(f->by_name, f->n_tensors, sizeof *f->by_name, name_cmp);
    g_sort_file = NULL;
    pthread_mutex_unlock(&g_sort_lock);
    for (size_t i = 1; i < f->n_tensors; i++) {
        const memra__tensor *a = &f->tensors[f->by_name[i - 1]], *b = &f->tensors[f->by_name[i]];
        if (strcmp(a->name, b->name) == 0)
            return memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, b->map->path, b->info_pos,
                                   "duplicate tensor name \"%s\" (first described at byte %llu%s%s)", b->name,
                                   (unsigned long long)a->info_pos, a->map != b->map ? " of " : "",
                                   a->map != b->map ? a->map->path : "");
    }
    return memra__file_groups(f);
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static memra_status file_open(const char *path, const void *data, size_t size, memra_file **out_file)
{
    memra__clear_error();
    if (path == NULL || out_file == NULL || (data == NULL && size != 0))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_open: NULL argument");
    memra_file *f = calloc(1, sizeof *f);
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    memra__mapping *m = NULL;
    memra_status st = MEMRA_STATUS_OK;
    if (data == NULL) {
        st = memra__mapping_open(path, &m);
    } else if (size == 0) {
        st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0, "the file is empty");
    } else if ((m = calloc(1, sizeof *m)) == NULL || (m->path = strdup(path)) == NULL) {
        free(m);
        m = NULL;
        st = memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    } else {
        atomic_init(&m->refs, 1);
        m->base = data;
        m->size = size;
        m->borrowed = 1;
    }
    if (st == MEMRA_STATUS_OK) st = memra__file_add_map(f, m);
    if (st == MEMRA_STATUS_OK) {
        const int gguf_magic = m->size >= 4 && memcmp(m->base, "GGUF", 4) == 0;
        if (!gguf_magic && ends_with(path, ".gguf")) {
            /* the file's own bytes stay out of the message (it may be any file) */
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0, "not a GGUF file: it does not start with \"GGUF\"");
        } else if (gguf_magic) {
            f->kind = MEMRA_FILE_GGUF;
            st = memra__gguf_parse(f, m);
        } else if (ends_with(path, ".json")) {
            f->kind = MEMRA_FILE_SAFETENSORS_INDEX;
            st = memra__st_index_parse(f, m);
        } else if (!ends_with(path, ".safetensors") && (m->size < 9 || m->base[8] != '{')) {
            /* no GGUF magic, and no JSON header after a safetensors length: say so
             * rather than reading the first 8 bytes as a header length */
            st = memra__file_bad(MEMRA_STATUS_INVALID_ARGUMENT, path, 0,
                                 "neither a GGUF file (no \"GGUF\" magic) nor a safetensors file (no JSON "
                                 "header after its 8-byte length)");
        } else {
            f->kind = MEMRA_FILE_SAFETENSORS;
            snprintf(f->desc, sizeof f->desc, "safetensors");
            st = memra__st_parse(f, m, 1);
        }
    }
    if (st == MEMRA_STATUS_OK) st = memra__file_index_names(f);
    if (st != MEMRA_STATUS_OK) {
        memra_file_close(f);
        return st;
    }
    *out_file = f;
    return MEMRA_STATUS_OK;
}

memra_status memra_file_open(const char *path, memra_file **out_file) { return file_open(path, NULL, 0, out_file); }

memra_status memra_file_open_memory(const char *name, const void *data, size_t size, memra_file **out_file)
{
    if (data == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_open_memory: NULL data");
    return file_open(name, data, size, out_file);
}

void memra_file_close(memra_file *f)
{
    if (f == NULL) return;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].text);
    }
    for (size_t i = 0; i < f->n_maps; i++) memra__mapping_release(f->maps[i]);
    free(f->tensors);
    free(f->meta);
    free(f->maps);
    free(f->by_name);
    memra__file_groups_free(f);
    free(f->path);
    free(f);
}

memra_file_kind memra_file_kind_get(const memra_file *f) { return f ? f->kind : (memra_file_kind)0; }
const char *memra_file_describe(const memra_file *f) { return f ? f->desc : ""; }
const char *memra_file_path(const memra_file *f) { return f ? f->path : ""; }
size_t memra_file_tensor_count(const memra_file *f) { return f ? f->n_tensors : 0; }
size_t memra_file_meta_count(const memra_file *f) { return f ? f->n_meta : 0; }

static void tensor_info(const memra__tensor *t, memra_tensor_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->type = t->type;
    out->has_format = t->has_format;
    out->format = t->format;
    out->n_dims = t->n_dims;
    memcpy(out->shape, t->shape, sizeof out->shape);
    out->elements = t->elements;
    out->bytes = t->bytes;
    out->offset = t->offset;
    out->path = t->map->path;
}

memra_status memra_file_tensor_get(const memra_file *f, size_t index, memra_tensor_info *out)
{
    if (f == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_tensor_get: NULL argument");
    if (index >= f->n_tensors)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: tensor %zu of %zu", f->path, index, f->n_tensors);
    tensor_info(&f->tensors[index], out);
    return MEMRA_STATUS_OK;
}

static const memra__tensor *find(const memra_file *f, const char *name, size_t *out_index)
{
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) {
            if (out_index) *out_index = f->by_name[mid];
            return &f->tensors[f->by_name[mid]];
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

memra_status memra_file_tensor_find(const memra_file *f, const char *name, size_t *out_index)
{
    if (f == NULL || name == NULL || out_index == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_tensor_find: NULL argument");
    size_t i;
    if (find(f, name, &i) == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "%s: no tensor \"%s\"", f->path, name);
    *out_index = i;
    return MEMRA_STATUS_OK;
}

memra_status memra_file_tensor_data(const memra_file *f, size_t index, const void **out_data, size_t *out_bytes)
{
    if (f == NULL || out_data == NULL || out_bytes == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_tensor_data: NULL argument");
    if (index >= f->n_tensors)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: tensor %zu of %zu", f->path, index, f->n_tensors);
    const memra__tensor *t = &f->tensors[index];
    *out_data = t->map->base + t->offset;
    *out_bytes = (size_t)t->bytes;
    return MEMRA_STATUS_OK;
}

static void meta_info(const memra__meta *m, memra_meta_info *out)
{
    memset(out, 0, sizeof *out);
    out->key = m->key;
    out->type = m->type;
    out->text = m->text ? m->text : "";
    out->i = m->i;
    out->u = m->u;
    out->f = m->f;
    out->elem_type = m->elem_type;
    out->count = m->count;
}

memra_status memra_file_meta_get(const memra_file *f, size_t index, memra_meta_info *out)
{
    if (f == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_meta_get: NULL argument");
    if (index >= f->n_meta)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: metadata %zu of %zu", f->path, index, f->n_meta);
    meta_info(&f->meta[index], out);
    return MEMRA_STATUS_OK;
}

memra_status memra_file_meta_find(const memra_file *f, const char *key, memra_meta_info *out)
{
    if (f == NULL || key == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_meta_find: NULL argument");
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) {
            meta_info(&f->meta[i], out);
            return MEMRA_STATUS_OK;
        }
    return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "%s: no metadata key \"%s\"", f->path, key);
}

/* ---- weights over the mapping ----------------------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* Value e of a scale tensor as f32 (F32 as is; BF16, F16 widened exactly). */
static float scale_value(const memra__tensor *t, uint64_t e)
{
    const uint8_t *p = t->map->base + t->offset;
    if (t->format == MEMRA_FORMAT_F32) {
        float v;
        memcpy(&v, p + e * 4, 4);
        return v;
    }
    if (t->format == MEMRA_FORMAT_BF16) return memra_f32_from_bf16(rd16(p + e * 2));
    return memra_f32_from_f16(rd16(p + e * 2));
}

static int scale_type_ok(const memra__tensor *t)
{
    return t->has_format &&
           (t->format == MEMRA_FORMAT_F32 || t->format == MEMRA_FORMAT_BF16 || t->format == MEMRA_FORMAT_F16);
}

static void shape_text(const memra__tensor *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->n_dims && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

/* The FP8 scale of weight w by convention (see file.h). */
static memra_status fp8_scale(const memra_file *f, const memra__tensor *w, float *scale, float **grid,
                              size_t *grid_count)
{
    return memra__file_fp8_scale(f, w, scale, grid, grid_count);
}

memra_status memra__file_fp8_scale(const memra_file *f, const memra__tensor *w, float *scale, float **grid,
                                   size_t *grid_count)
{
    char base[512], nm[600], sh[96];
    const size_t n = strlen(w->name);
    const size_t bl = n >= 7 && strcmp(w->name + n - 7, ".weight") == 0 ? n - 7 : n;
    if (bl >= sizeof base) return memra__set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s: name too long", w->name);
    memcpy(base, w->name, bl);
    base[bl] = 0;
    const int64_t out_f = w->shape[0], in_f = w->shape[1];
    snprintf(nm, sizeof nm, "%s.weight_scale", base);
    const memra__tensor *s = find(f, nm, NULL);
    if (s != NULL) {
        shape_text(s, sh, sizeof sh);
        if (!scale_type_ok(s))
            return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: scale %s has type %s (F32, BF16 or F16 wanted)",
                                    w->name, nm, s->type);
        if (s->elements == 1) {
            *scale = scale_value(s, 0);
            return MEMRA_STATUS_OK;
        }
        const char *what = (s->n_dims == 1 && s->shape[0] == out_f) || (s->n_dims == 2 && s->shape[0] == out_f && s->shape[1] == 1)
                               ? "a per-row (per-output-channel) scale"
                           : (s->n_dims == 1 && s->shape[0] == in_f) || (s->n_dims == 2 && s->shape[0] == 1 && s->shape[1] == in_f)
                               ? "a per-column (per-input-channel) scale"
                               : "a scale layout memra does not know";
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED,
                                "%s: %s %s is %s; memra takes one per-tensor weight_scale or a block-128 weight_scale_inv "
                                "[%lld, %lld]",
                                w->name, nm, sh, what, (long long)memra_fp8_grid_rows(out_f),
                                (long long)memra_fp8_grid_cols(in_f));
    }
    snprintf(nm, sizeof nm, "%s.weight_scale_inv", base);
    s = find(f, nm, NULL);
    if (s == NULL)
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED,
                                "%s: an F8_E4M3 weight without a scale (looked for %s.weight_scale and %s.weight_scale_inv)",
                                w->name, base, base);
    shape_text(s, sh, sizeof sh);
    if (!scale_type_ok(s))
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: scale %s has type %s (F32, BF16 or F16 wanted)", w->name,
                                nm, s->type);
    const int64_t gr = memra_fp8_grid_rows(out_f), gc = memra_fp8_grid_cols(in_f);
    if (s->n_dims != 2 || s->shape[0] != gr || s->shape[1] != gc) {
        const char *what = (s->n_dims == 1 && s->shape[0] == out_f) || (s->n_dims == 2 && s->shape[0] == out_f && s->shape[1] == 1)
                               ? "a per-row (per-output-channel) scale"
                           : s->elements == 1 ? "a single value (per-tensor scales are named weight_scale)"
                                              : "not the block-128 grid";
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: %s %s is %s; block-128 wants [%lld, %lld]", w->name, nm,
                                sh, what, (long long)gr, (long long)gc);
    }
    float *g = malloc((size_t)(gr * gc) * sizeof *g);
    if (g == NULL) return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", w->name);
    for (uint64_t e = 0; e < (uint64_t)(gr * gc); e++) g[e] = scale_value(s, e);
    *grid = g;
    *grid_count = (size_t)(gr * gc);
    return MEMRA_STATUS_OK;
}

/* The static activation scale beside E4M3 weight w, "<base>.input_scale"
 * (compressed-tensors / ModelOpt): one finite value > 0, or absent (*out 0). */
static memra_status fp8_input_scale(const memra_file *f, const memra__tensor *w, float *out)
{
    char nm[600], sh[96];
    const size_t n = strlen(w->name);
    const int bl = (int)(n >= 7 && strcmp(w->name + n - 7, ".weight") == 0 ? n - 7 : n);
    snprintf(nm, sizeof nm, "%.*s.input_scale", bl, w->name);
    const memra__tensor *s = find(f, nm, NULL);
    *out = 0.0f;
    if (s == NULL) return MEMRA_STATUS_OK;
    shape_text(s, sh, sizeof sh);
    if (!scale_type_ok(s))
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: %s has type %s (F32, BF16 or F16 wanted)", w->name, nm,
                                s->type);
    if (s->elements != 1)
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED,
                                "%s: %s %s is not one value; memra takes a per-tensor static activation scale", w->name,
                                nm, sh);
    const float v = scale_value(s, 0);
    if (!(v > 0.0f) || !isfinite(v))
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: %s = %g is not a finite scale > 0", w->name, nm,
                                (double)v);
    *out = v;
    return MEMRA_STATUS_OK;
}

memra_status memra_file_weight_create(memra_runtime *rt, const memra_file *f, const char *name, memra_weight **out_w)
{
    memra__clear_error();
    if (rt == NULL || f == NULL || name == NULL || out_w == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_weight_create: NULL argument");
    const memra__tensor *t = find(f, name, NULL);
    if (t == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "%s: no tensor \"%s\"", f->path, name);
    if (!t->has_format)
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: tensor type %s is not a memra weight format", name, t->type);
    if (t->n_dims != 2)
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED, "%s: a weight is 2D; this tensor has %d dimensions", name,
                                t->n_dims);
    float scale = 0.0f, *grid = NULL, in_scale = 0.0f;
    size_t grid_count = 0;
    if (t->format == MEMRA_FORMAT_E4M3) {
        memra_status st = fp8_input_scale(f, t, &in_scale);
        if (st == MEMRA_STATUS_OK) st = fp8_scale(f, t, &scale, &grid, &grid_count);
        if (st != MEMRA_STATUS_OK) return st;
    }
    memra_weight_desc d = {.struct_size = sizeof d,
                           .format = t->format,
                           .out_f = t->shape[0],
                           .in_f = t->shape[1],
                           .data = t->map->base + t->offset,
                           .size = (size_t)t->bytes,
                           .scale = scale,
                           .grid = grid,
                           .grid_count = grid_count,
                           .name = t->name,
                           .input_scale = in_scale};
    atomic_fetch_add(&t->map->refs, 1);
    memra_status st = memra_weight_create_borrowed(rt, &d, mapping_release_cb, t->map, out_w);
    if (st != MEMRA_STATUS_OK) memra__mapping_release(t->map);
    free(grid);
    return st;
}
