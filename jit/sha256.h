/* SHA-256 (FIPS 180-4), small and self-contained: the JIT cache key and the
 * checksum of every cache entry's payload.
 *
 *   uint8_t digest[MEMRA__SHA256_BYTES];
 *   memra__sha256(data, size, digest);
 *
 * or incrementally: init, update (any number of times, any sizes), final.
 * Pure functions on caller storage; thread-safe. */
#ifndef MEMRA_JIT_SHA256_H
#define MEMRA_JIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define MEMRA__SHA256_BYTES 32

typedef struct memra__sha256_ctx {
    uint32_t state[8];
    uint64_t total;    /* bytes hashed so far */
    uint8_t block[64]; /* pending partial block */
    size_t used;       /* bytes pending in block */
} memra__sha256_ctx;

void memra__sha256_init(memra__sha256_ctx *ctx);
void memra__sha256_update(memra__sha256_ctx *ctx, const void *data, size_t size);
/* Writes the digest; ctx must be initialised again before reuse. */
void memra__sha256_final(memra__sha256_ctx *ctx, uint8_t out[MEMRA__SHA256_BYTES]);
void memra__sha256(const void *data, size_t size, uint8_t out[MEMRA__SHA256_BYTES]);

/* Lower-case hex of `n` bytes into out[2n + 1] (NUL-terminated). */
void memra__hex(const uint8_t *bytes, size_t n, char *out);

#endif
