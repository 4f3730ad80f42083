/* The dequant family's constants, shared by dequant.cu (nvcc, and the host
 * build of its decoders) and its C launchers (dequant_ops.c): per format, BB
 * bytes and QK values per block, TB blocks per tile of the persistent fast
 * path (TB * BB % 16 == 0 and TB * QK / 8 == 4 * 256: four 16-byte output
 * octets per thread). Leaf header: macros only, valid C and CUDA C++. */
#ifndef MEMRA_MODULES_KERNELS_DEQUANT_H
#define MEMRA_MODULES_KERNELS_DEQUANT_H

#define DQ_Q8_0_BB 34
#define DQ_Q8_0_QK 32
#define DQ_Q8_0_TB 256
#define DQ_Q4_0_BB 18
#define DQ_Q4_0_QK 32
#define DQ_Q4_0_TB 256
#define DQ_Q4_K_BB 144
#define DQ_Q4_K_QK 256
#define DQ_Q4_K_TB 32
#define DQ_Q5_K_BB 176
#define DQ_Q5_K_QK 256
#define DQ_Q5_K_TB 32
#define DQ_Q6_K_BB 210
#define DQ_Q6_K_QK 256
#define DQ_Q6_K_TB 32

#endif
