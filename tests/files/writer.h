/* Small GGUF and safetensors writers for the model-file tests and the fuzz
 * seeds: files built in memory byte by byte from the format descriptions, with
 * knobs to break one rule at a time. */
#ifndef MEMRA_TESTS_FILES_WRITER_H
#define MEMRA_TESTS_FILES_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tw_buf {
    uint8_t *p;
    size_t n, cap;
} tw_buf;

void tw_put(tw_buf *b, const void *src, size_t n);
void tw_u8(tw_buf *b, uint8_t v);
void tw_u32(tw_buf *b, uint32_t v);
void tw_u64(tw_buf *b, uint64_t v);
void tw_str(tw_buf *b, const char *s); /* GGUF string: u64 length + bytes */
void tw_free(tw_buf *b);
/* Write b to path; exits the test on failure. */
void tw_save(const tw_buf *b, const char *path);

/* ---- GGUF ---- */

typedef struct tw_gguf_tensor {
    const char *name;
    uint32_t type;            /* ggml type id */
    uint32_t n_dims;
    uint64_t ne[4];           /* GGUF order: ne[0] contiguous */
    const void *data;
    size_t bytes;
    int64_t offset_override;  /* >= 0: this relative offset instead of the packed one */
} tw_gguf_tensor;

typedef struct tw_gguf {
    uint32_t version;         /* 0: 3 */
    uint32_t alignment;       /* 0: no general.alignment key (32) */
    int with_meta;            /* a key/value of every type */
    uint64_t n_tensors_override, n_kv_override; /* 0: the true counts */
    const tw_gguf_tensor *tensors;
    size_t n_tensors;
    /* OUT: where things landed (byte offsets in the file) */
    size_t at_n_tensors, at_n_kv, at_first_kv, at_tinfo[16], at_data;
} tw_gguf;

void tw_gguf_build(tw_gguf *g, tw_buf *out);

/* ---- safetensors ---- */

typedef struct tw_st_tensor {
    const char *name;
    const char *dtype;
    int n_dims;
    uint64_t shape[4];
    const void *data;
    size_t bytes;
} tw_st_tensor;

/* Header JSON with data_offsets packed in order, padded with spaces to a
 * multiple of 8, then the data. meta: NULL or a JSON object text for
 * "__metadata__". */
void tw_st_build(const tw_st_tensor *t, size_t n, const char *meta, tw_buf *out);
/* The same from a header text given whole (for malformed headers); data appended. */
void tw_st_raw(const char *header, size_t header_len, const void *data, size_t data_len, tw_buf *out);

#endif
