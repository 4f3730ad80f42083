/* Helpers shared by `memra check` and `memra bench`: a seeded generator,
 * random operands that are never zero, argument parsing, JSON strings. */
#ifndef MEMRA_TOOLS_TOOL_UTIL_H
#define MEMRA_TOOLS_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memra/memra.h"

/* xorshift64*: fast, seedable, good enough for test data. */
typedef struct tool_rng {
    uint64_t s;
} tool_rng;

void tool_rng_seed(tool_rng *r, uint64_t seed);
uint64_t tool_rng_u64(tool_rng *r);
/* Uniform in [0, 1). */
double tool_rng_unit(tool_rng *r);
/* Magnitude uniform in [lo, hi) with a random sign: never zero when lo > 0. */
float tool_rng_signed(tool_rng *r, float lo, float hi);
/* A seed from the clock, never 0. */
uint64_t tool_clock_seed(void);

/* Operand generators (all values non-zero). */
void tool_fill_x(tool_rng *r, float *x, size_t n);               /* +-[0.25, 4) */
void tool_fill_f16_w(tool_rng *r, uint16_t *w, size_t n);         /* f16 of +-[0.01, 0.5) */
void tool_fill_e4m3_w(tool_rng *r, uint8_t *w, size_t n);         /* +-[0.25, 7.5], no NaN code */
void tool_fill_grid(tool_rng *r, float *g, size_t n);             /* [1/256, 1/4), positive */
/* Q8_0 rows of `cols` values (a multiple of 32) from values +-[0.01, 0.5). */
void tool_fill_q8_0_w(tool_rng *r, uint8_t *w, int64_t rows, int64_t cols);
/* rows x cols of Q4_0, Q4_K, Q5_K or Q6_K blocks: every byte random except
 * the f16 scales (d in [1/128, 3/128), dmin in [1/256, 3/256): finite,
 * non-zero), so codes, sub-block scales and mins cover their whole range.
 * w holds memra_format_row_bytes(format, cols) * rows bytes. */
void tool_fill_blocks_w(tool_rng *r, memra_format format, uint8_t *w, int64_t rows, int64_t cols);

/* Strict integer parse; returns 0 on success. */
int tool_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int tool_parse_u64(const char *s, uint64_t *out);

/* A JSON string literal with escapes. */
void tool_json_str(FILE *f, const char *s);
/* A receipt's "settings" member: `,"settings":{...}`, every knob of rt set away from its default
 * (name: {"value", "source"}), so that a receipt says which arm of an A/B it timed; {} when none. */
void tool_json_settings(FILE *f, const memra_runtime *rt);
/* s made safe for a terminal into buf: control characters (C0, DEL, C1) and
 * bytes that are not valid UTF-8 written as \xNN; returns buf. */
const char *tool_term_str(const char *s, char *buf, size_t len);
/* The current UTC time as "YYYY-MM-DDTHH:MM:SSZ" into buf (at least 21 bytes). */
void tool_utc_timestamp(char *buf, size_t len);
/* This machine's host name into buf (receipts' "host"), "unknown" where it has none. */
void tool_host_name(char *buf, size_t len);
/* Median of n doubles (sorts a copy); 0 when n == 0. */
double tool_median(const double *v, size_t n);
/* malloc that prints and returns NULL on failure; n * size checked. */
void *tool_alloc(size_t n, size_t size);

/* Buffer helpers: create on dev and upload `bytes` (bytes > 0). */
memra_status tool_upload(memra_device *dev, const void *src, size_t bytes, memra_buffer **out);

#endif
