/* Kernel images compiled ahead of time and embedded in a GPU module: one per
 * (image, target), a cubin ("sm_90a") or PTX ("compute_80", NUL-terminated,
 * for the driver to compile). The table is generated at build time by
 * embed_cubins.cmake from the memra_gpu_family() calls of
 * modules/kernels/families.cmake: that list is the only place that names the
 * images. Read-only; any thread. */
#ifndef MEMRA_MODULES_GPU_IMAGES_H
#define MEMRA_MODULES_GPU_IMAGES_H

#include <stddef.h>

typedef struct memra__gpu_image {
    const char *family; /* the image's name: "convert", "mmq", "fp8blk_mx", ... */
    const char *target; /* "sm_90a", "sm_120a", "compute_80" */
    const unsigned char *bytes;
    size_t size;
} memra__gpu_image;

extern const memra__gpu_image memra__gpu_images[];
extern const size_t memra__gpu_image_count;

#endif
