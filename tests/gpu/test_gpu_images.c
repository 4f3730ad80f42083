/* gpu-build: the cubins embedded in the GPU modules target what the build
 * says (runs without a GPU). The first argument names the set of images:
 *   load-time  convert, dequant, fp8_act, fp8_weight: every target
 *   mmq        mmq: every target; fp8blk: 89, 90a, 120a, 121a; fp8blk_mx: 120a, 121a
 *   portable   convert, dequant, fp8_act, fp8_weight, mmq as plain sm_XY cubins
 *              for the targets given (80 86 89) and as compute_80 PTX (text,
 *              ".version" then ".target sm_80", entries); the other sets skip
 *              these images
 *   kernels    the loader's image reader on the mmq images (see main_kernels)
 * (modules/kernels/families.cmake), then the targets ("90a", "120a"). For
 * every image of the set that a target should have: exactly one image, a 64-bit CUDA ELF
 * (e_machine 190, EM_CUDA) whose e_flags carry the SM number (bits 8..15 in
 * the ELF ABI version 8 cubins nvcc 12.8+ writes), and whose tool note
 * (.note.nv.tkinfo) records "-arch sm_XXa": the arch-specific 'a' variant,
 * which e_flags do not distinguish. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "images.h"
#include "test.h"

/* An image and the targets it is built for (NULL: every target). */
typedef struct image_rule {
    const char *image;
    const char *const *targets;
} image_rule;

static const char *const k_fp8blk_targets[] = {"89", "90a", "120a", "121a", NULL};
static const char *const k_fp8blk_mx_targets[] = {"120a", "121a", NULL};
static const char *const k_w16_targets[] = {"90a", NULL}; /* gemm_w16's wgmma tile: the sm90 module's */
static const image_rule k_load_time[] = {{"convert", NULL}, {"dequant", NULL}, {"fp8_act", NULL}, {"fp8_weight", NULL},
                                         {"w16", k_w16_targets}};
static const image_rule k_mmq[] = {{"mmq", NULL}, {"fp8blk", k_fp8blk_targets}, {"fp8blk_mx", k_fp8blk_mx_targets}};

static int rule_has(const image_rule *r, const char *target)
{
    if (r->targets == NULL) return 1;
    for (const char *const *t = r->targets; *t != NULL; t++)
        if (strcmp(*t, target) == 0) return 1;
    return 0;
}

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

/* The portable module's images: a target "compute_XY" or a plain "sm_XY" (no
 * 'a'), checked by the `portable` set, skipped by the others. */
static int is_portable_target(const char *t)
{
    if (strncmp(t, "compute_", 8) == 0) return 1;
    size_t n = strlen(t);
    return strncmp(t, "sm_", 3) == 0 && n > 3 && t[n - 1] >= '0' && t[n - 1] <= '9';
}

/* A PTX image: NUL-terminated text whose first directives are ".version X.Y"
 * and ".target sm_80" (compute_80 PTX says sm_80), with at least one .entry. */
static int check_ptx(const memra__gpu_image *img, const char *want_target)
{
    const char *t = (const char *)img->bytes;
    if (img->size < 64 || img->bytes[img->size - 1] != '\0' || strlen(t) != img->size - 1) {
        printf("  %s/%s: not NUL-terminated text\n", img->family, img->target);
        return 0;
    }
    const char *v = strstr(t, "\n.version "), *tg = strstr(t, "\n.target ");
    int major = 0, minor = 0;
    char target[32] = "";
    if (v != NULL) sscanf(v + 10, "%d.%d", &major, &minor);
    if (tg != NULL) sscanf(tg + 9, "%31s", target);
    int entries = 0;
    for (const char *e = t; (e = strstr(e, ".entry ")) != NULL; e += 7) entries++;
    int ok = v != NULL && major >= 7 && tg != NULL && (tg > v) && strcmp(target, want_target) == 0 && entries > 0;
    printf("  %-10s %-10s %7zu bytes  PTX .version %d.%d  .target %s  %d entries: %s\n", img->family, img->target,
           img->size, major, minor, target, entries, ok ? "ok" : "BAD");
    return ok;
}

static const image_rule k_portable[] = {{"convert", NULL}, {"dequant", NULL}, {"fp8_act", NULL}, {"fp8_weight", NULL},
                                        {"mmq", NULL}};

/* portable SM...: each portable image as SASS for every plain sm_XY given,
 * and as compute_80 PTX; nothing else with a portable target. */
static int main_portable(int argc, char **argv)
{
    int fails = 0;
    size_t n = sizeof k_portable / sizeof k_portable[0];
    for (size_t f = 0; f < n; f++) {
        for (int t = 1; t <= argc; t++) {
            char target[24];
            if (t == argc) snprintf(target, sizeof target, "compute_80");
            else snprintf(target, sizeof target, "sm_%s", argv[t]);
            int found = 0;
            for (size_t i = 0; i < memra__gpu_image_count; i++) {
                const memra__gpu_image *img = &memra__gpu_images[i];
                if (strcmp(img->family, k_portable[f].image) != 0 || strcmp(img->target, target) != 0) continue;
                found++;
                if (!(t == argc ? check_ptx(img, "sm_80") : check_image(img, atoi(argv[t]), target))) fails++;
            }
            if (found != 1) {
                printf("  %s/%s: %d images (want 1)\n", k_portable[f].image, target, found);
                fails++;
            }
        }
    }
    for (size_t i = 0; i < memra__gpu_image_count; i++) {
        const memra__gpu_image *img = &memra__gpu_images[i];
        if (!is_portable_target(img->target)) continue;
        int known = 0, asked = strcmp(img->target, "compute_80") == 0;
        for (size_t f = 0; f < n; f++) known |= strcmp(img->family, k_portable[f].image) == 0;
        for (int t = 1; t < argc; t++) {
            char target[24];
            snprintf(target, sizeof target, "sm_%s", argv[t]);
            asked |= strcmp(img->target, target) == 0;
        }
        if (!known || !asked) {
            printf("  unexpected portable image %s/%s\n", img->family, img->target);
            fails++;
        }
    }
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}

/* kernels: the loader's image reader (memra__gpu_image_has_kernel) on every mmq image. Each names
 * memra_k_quant_q8_1 (1) and neither a prefix of it, a longer name nor an unknown one (0); the sm_90a cubin
 * names the wgmma tile table's memra_k_gemm_q8_0r_mt4b and the compute_80 PTX and the plain sm_XY cubins do
 * not (the misses that made compute-sanitizer count API errors under MEMRA_ARCH=cuda, run ac5). A cubin cut
 * short or with its section headers pointed past its end is not followed (-1), never read past. */
static int main_kernels(void)
{
    int fails = 0, seen = 0;
    static const char *const absent[] = {"memra_k_quant_q8_", "memra_k_quant_q8_1_", "memra_k_no_such_kernel",
                                         "memra_k"};
    for (size_t i = 0; i < memra__gpu_image_count; i++) {
        const memra__gpu_image *img = &memra__gpu_images[i];
        if (strcmp(img->family, "mmq") != 0) continue;
        seen++;
        const int ptx = strncmp(img->target, "compute_", 8) == 0, sm90a = strcmp(img->target, "sm_90a") == 0;
        int got = memra__gpu_image_has_kernel(img, "memra_k_quant_q8_1");
        int ok = got == 1;
        for (size_t k = 0; k < sizeof absent / sizeof absent[0]; k++)
            ok &= memra__gpu_image_has_kernel(img, absent[k]) == 0;
        const int wg = memra__gpu_image_has_kernel(img, "memra_k_gemm_q8_0r_mt4b");
        if (sm90a) ok &= wg == 1;
        if (ptx || is_portable_target(img->target)) ok &= wg == 0;
        if (!ptx) {
            /* the same bytes cut to 200, and with e_shoff past the end: not followed */
            unsigned char *cut = malloc(img->size);
            if (cut == NULL) return 1;
            memcpy(cut, img->bytes, img->size);
            memra__gpu_image short_img = {img->family, img->target, cut, 200};
            ok &= memra__gpu_image_has_kernel(&short_img, "memra_k_quant_q8_1") == -1;
            const uint64_t past = (uint64_t)img->size - 8;
            memcpy(cut + 0x28, &past, sizeof past); /* little-endian host: the field as the file holds it */
            memra__gpu_image bad = {img->family, img->target, cut, img->size};
            ok &= memra__gpu_image_has_kernel(&bad, "memra_k_quant_q8_1") == -1;
            free(cut);
        }
        printf("  %-6s %-10s quant_q8_1 %d, gemm_q8_0r_mt4b %d, absent names 0, damaged copies -1: %s\n", img->family,
               img->target, got, wg, ok ? "ok" : "BAD");
        fails += !ok;
    }
    if (seen == 0) printf("  no mmq image\n"), fails++;
    /* PTX as a writer may lay it out: the name on the line after ".entry", white space before '(', a parameter
     * named after the kernel; and bytes that are neither an ELF image nor under a compute_ target: not followed */
    static const char ptx[] = "//\n.version 8.0\n.target sm_80\n.visible .entry\n\tmemra_k_a (\n\t.param .u64 "
                              "memra_k_b_param_0\n)\n.weak .entry memra_k_c(\n)\n";
    const memra__gpu_image p = {"t", "compute_80", (const unsigned char *)ptx, sizeof ptx};
    const memra__gpu_image junk = {"t", "sm_90a", (const unsigned char *)ptx, sizeof ptx};
    const int pa = memra__gpu_image_has_kernel(&p, "memra_k_a"), pb = memra__gpu_image_has_kernel(&p, "memra_k_b"),
              pc = memra__gpu_image_has_kernel(&p, "memra_k_c"), pj = memra__gpu_image_has_kernel(&junk, "memra_k_a");
    printf("  written PTX: memra_k_a %d, memra_k_b (a parameter's prefix) %d, memra_k_c %d; as sm_90a bytes %d\n", pa,
           pb, pc, pj);
    fails += !(pa == 1 && pb == 0 && pc == 1 && pj == -1);
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "portable") == 0) return main_portable(argc - 1, argv + 1);
    if (argc == 2 && strcmp(argv[1], "kernels") == 0) return main_kernels();
    const image_rule *rules = NULL;
    size_t n_rules = 0;
    if (argc >= 3 && strcmp(argv[1], "load-time") == 0) rules = k_load_time, n_rules = sizeof k_load_time / sizeof k_load_time[0];
    if (argc >= 3 && strcmp(argv[1], "mmq") == 0) rules = k_mmq, n_rules = sizeof k_mmq / sizeof k_mmq[0];
    if (rules == NULL) {
        fprintf(stderr, "usage: %s load-time|mmq TARGET... (e.g. mmq 90a 120a)\n", argv[0]);
        return 2;
    }
    int fails = 0;
    printf("%zu embedded images\n", memra__gpu_image_count);
    for (size_t f = 0; f < n_rules; f++) {
        for (int t = 2; t < argc; t++) {
            if (!rule_has(&rules[f], argv[t])) continue;
            char target[24];
            snprintf(target, sizeof target, "sm_%s", argv[t]);
            int sm = atoi(argv[t]);
            int found = 0;
            for (size_t i = 0; i < memra__gpu_image_count; i++) {
                const memra__gpu_image *img = &memra__gpu_images[i];
                if (strcmp(img->family, rules[f].image) != 0 || strcmp(img->target, target) != 0) continue;
                found++;
                if (!check_image(img, sm, target)) fails++;
            }
            if (found != 1) {
                printf("  %s/%s: %d images (want 1)\n", rules[f].image, target, found);
                fails++;
            }
        }
    }
    /* no image outside the two sets, and none for a target that was not asked for */
    for (size_t i = 0; i < memra__gpu_image_count; i++) {
        const memra__gpu_image *img = &memra__gpu_images[i];
        if (is_portable_target(img->target)) continue; /* the `portable` set's */
        int known = 0, asked = 0;
        for (size_t f = 0; f < sizeof k_load_time / sizeof k_load_time[0]; f++) known |= strcmp(img->family, k_load_time[f].image) == 0;
        for (size_t f = 0; f < sizeof k_mmq / sizeof k_mmq[0]; f++) known |= strcmp(img->family, k_mmq[f].image) == 0;
        for (int t = 2; t < argc; t++) {
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
