/* Shared by the model-file fuzz targets: after a successful open, every
 * query and every weight is exercised, so a wrong count or pointer that the
 * parser let through is read (and caught by the sanitizers) here. */
#ifndef MEMRA_FUZZ_COMMON_H
#define MEMRA_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memra/file.h"
#include "memra/memra.h"

static memra_runtime *fuzz_rt(void)
{
    static memra_runtime *rt;
    if (rt == NULL) {
        memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
        if (memra_open(&o, &rt) != MEMRA_STATUS_OK) abort();
    }
    return rt;
}

static void fuzz_walk(memra_file *f)
{
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < memra_file_tensor_count(f); i++) {
        memra_tensor_info t;
        if (memra_file_tensor_get(f, i, &t) != MEMRA_STATUS_OK) abort();
        sink += strlen(t.name) + strlen(t.type) + strlen(t.path);
        const void *p;
        size_t n;
        if (memra_file_tensor_data(f, i, &p, &n) != MEMRA_STATUS_OK || n != t.bytes) abort();
        if (n > 0) sink += ((const uint8_t *)p)[0] + ((const uint8_t *)p)[n - 1];
        size_t j;
        if (memra_file_tensor_find(f, t.name, &j) != MEMRA_STATUS_OK) abort();
        if (t.has_format && t.n_dims == 2 && t.bytes <= (1u << 20)) {
            memra_weight *w = NULL;
            if (memra_file_weight_create(fuzz_rt(), f, t.name, &w) == MEMRA_STATUS_OK) {
                memra_weight_plan p = {.struct_size = sizeof p};
                memra_weight_plan_get(w, memra_device_host(fuzz_rt()), &p);
                memra_weight_destroy(w);
            }
        }
    }
    for (size_t i = 0; i < memra_file_meta_count(f); i++) {
        memra_meta_info m;
        if (memra_file_meta_get(f, i, &m) != MEMRA_STATUS_OK) abort();
        sink += strlen(m.key) + strlen(m.text);
    }
    (void)sink;
}

/* Open data[0 .. size) (an exact-size copy, so any read past it is caught)
 * under `name` and walk it. */
static void fuzz_one(const char *name, const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL) return;
    memcpy(copy, data, size);
    memra_file *f = NULL;
    if (memra_file_open_memory(name, copy, size, &f) == MEMRA_STATUS_OK) {
        fuzz_walk(f);
        memra_file_close(f);
    } else if (f != NULL || memra_last_error()[0] == 0) {
        abort(); /* a refusal always says why */
    }
    free(copy);
}

#endif
