/* Reading a fuzzer's input as a stream of fields: each take_* consumes bytes
 * from the front and reads zeros once the input is used up, so every input
 * decodes to some call. Shared by the harnesses under tests/fuzz. */
#ifndef MEMRA_TESTS_FUZZ_INPUT_H
#define MEMRA_TESTS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;

static inline uint64_t take_u(fuzz_in *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        uint8_t b = 0;
        if (in->n > 0) {
            b = *in->p++;
            in->n--;
        }
        v |= (uint64_t)b << (8 * i);
    }
    return v;
}

static inline uint8_t take_u8(fuzz_in *in) { return (uint8_t)take_u(in, 1); }

static inline float take_f32(fuzz_in *in)
{
    uint32_t u = (uint32_t)take_u(in, 4);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A heap block of exactly n bytes (at least the struct_size member) holding
 * the struct's first min(n, s_size) bytes, zeros after: a struct declared with
 * struct_size n, so a member read past it is an overflow the sanitizer sees. */
static inline void *exact_struct(const void *s, size_t s_size, uint32_t n)
{
    const size_t alloc = n < sizeof(uint32_t) ? sizeof(uint32_t) : n;
    uint8_t *p = calloc(1, alloc);
    if (p == NULL) return NULL;
    memcpy(p, s, alloc < s_size ? alloc : s_size);
    return p;
}

/* One of `count` values picked by the next byte. */
#define TAKE_PICK(in, table) ((table)[take_u8(in) % (sizeof(table) / sizeof((table)[0]))])

#endif
