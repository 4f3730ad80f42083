/* The convert family's constants, shared by convert.cu (nvcc) and its C
 * launchers (convert_ops.c). Leaf header: macros only, valid C and CUDA C++. */
#ifndef MEMRA_MODULES_KERNELS_CONVERT_H
#define MEMRA_MODULES_KERNELS_CONVERT_H

/* memra_k_cvt_f32_f16: chunks of CVT_U x 256 float4 per block and round. */
#define CVT_U 4
/* Its blocks of 256 threads resident per SM (the kernel's __launch_bounds__
 * minimum), by cc = major * 10 + minor: 5 on cc 8.6, 8.7, 8.9 and 12.0 and up
 * (48 registers), 8 elsewhere (32 registers). */
#define CVT_MIN_BLOCKS_OF(cc) (((cc) == 86 || (cc) == 87 || (cc) == 89 || (cc) >= 120) ? 5 : 8)

#endif
