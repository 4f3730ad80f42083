/* Test writers (see writer.h). */
#include "files/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tw_put(tw_buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (b->p == NULL) {
            fprintf(stderr, "writer: out of memory\n");
            exit(1);
        }
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

void tw_u8(tw_buf *b, uint8_t v) { tw_put(b, &v, 1); }
void tw_u32(tw_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    tw_put(b, x, 4);
}
void tw_u64(tw_buf *b, uint64_t v)
{
    tw_u32(b, (uint32_t)v);
    tw_u32(b, (uint32_t)(v >> 32));
}
void tw_str(tw_buf *b, const char *s)
{
    tw_u64(b, strlen(s));
    tw_put(b, s, strlen(s));
}
void tw_free(tw_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void tw_save(const tw_buf *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0) {
        fprintf(stderr, "writer: cannot write %s\n", path);
        exit(1);
    }
}

static void kv_head(tw_buf *b, const char *key, uint32_t type)
{
    tw_str(b, key);
    tw_u32(b, type);
}

void tw_gguf_build(tw_gguf *g, tw_buf *out)
{
    memset(out, 0, sizeof *out);
    const uint32_t align = g->alignment ? g->alignment : 32;
    uint64_t n_kv = (g->alignment ? 1 : 0) + (g->with_meta ? 12 : 0);
    tw_put(out, "GGUF", 4);
    tw_u32(out, g->version ? g->version : 3);
    g->at_n_tensors = out->n;
    tw_u64(out, g->n_tensors_override ? g->n_tensors_override : g->n_tensors);
    g->at_n_kv = out->n;
    tw_u64(out, g->n_kv_override ? g->n_kv_override : n_kv);
    g->at_first_kv = out->n;
    if (g->alignment) {
        kv_head(out, "general.alignment", 4);
        tw_u32(out, g->alignment);
    }
    if (g->with_meta) {
        kv_head(out, "general.name", 8), tw_str(out, "memra test model");
        kv_head(out, "t.u8", 0), tw_u8(out, 200);
        kv_head(out, "t.i8", 1), tw_u8(out, (uint8_t)(int8_t)-5);
        kv_head(out, "t.u16", 2), tw_u8(out, 0x34), tw_u8(out, 0x12);
        kv_head(out, "t.i16", 3), tw_u8(out, 0xFE), tw_u8(out, 0xFF);
        kv_head(out, "t.u32", 4), tw_u32(out, 4000000000u);
        kv_head(out, "t.i32", 5), tw_u32(out, (uint32_t)-123456);
        kv_head(out, "t.f32", 6), tw_u32(out, 0x3FC00000u); /* 1.5 */
        kv_head(out, "t.bool", 7), tw_u8(out, 1);
        kv_head(out, "t.u64", 10), tw_u64(out, 1ull << 40);
        kv_head(out, "t.arr_u32", 9), tw_u32(out, 4), tw_u64(out, 3), tw_u32(out, 1), tw_u32(out, 2), tw_u32(out, 3);
        kv_head(out, "t.arr_str", 9), tw_u32(out, 8), tw_u64(out, 2), tw_str(out, "a"), tw_str(out, "bc");
    }
    uint64_t off = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const tw_gguf_tensor *t = &g->tensors[i];
        if (i < 16) g->at_tinfo[i] = out->n;
        tw_str(out, t->name);
        tw_u32(out, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) tw_u64(out, t->ne[d]);
        tw_u32(out, t->type);
        tw_u64(out, t->offset_override >= 0 ? (uint64_t)t->offset_override : off);
        off += (t->bytes + align - 1) / align * align;
    }
    while (out->n % align) tw_u8(out, 0);
    g->at_data = out->n;
    off = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const tw_gguf_tensor *t = &g->tensors[i];
        tw_put(out, t->data, t->bytes);
        if (i + 1 < g->n_tensors)
            while ((out->n - g->at_data) % align) tw_u8(out, 0);
    }
}

void tw_st_raw(const char *header, size_t header_len, const void *data, size_t data_len, tw_buf *out)
{
    memset(out, 0, sizeof *out);
    tw_u64(out, header_len);
    tw_put(out, header, header_len);
    tw_put(out, data, data_len);
}

void tw_st_build(const tw_st_tensor *t, size_t n, const char *meta, tw_buf *out)
{
    tw_buf h = {0};
    char tmp[512];
    tw_put(&h, "{", 1);
    int first = 1;
    if (meta) {
        int k = snprintf(tmp, sizeof tmp, "\"__metadata__\":%s", meta);
        tw_put(&h, tmp, (size_t)k);
        first = 0;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(tmp, sizeof tmp, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", first ? "" : ",", t[i].name,
                         t[i].dtype);
        tw_put(&h, tmp, (size_t)k);
        for (int d = 0; d < t[i].n_dims; d++) {
            k = snprintf(tmp, sizeof tmp, "%s%llu", d ? "," : "", (unsigned long long)t[i].shape[d]);
            tw_put(&h, tmp, (size_t)k);
        }
        k = snprintf(tmp, sizeof tmp, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + t[i].bytes));
        tw_put(&h, tmp, (size_t)k);
        off += t[i].bytes;
        first = 0;
    }
    tw_put(&h, "}", 1);
    while (h.n % 8) tw_put(&h, " ", 1);
    memset(out, 0, sizeof *out);
    tw_u64(out, h.n);
    tw_put(out, h.p, h.n);
    for (size_t i = 0; i < n; i++) tw_put(out, t[i].data, t[i].bytes);
    tw_free(&h);
}
