/* The convert family's launch shape, shared with the blas lanes (which
 * convert f32 activations to f16 in-stream with the same kernel). */
#ifndef MEMRA_MODULES_KERNELS_CONVERT_OPS_H
#define MEMRA_MODULES_KERNELS_CONVERT_OPS_H

#include "kernels/kernels.h"

/* Blocks for memra_k_cvt_f32_f16 over n values (any grid is correct). */
unsigned memra__convert_grid(const memra__gpu *gpu, int64_t n);

#endif
