/* The weights room (core/weights/): weights, their per-device operands,
 * memra_matmul's lane policy, and the block formats. */
#ifndef MEMRA_CORE_WEIGHTS_H
#define MEMRA_CORE_WEIGHTS_H

#include "core/state/runtime.h"

/* weight.c: an expert weight over n_experts borrowed parts (the file readers):
 * data[e] is expert e's [out_f x in_f] bytes (expert_bytes each), scales n_experts
 * per-tensor scales or NULL, grid n_experts grids of grid_each floats (copied) or
 * NULL; release(user) is called once at destroy (also on failure: not called). */
memra_status memra__weight_create_experts_parts(memra_runtime *rt, memra_format format, int32_t n_experts,
                                                int64_t out_f, int64_t in_f, const void *const *data,
                                                size_t expert_bytes, const float *scales, const float *grid,
                                                size_t grid_each, const char *name, memra_weight_release_fn release,
                                                void *user, memra_weight **out_w);

#endif
