/* Private to the model-file readers (core/file*.c). */
#ifndef MEMRA_CORE_FILE_INTERNAL_H
#define MEMRA_CORE_FILE_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "memra/file.h"

/* One read-only mapping, counted: the file object holds one reference, each
 * weight made from it one more; the last release unmaps. */
typedef struct memra__mapping {
    atomic_int refs;
    const uint8_t *base;
    size_t size;
    char *path;
    int borrowed; /* memra_file_open_memory: the caller's bytes, never unmapped */
} memra__mapping;

typedef struct memra__tensor {
    char *name;
    const char *type;
    int has_format;
    memra_format format;
    int n_dims;
    int64_t shape[MEMRA_TENSOR_MAX_DIMS];
    uint64_t elements, bytes, offset;
    memra__mapping *map;
    uint64_t info_pos; /* where the tensor is described in its file (errors) */
} memra__tensor;

typedef struct memra__meta {
    char *key;
    memra_meta_type type;
    char *text;
    int64_t i;
    uint64_t u;
    double f;
    memra_meta_type elem_type;
    uint64_t count;
    uint64_t pos; /* where the key/value starts in its file (errors) */
} memra__meta;

struct memra_file {
    memra_file_kind kind;
    char *path;
    char desc[96];
    memra__mapping **maps;
    size_t n_maps, cap_maps;
    memra__tensor *tensors;
    size_t n_tensors, cap_tensors;
    memra__meta *meta;
    size_t n_meta, cap_meta;
    size_t *by_name; /* tensor indices sorted by name */
    /* ---- expert groups (file_experts.c), made with the name index ---- */
    struct memra__xgroup *groups;
    size_t n_groups;
};

/* An expert group: one 3D tensor [E x out x in], or E 2D tensors named
 * <prefix>.experts.<J>.<suffix>, J = 0 .. E-1, of one type and shape. */
typedef struct memra__xgroup {
    char *name;       /* the 3D tensor's name, or <prefix>.experts.*.<suffix> */
    int from_3d;
    int32_t n;        /* experts */
    size_t *tensors;  /* expert J's tensor index (from_3d: n copies of the one tensor) */
} memra__xgroup;

/* file_experts.c: (re)build f's expert groups from its tensors; free them. */
memra_status memra__file_groups(memra_file *f);
void memra__file_groups_free(memra_file *f);
/* file.c: the FP8 scale of E4M3 weight w by the conventions of file.h
 * (*grid malloc'd, NULL for a per-tensor scale). */
memra_status memra__file_fp8_scale(const memra_file *f, const memra__tensor *w, float *scale, float **grid,
                                   size_t *grid_count);

/* "<path>: byte <off>: <message>" as INVALID_ARGUMENT (or st). */
memra_status memra__file_bad(memra_status st, const char *path, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

memra_status memra__mapping_open(const char *path, memra__mapping **out);
void memra__mapping_release(memra__mapping *m);
/* Add m to f's mappings (f takes the caller's reference). */
memra_status memra__file_add_map(memra_file *f, memra__mapping *m);
/* A new zeroed tensor / metadata slot at the end; NULL when out of memory. */
memra__tensor *memra__file_add_tensor(memra_file *f);
memra__meta *memra__file_add_meta(memra_file *f);
/* Sort the names, refusing a repeated one (named with its position). */
memra_status memra__file_index_names(memra_file *f);

/* Parsers: append f's tensors and metadata from mapping m (already added). */
memra_status memra__gguf_parse(memra_file *f, memra__mapping *m);
memra_status memra__st_parse(memra_file *f, memra__mapping *m, int with_meta);
memra_status memra__st_index_parse(memra_file *f, memra__mapping *m);

#endif
