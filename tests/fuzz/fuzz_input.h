/* Reading a fuzzer's input as a stream of fields: each take_* consumes bytes
 * from the front and reads zeros once the input is used up, so every input
 * decodes to some call. Shared by the harnesses under tests/fuzz. */
#ifndef MEMRA_TESTS_FUZZ_INPUT_H
#define MEMRA_TESTS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
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

/* One of `count` values picked by the next byte. */
#define TAKE_PICK(in, table) ((table)[take_u8(in) % (sizeof(table) / sizeof((table)[0]))])

#endif
