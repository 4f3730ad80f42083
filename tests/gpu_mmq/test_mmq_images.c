/* gpu-build: the cubins embedded in the mmq / fp8blk / sm120 modules are what
 * modules/kernels/families.cmake says (no GPU needed). For every target on the command line
 * ("90a", "120a"): the mmq family; fp8blk for 90a and 120a; fp8blk_mx for 120a.
 * Each is a 64-bit CUDA ELF (e_machine 190) whose e_flags name the SM (bits
 * 8..15 in the ABI version 8 cubins of nvcc 12.8+, bits 0..7 before) and
 * whose tool note records "-arch sm_XXa" (the 'a' variant, which e_flags do
 * not distinguish). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "images.h"


static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* 1 when `needle` occurs anywhere in the image (the tool note is plain text). */
static int contains(const memra__gpu_image *img, const char *needle)
{
    const size_t n = strlen(needle);
    for (size_t i = 0; i + n <= img->size; i++)
        if (memcmp(img->bytes + i, needle, n) == 0) return 1;
    return 0;
}

static int check(const char *family, const char *target)
{
    char tname[16];
    snprintf(tname, sizeof tname, "sm_%s", target);
    const memra__gpu_image *img = NULL;
    int count = 0;
    for (size_t i = 0; i < memra__gpu_image_count; i++)
        if (strcmp(memra__gpu_images[i].family, family) == 0 && strcmp(memra__gpu_images[i].target, tname) == 0) {
            img = &memra__gpu_images[i];
            count++;
        }
    if (count != 1) {
        printf("  %-10s %-8s: %d images (want 1)  FAIL\n", family, tname, count);
        return 0;
    }
    const unsigned char *b = img->bytes;
    if (img->size < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2) {
        printf("  %-10s %-8s: not a 64-bit ELF  FAIL\n", family, tname);
        return 0;
    }
    const uint16_t machine = rd16(b + 18);
    const uint32_t flags = rd32(b + 48);
    const int abiver = b[8];
    const int elf_sm = abiver >= 8 ? (int)((flags >> 8) & 0xFF) : (int)(flags & 0xFF);
    const int want_sm = atoi(target);
    char arch[32];
    snprintf(arch, sizeof arch, "-arch %s ", tname);
    const int note = contains(img, arch);
    const int ok = machine == 190 && elf_sm == want_sm && note;
    printf("  %-10s %-8s %7zu bytes  e_machine %u  e_flags 0x%08x -> sm_%d  '%s' %s  %s\n", family, tname, img->size,
           machine, flags, elf_sm, arch, note ? "found" : "MISSING", ok ? "ok" : "FAIL");
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s TARGET... (e.g. 90a 120a)\n", argv[0]);
        return 2;
    }
    int ok = 1;
    printf("%zu embedded images (the mmq and fp8blk ones checked here)\n", memra__gpu_image_count);
    for (int a = 1; a < argc; a++) {
        const char *t = argv[a];
        ok &= check("mmq", t);
        if (strcmp(t, "90a") == 0 || strcmp(t, "120a") == 0 || strcmp(t, "121a") == 0) ok &= check("fp8blk", t);
        if (strcmp(t, "120a") == 0 || strcmp(t, "121a") == 0) ok &= check("fp8blk_mx", t);
    }
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
