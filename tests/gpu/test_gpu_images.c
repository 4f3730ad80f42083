/* gpu-build: the cubins embedded in the GPU modules target what the build
 * says (runs without a GPU). For every kernel family and every target given
 * on the command line ("90a", "120a"): exactly one image, a 64-bit CUDA ELF
 * (e_machine 190, EM_CUDA) whose e_flags carry the SM number (bits 8..15 in
 * the ELF ABI version 8 cubins nvcc 12.8+ writes), and whose tool note
 * (.note.nv.tkinfo) records "-arch sm_XXa": the arch-specific 'a' variant,
 * which e_flags do not distinguish. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "images.h"
#include "test.h"

/* The load-time families, built for every target (modules/kernels/families.cmake);
 * the mmq and fp8blk images of the same table are test_mmq_images' part. */
static const char *const k_families[] = {"convert", "dequant", "fp8_act", "fp8_weight"};

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Contents of the section named `want`, or NULL. */
static const unsigned char *elf_section(const memra__gpu_image *img, const char *want, size_t *len)
{
    const unsigned char *b = img->bytes;
    uint64_t shoff = rd64(b + 0x28);
    uint16_t shentsize = rd16(b + 0x3A), shnum = rd16(b + 0x3C), shstrndx = rd16(b + 0x3E);
    if (shoff == 0 || shentsize < 64 || shoff + (uint64_t)shnum * shentsize > img->size || shstrndx >= shnum) return NULL;
    const unsigned char *strsh = b + shoff + (uint64_t)shstrndx * shentsize;
    uint64_t stroff = rd64(strsh + 0x18), strsize = rd64(strsh + 0x20);
    if (stroff + strsize > img->size) return NULL;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (uint64_t)i * shentsize;
        uint32_t name = rd32(sh);
        uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (name >= strsize || off + size > img->size) continue;
        if (strcmp((const char *)b + stroff + name, want) == 0) {
            *len = (size_t)size;
            return b + off;
        }
    }
    return NULL;
}

static int check_image(const memra__gpu_image *img, int sm, const char *target)
{
    const unsigned char *b = img->bytes;
    if (img->size < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 /* ELFCLASS64 */) {
        printf("  %s/%s: not a 64-bit ELF\n", img->family, img->target);
        return 0;
    }
    uint16_t machine = rd16(b + 18);
    uint32_t flags = rd32(b + 48);
    int abiver = b[8];
    int elf_sm = abiver >= 8 ? (int)((flags >> 8) & 0xFF) : (int)(flags & 0xFF);
    size_t nlen = 0;
    const unsigned char *note = elf_section(img, ".note.nv.tkinfo", &nlen);
    char arch[32];
    snprintf(arch, sizeof arch, "-arch %s ", target);
    int note_ok = 0;
    for (size_t i = 0; note != NULL && i + strlen(arch) <= nlen; i++)
        if (memcmp(note + i, arch, strlen(arch)) == 0) note_ok = 1;
    printf("  %-10s %-8s %7zu bytes  e_machine %u  abi %d  e_flags 0x%08x -> sm_%d  tkinfo '%s': %s\n", img->family,
           img->target, img->size, machine, abiver, flags, elf_sm, arch, note_ok ? "yes" : "NO");
    return machine == 190 && elf_sm == sm && note_ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s TARGET... (e.g. 90a 120a)\n", argv[0]);
        return 2;
    }
    int fails = 0;
    printf("%zu embedded images\n", memra__gpu_image_count);
    for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++) {
        for (int t = 1; t < argc; t++) {
            char target[24];
            snprintf(target, sizeof target, "sm_%s", argv[t]);
            int sm = atoi(argv[t]);
            int found = 0;
            for (size_t i = 0; i < memra__gpu_image_count; i++) {
                const memra__gpu_image *img = &memra__gpu_images[i];
                if (strcmp(img->family, k_families[f]) != 0 || strcmp(img->target, target) != 0) continue;
                found++;
                if (!check_image(img, sm, target)) fails++;
            }
            if (found != 1) {
                printf("  %s/%s: %d images (want 1)\n", k_families[f], target, found);
                fails++;
            }
        }
    }
    /* every image of the table is checked by one of the two tests: no image
     * of another name, and none for a target that was not asked for */
    for (size_t i = 0; i < memra__gpu_image_count; i++) {
        const memra__gpu_image *img = &memra__gpu_images[i];
        static const char *const mmq_images[] = {"mmq", "fp8blk", "fp8blk_mx"};
        int known = 0, asked = 0;
        for (size_t f = 0; f < sizeof k_families / sizeof k_families[0]; f++) known |= strcmp(img->family, k_families[f]) == 0;
        for (size_t f = 0; f < sizeof mmq_images / sizeof mmq_images[0]; f++) known |= strcmp(img->family, mmq_images[f]) == 0;
        for (int t = 1; t < argc; t++) {
            char target[24];
            snprintf(target, sizeof target, "sm_%s", argv[t]);
            asked |= strcmp(img->target, target) == 0;
        }
        if (!known || !asked) {
            printf("  unexpected image %s/%s\n", img->family, img->target);
            fails++;
        }
    }
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
