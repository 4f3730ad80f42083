/* Kernel images compiled ahead of time (cubins) and embedded in a GPU module.
 * The table is generated at build time by embed_cubins.cmake from the .cu
 * files of this folder, one image per (family, target). */
#ifndef MEMRA_MODULES_CUDA_IMAGES_H
#define MEMRA_MODULES_CUDA_IMAGES_H

#include <stddef.h>

typedef struct memra__gpu_image {
    const char *family; /* the .cu file's base name: "convert", "dequant", ... */
    const char *target; /* "sm_90a", "sm_120a" */
    const unsigned char *bytes;
    size_t size;
} memra__gpu_image;

extern const memra__gpu_image memra__gpu_images[];
extern const size_t memra__gpu_image_count;

/* The kernel families (one .cu each), in the order of gpu.h's module array. */
#define MEMRA__GPU_FAMILY_LIST(X) X(convert) X(dequant) X(fp8_act) X(fp8_weight)

#endif
