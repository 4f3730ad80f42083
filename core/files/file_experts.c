/* Expert groups of a model file (memra/file.h): found when the name index is
 * made, turned into expert weights over the mappings without a host copy. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/files/file_internal.h"
#include "core/weights/weights.h"
#include "memra/formats.h"

void memra__file_groups_free(memra_file *f)
{
    for (size_t i = 0; i < f->n_groups; i++) {
        free(f->groups[i].name);
        free(f->groups[i].tensors);
    }
    free(f->groups);
    f->groups = NULL;
    f->n_groups = 0;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* <prefix>.experts.<J>.<suffix>: the length of "<prefix>.experts." and J; 0 when not. */
static size_t expert_split(const char *name, long *j, const char **rest)
{
    const char *p = name, *hit = NULL;
    while ((p = strstr(p, ".experts.")) != NULL) hit = p, p++;
    if (hit == NULL) return 0;
    const char *d = hit + 9, *e = d;
    while (*e >= '0' && *e <= '9' && e - d < 7) e++;
    if (e == d || *e != '.' || (e - d > 1 && *d == '0')) return 0;
    *j = strtol(d, NULL, 10);
    *rest = e;
    return (size_t)(d - name);
}

typedef struct cand {
    char *key;
    long j;
    size_t t;
} cand;

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    const int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->j < y->j ? -1 : x->j > y->j;
}

static int group_first_cmp(const void *a, const void *b)
{
    const memra__xgroup *x = a, *y = b;
    return x->tensors[0] < y->tensors[0] ? -1 : x->tensors[0] > y->tensors[0];
}

static memra_status oom(memra_file *f) { return memra__set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", f->path); }

memra_status memra__file_groups(memra_file *f)
{
    memra__file_groups_free(f);
    cand *c = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *c);
    f->groups = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *f->groups);
    if (c == NULL || f->groups == NULL) {
        free(c);
        return oom(f);
    }
    size_t nc = 0;
    memra_status st = MEMRA_STATUS_OK;
    for (size_t i = 0; i < f->n_tensors && st == MEMRA_STATUS_OK; i++) {
        const memra__tensor *t = &f->tensors[i];
        if (!t->has_format) continue;
        if (t->n_dims == 3 && t->shape[0] >= 1 && t->shape[0] <= (1 << 16) && t->shape[1] > 0 && t->shape[2] > 0) {
            memra__xgroup *g = &f->groups[f->n_groups];
            g->from_3d = 1;
            g->n = (int32_t)t->shape[0];
            g->name = strdup(t->name);
            g->tensors = malloc((size_t)g->n * sizeof *g->tensors);
            if (g->name == NULL || g->tensors == NULL) {
                free(g->name), free(g->tensors);
                st = oom(f);
                break;
            }
            for (int32_t e = 0; e < g->n; e++) g->tensors[e] = i;
            f->n_groups++;
            continue;
        }
        if (t->n_dims != 2 || ends_with(t->name, "weight_scale") || ends_with(t->name, "weight_scale_inv")) continue;
        long j;
        const char *rest;
        const size_t pl = expert_split(t->name, &j, &rest);
        if (pl == 0) continue;
        const size_t rl = strlen(rest);
        char *key = malloc(pl + 1 + rl + 1);
        if (key == NULL) {
            st = oom(f);
            break;
        }
        memcpy(key, t->name, pl);
        key[pl] = '*';
        memcpy(key + pl + 1, rest, rl + 1);
        c[nc++] = (cand){.key = key, .j = j, .t = i};
    }
    if (st == MEMRA_STATUS_OK) qsort(c, nc, sizeof *c, cand_cmp);
    for (size_t a = 0; a < nc && st == MEMRA_STATUS_OK;) {
        size_t b = a;
        while (b < nc && strcmp(c[b].key, c[a].key) == 0) b++;
        /* a run: J = 0 .. n-1 exactly, one type and shape */
        int ok = 1;
        const memra__tensor *t0 = &f->tensors[c[a].t];
        for (size_t i = a; i < b && ok; i++) {
            const memra__tensor *t = &f->tensors[c[i].t];
            ok = c[i].j == (long)(i - a) && t->format == t0->format && t->shape[0] == t0->shape[0] &&
                 t->shape[1] == t0->shape[1];
        }
        if (ok && b - a <= (1u << 16)) {
            memra__xgroup *g = &f->groups[f->n_groups];
            g->from_3d = 0;
            g->n = (int32_t)(b - a);
            g->name = c[a].key;
            c[a].key = NULL;
            g->tensors = malloc((size_t)g->n * sizeof *g->tensors);
            if (g->tensors == NULL) {
                free(g->name);
                st = oom(f);
                break;
            }
            for (size_t i = a; i < b; i++) g->tensors[i - a] = c[i].t;
            f->n_groups++;
        }
        a = b;
    }
    for (size_t i = 0; i < nc; i++) free(c[i].key);
    free(c);
    if (st != MEMRA_STATUS_OK) {
        memra__file_groups_free(f);
        return st;
    }
    qsort(f->groups, f->n_groups, sizeof *f->groups, group_first_cmp);
    return MEMRA_STATUS_OK;
}

size_t memra_file_expert_group_count(const memra_file *f) { return f ? f->n_groups : 0; }

static void group_shape(const memra_file *f, const memra__xgroup *g, int64_t *out_f, int64_t *in_f)
{
    const memra__tensor *t = &f->tensors[g->tensors[0]];
    *out_f = g->from_3d ? t->shape[1] : t->shape[0];
    *in_f = g->from_3d ? t->shape[2] : t->shape[1];
}

memra_status memra_file_expert_group_get(const memra_file *f, size_t index, memra_expert_group_info *out)
{
    if (f == NULL || out == NULL || index >= f->n_groups)
        return memra__set_error(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_expert_group_get: bad argument");
    const memra__xgroup *g = &f->groups[index];
    const memra__tensor *t = &f->tensors[g->tensors[0]];
    memset(out, 0, sizeof *out);
    out->name = g->name;
    out->type = t->type;
    out->has_format = 1;
    out->format = t->format;
    out->from_3d = g->from_3d;
    out->n_experts = g->n;
    group_shape(f, g, &out->out_f, &out->in_f);
    out->bytes = g->from_3d ? t->bytes : t->bytes * (uint64_t)g->n;
    return MEMRA_STATUS_OK;
}

/* The mappings an expert weight reads, one reference each, released at destroy. */
typedef struct xrefs {
    size_t n;
    memra__mapping *maps[];
} xrefs;

static void xrefs_release(void *user)
{
    xrefs *r = user;
    for (size_t i = 0; i < r->n; i++) memra__mapping_release(r->maps[i]);
    free(r);
}

memra_status memra_file_experts_create(memra_runtime *rt, const memra_file *f, const char *name, memra_weight **out_w)
{
    memra__clear_error();
    if (rt == NULL || f == NULL || name == NULL || out_w == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_file_experts_create: NULL argument");
    const memra__xgroup *g = NULL;
    for (size_t i = 0; i < f->n_groups && g == NULL; i++)
        if (strcmp(f->groups[i].name, name) == 0) g = &f->groups[i];
    if (g == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "%s: no expert group \"%s\"", f->path, name);
    const memra__tensor *t0 = &f->tensors[g->tensors[0]];
    int64_t out_f, in_f;
    group_shape(f, g, &out_f, &in_f);
    if (g->from_3d && t0->format == MEMRA_FORMAT_E4M3)
        return memra__set_error(MEMRA_STATUS_NOT_SUPPORTED,
                                "%s: a 3D F8_E4M3 tensor: memra knows no scale convention for it (per-expert 2D tensors "
                                "with weight_scale / weight_scale_inv are grouped)",
                                name);
    const int32_t n = g->n;
    const size_t each = (size_t)out_f * (size_t)memra_format_row_bytes(t0->format, in_f);
    const void **parts = calloc((size_t)n, sizeof *parts);
    float *scales = t0->format == MEMRA_FORMAT_E4M3 ? calloc((size_t)n, sizeof *scales) : NULL;
    float *grids = NULL;
    size_t grid_each = 0;
    const size_t nrefs = g->from_3d ? 1 : (size_t)n;
    xrefs *refs = malloc(sizeof *refs + nrefs * sizeof refs->maps[0]);
    memra_status st = MEMRA_STATUS_OK;
    if (parts == NULL || refs == NULL || (t0->format == MEMRA_FORMAT_E4M3 && scales == NULL))
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    for (int32_t e = 0; e < n && st == MEMRA_STATUS_OK; e++) {
        const memra__tensor *t = &f->tensors[g->tensors[e]];
        parts[e] = t->map->base + t->offset + (g->from_3d ? (size_t)e * each : 0);
        if (t->format != MEMRA_FORMAT_E4M3) continue;
        float sc = 0.0f, *grid = NULL;
        size_t gc = 0;
        st = memra__file_fp8_scale(f, t, &sc, &grid, &gc);
        if (st != MEMRA_STATUS_OK) break;
        if (e == 0 && grid != NULL) {
            grid_each = gc;
            grids = malloc((size_t)n * gc * sizeof *grids);
            if (grids == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
        }
        if (st == MEMRA_STATUS_OK && (grid != NULL) != (grids != NULL))
            st = memra__set_error(MEMRA_STATUS_NOT_SUPPORTED,
                                  "%s: expert %d has a %s scale and expert 0 a %s one: one kind for all experts", name,
                                  (int)e, grid ? "block-128" : "per-tensor", grids ? "block-128" : "per-tensor");
        if (st == MEMRA_STATUS_OK && grid != NULL) memcpy(grids + (size_t)e * grid_each, grid, gc * sizeof *grid);
        scales[e] = sc;
        free(grid);
    }
    if (st == MEMRA_STATUS_OK) {
        refs->n = nrefs;
        for (size_t i = 0; i < nrefs; i++) {
            refs->maps[i] = f->tensors[g->tensors[i]].map;
            atomic_fetch_add(&refs->maps[i]->refs, 1);
        }
        st = memra__weight_create_experts_parts(rt, t0->format, n, out_f, in_f, parts, each,
                                                grids ? NULL : scales, grids, grid_each, g->name, xrefs_release, refs,
                                                out_w);
        if (st != MEMRA_STATUS_OK) xrefs_release(refs);
        refs = NULL;
    }
    free(refs);
    free(parts);
    free(scales);
    free(grids);
    return st;
}
