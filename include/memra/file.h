/* memra model files: GGUF (v2, v3), safetensors, and a sharded safetensors
 * set through its model.safetensors.index.json, read-only through mmap.
 *
 *   memra_file *f;
 *   if (memra_file_open("model.gguf", &f) != MEMRA_STATUS_OK) { puts(memra_last_error()); return 1; }
 *   for (size_t i = 0; i < memra_file_tensor_count(f); i++) {
 *       memra_tensor_info t;
 *       memra_file_tensor_get(f, i, &t);
 *       printf("%s %s [%lld x %lld]\n", t.name, t.type, (long long)t.shape[0], (long long)t.shape[1]);
 *   }
 *   memra_weight *w;
 *   memra_file_weight_create(rt, f, "blk.0.attn_q.weight", &w);  // no host copy of the bytes
 *   memra_file_close(f);                       // w keeps the mapping it reads alive
 *   memra_matmul(dev, w, x, m, y, NULL);
 *   memra_weight_destroy(w);                   // the last user unmaps the file
 *
 * Shapes are given outermost first, the last dimension contiguous (numpy's
 * order; GGUF's ne[] reversed), so a 2D weight is shape[0] = out_f rows by
 * shape[1] = in_f columns.
 *
 * Bad files: memra_file_open checks the whole header, every tensor's extent
 * and the layout rules before it succeeds, and fails with INVALID_ARGUMENT
 * (NOT_SUPPORTED for a well-formed file using a tensor type memra does not
 * know) and a memra_last_error message naming the file and the byte offset
 * of the problem. Nothing is read outside the mapping. The path (a shard's
 * too) is opened O_NONBLOCK and fstat'ed before any byte is read: only a
 * regular file is read (a FIFO, a device or a folder is refused at once,
 * naming what it is); a symlink is followed, and errors name the file, never
 * its bytes. Every size (dimensions' product, elements x type size) is checked
 * for overflow. Names are the file's bytes: a GGUF name may hold any byte but
 * NUL (escape sequences, invalid UTF-8), so escape them before printing
 * (`memra model ls` does, and its --json is valid UTF-8); the messages of
 * memra_last_error escape control bytes as \xNN.
 *
 * Truncation under the mapping (SIGBUS): the bytes are read through a
 * MAP_PRIVATE mapping, at open (headers) and later (memra_file_read,
 * memra_file_weight_create, a prepare that uploads a weight, a lazy operand
 * build). If another process truncates the file while it is mapped, a read of
 * a page past the new end raises SIGBUS in the reading thread, which memra
 * cannot turn into a status (a handler for it would be process-wide). What a
 * caller can do: do not truncate or rewrite model files in place (write a new
 * file and rename it over the old; the mapping keeps the old inode); or copy
 * what it needs while it trusts the file (memra_file_read, or prepare the
 * weights, which copies them to the device); or install its own SIGBUS handler
 * if it must read files that others may truncate.
 *
 * Ownership and threads: a memra_file is immutable after open; every query
 * may be called from any thread at once. Strings and infos returned point
 * into the file object and stay valid until memra_file_close. Weights made
 * from a file hold a reference to the mapping they read (counted, released by
 * memra_weight_destroy), so the file may be closed before them.
 */
#ifndef MEMRA_FILE_H
#define MEMRA_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "memra/memra.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memra_file memra_file;

typedef enum memra_file_kind {
    MEMRA_FILE_GGUF = 1,
    MEMRA_FILE_SAFETENSORS = 2,       /* one .safetensors file */
    MEMRA_FILE_SAFETENSORS_INDEX = 3, /* a sharded set, opened through its index .json */
} memra_file_kind;

#define MEMRA_TENSOR_MAX_DIMS 4

typedef struct memra_tensor_info {
    const char *name;
    const char *type;        /* the file's own type name: "Q4_K", "BF16", "F8_E4M3", "I64", ... */
    int has_format;          /* 1 when the type is a memra format (format below is valid) */
    memra_format format;
    int n_dims;              /* 0 .. 4 */
    int64_t shape[MEMRA_TENSOR_MAX_DIMS]; /* outermost first; unused entries 1 */
    uint64_t elements;
    uint64_t bytes;
    uint64_t offset;         /* absolute byte offset of the data in its file */
    const char *path;        /* the file holding the data (a shard for an index) */
} memra_tensor_info;

typedef enum memra_meta_type {
    MEMRA_META_STRING = 0,
    MEMRA_META_INT = 1,      /* signed integers (GGUF i8..i64) */
    MEMRA_META_UINT = 2,     /* unsigned integers (GGUF u8..u64) */
    MEMRA_META_FLOAT = 3,    /* GGUF f32, f64; JSON numbers with a fraction or exponent */
    MEMRA_META_BOOL = 4,
    MEMRA_META_ARRAY = 5,
    MEMRA_META_OTHER = 6,    /* a JSON null, object or array in a safetensors index's metadata */
} memra_meta_type;

typedef struct memra_meta_info {
    const char *key;
    memra_meta_type type;
    const char *text;        /* the value as text (strings as they are; arrays summarised as
                                "[151936 x string]" or "[3 x u32: 1, 2, 3]") */
    int64_t i;               /* MEMRA_META_INT, MEMRA_META_BOOL (0/1) */
    uint64_t u;              /* MEMRA_META_UINT */
    double f;                /* MEMRA_META_FLOAT */
    memra_meta_type elem_type; /* MEMRA_META_ARRAY: the elements' type */
    uint64_t count;          /* MEMRA_META_ARRAY: number of elements */
} memra_meta_info;

/* Open a model file by its magic: "GGUF" -> GGUF (a name ending in ".gguf"
 * without the magic is refused at byte 0); a name ending in ".json" -> a
 * safetensors index, whose shards (plain file names, no '/') are opened
 * from the index's folder; otherwise a safetensors file. Every file is mapped
 * read-only (MAP_PRIVATE) and validated in full. Returns OK, INVALID_ARGUMENT
 * (malformed: file and byte offset in memra_last_error), NOT_SUPPORTED (an
 * unknown tensor type), IO_ERROR (cannot open / stat / map), OUT_OF_MEMORY. */
memra_status memra_file_open(const char *path, memra_file **out_file);
/* memra_file_open over a file image already in memory (data[0 .. size)):
 * `name` stands for the path in messages and decides the kind as above; an
 * index's shards are still opened from the folder of `name`. The bytes are
 * borrowed, not copied: the caller keeps them valid and unchanged until
 * memra_file_close and the destruction of every weight made from the file.
 * Same statuses as memra_file_open. */
memra_status memra_file_open_memory(const char *name, const void *data, size_t size, memra_file **out_file);
/* Release the file's reference to its mappings (weights made from it keep
 * theirs). NULL is fine. */
void memra_file_close(memra_file *f);

memra_file_kind memra_file_kind_get(const memra_file *f);
/* "GGUF v3", "safetensors", "safetensors index (4 shards)". */
const char *memra_file_describe(const memra_file *f);
/* The path given to memra_file_open. */
const char *memra_file_path(const memra_file *f);

/* Tensors in file order (GGUF: tensor-info order; safetensors: data offset
 * order, shard after shard in the index's order of first mention). */
size_t memra_file_tensor_count(const memra_file *f);
/* INVALID_ARGUMENT when index is out of range. */
memra_status memra_file_tensor_get(const memra_file *f, size_t index, memra_tensor_info *out);
/* NOT_FOUND (message naming the tensor) when there is none by that name. */
memra_status memra_file_tensor_find(const memra_file *f, const char *name, size_t *out_index);
/* The tensor's bytes inside the read-only mapping (valid until memra_file_close). */
memra_status memra_file_tensor_data(const memra_file *f, size_t index, const void **out_data, size_t *out_bytes);

/* Metadata: GGUF key/values in file order; safetensors "__metadata__" (strings);
 * an index's "metadata" object. */
size_t memra_file_meta_count(const memra_file *f);
memra_status memra_file_meta_get(const memra_file *f, size_t index, memra_meta_info *out);
memra_status memra_file_meta_find(const memra_file *f, const char *key, memra_meta_info *out);

/* A memra_weight over tensor `name`'s bytes in the mapping, without a host
 * copy. The tensor must be 2D with a memra format (NOT_SUPPORTED otherwise,
 * naming the type or the rank). A safetensors F8_E4M3 weight gets its scale by
 * convention, from the name minus ".weight":
 *   <base>.weight_scale      one value (shape [], [1] or [1,1]; F32, BF16 or F16) -> per-tensor scale
 *   <base>.weight_scale_inv  [ceil(out/128), ceil(in/128)] (F32, or BF16/F16 widened exactly) -> block-128 grid
 *   <base>.input_scale       one value (F32, BF16 or F16), finite and > 0 -> the weight's static
 *                            activation scale (memra_weight_desc.input_scale; optional)
 * Any other scale layout (per-row [out] or [out,1], per-column, another grid,
 * an input_scale of more than one value) is refused with NOT_SUPPORTED naming
 * the layout; an E4M3 weight with no scale tensor is refused likewise. Other statuses as memra_weight_create. */
memra_status memra_file_weight_create(memra_runtime *rt, const memra_file *f, const char *name,
                                      memra_weight **out_w);

/* ---- expert groups (MoE) -------------------------------------------------------
 * The reader groups expert tensors: a 3D tensor [E x out_f x in_f] of a memra
 * format (GGUF's blk.N.ffn_{gate,up,down}_exps.weight: ne[] = {in_f, out_f,
 * E}), and the 2D tensors <prefix>.experts.<J>.<suffix> of a safetensors file
 * or sharded set (model.layers.N.mlp.experts.J.{gate,up,down}_proj.weight),
 * grouped as "<prefix>.experts.*.<suffix>" when J runs over exactly 0 .. E-1
 * with one type and shape (FP8 ones with a weight_scale or weight_scale_inv
 * per expert). Tensors that do not form such a run stay ungrouped (still
 * listed as tensors). Groups come in order of their first tensor. */
typedef struct memra_expert_group_info {
    const char *name;        /* the 3D tensor's name, or "<prefix>.experts.*.<suffix>" */
    const char *type;        /* the file's type name */
    int has_format;          /* always 1 (groups are made of memra formats) */
    memra_format format;
    int from_3d;             /* 1: one 3D tensor; 0: per-expert 2D tensors */
    int32_t n_experts;
    int64_t out_f, in_f;     /* each expert */
    uint64_t bytes;          /* all experts' weight bytes (scales not counted) */
} memra_expert_group_info;

size_t memra_file_expert_group_count(const memra_file *f);
/* INVALID_ARGUMENT when index is out of range. Strings live until memra_file_close. */
memra_status memra_file_expert_group_get(const memra_file *f, size_t index, memra_expert_group_info *out);
/* An expert weight (memra.h, memra_matmul_experts) over group `name`'s bytes
 * in the mappings, without a host copy (`name` may also be the name of a 3D
 * tensor). FP8 experts get their scale by the conventions of
 * memra_file_weight_create, expert by expert; every expert must have the same
 * kind (all per-tensor or all block-128). NOT_FOUND when no group has that
 * name; NOT_SUPPORTED for a 3D E4M3 tensor (no scale convention for it) or
 * mixed scale kinds; otherwise as memra_weight_create_experts. */
memra_status memra_file_experts_create(memra_runtime *rt, const memra_file *f, const char *name,
                                       memra_weight **out_w);

#ifdef __cplusplus
}
#endif
#endif
