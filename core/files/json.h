/* A strict JSON (RFC 8259) parser for safetensors headers and their index:
 * the whole text is one value with only whitespace around it; strings are
 * valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF, no
 * raw control characters) and \u escapes pair their surrogates; numbers
 * follow the grammar exactly (no leading zeros, no '+', no bare '.');
 * no object repeats a key; nesting is limited, and so is the number of
 * values (each costs ~112 bytes of tree: 2^21 values bound the tree near
 * 230 MB whatever the text; a safetensors header holds about 8 per tensor).
 * Not a streaming parser: the result is a tree owned by the caller. */
#ifndef MEMRA_CORE_JSON_H
#define MEMRA_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "memra/status.h"

#define MEMRA__JSON_MAX_NODES (1u << 21)

typedef enum memra__json_kind {
    MEMRA__JSON_NULL,
    MEMRA__JSON_BOOL,
    MEMRA__JSON_NUMBER,
    MEMRA__JSON_STRING,
    MEMRA__JSON_ARRAY,
    MEMRA__JSON_OBJECT,
} memra__json_kind;

typedef struct memra__json {
    memra__json_kind kind;
    size_t pos;                 /* byte offset of the value's first byte in the text */
    int boolean;
    double number;
    int is_int;                 /* an integer literal (no fraction, no exponent) within int64 */
    int64_t integer;
    char *str;                  /* NUL-terminated; may hold NUL bytes inside (see len) */
    size_t len;
    struct memra__json *items;  /* array elements, or object values */
    char **keys;                /* object keys (NUL-terminated), key_len[i] bytes each */
    size_t *key_len;
    size_t *key_pos;            /* byte offset of each key's opening quote */
    size_t n;                   /* elements or members */
    size_t cap;
} memra__json;

/* Parse text[0 .. len). OK: *out is a tree to free with memra__json_free.
 * Otherwise INVALID_ARGUMENT (or OUT_OF_MEMORY) with *err_pos the byte offset
 * of the problem and err[] the reason; nothing recorded in memra_last_error. */
memra_status memra__json_parse(const char *text, size_t len, int max_depth, memra__json **out, size_t *err_pos,
                               char *err, size_t err_len);
void memra__json_free(memra__json *v);
/* Member `key` of an object, NULL when absent or v is not an object. */
const memra__json *memra__json_member(const memra__json *v, const char *key);

#endif
