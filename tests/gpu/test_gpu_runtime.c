/* gpu-build: the GPU modules on the GPU runtime, against a fake driver (no GPU
 * needed). Each built module is dlopen'd and initialised on a fake device
 * description with host services whose driver entry points are stubs: images
 * "load" (counted), every cuModuleGetFunction returns a handle that remembers
 * the kernel's name, every launch records the name of the kernel it was given.
 * Then a few ops are called through the module's op table, and the test checks
 * which kernels they launched, with or without a dependent launch, and which
 * cases they decline. fini must unload every image init loaded.
 *
 *   test_gpu_runtime <case> <sm90.so> <sm120.so> <mmq.so> <fp8blk.so> <w16.so>
 *   sm90            init on cc 9.0; cvt_f16, dequant_f16, fp8_nan_count launch their kernels; gemm_f16 declines (no cuBLASLt)
 *   w16             init on cc 9.0: MEMRA_W16 unset (0), no image and gemm_w16 declines; MEMRA_W16=auto, one image,
 *                   gemm_w16's plans (pass, tile, split-k sum; grids on 132 SMs), declines and refusals; score 0
 *                   on cc 12.0
 *   sm120           init on cc 12.0; quant_q8_1 and gemm_q8_0r launch as dependents; gemm_fp8_blk runs mxf8f6f4 kernels
 *   sm120_on_sm90   a forced sm120 profile on cc 9.0: gemm_fp8_blk declines with the sm120 reason
 *   mmq             gemm_q8_0 launches memra_k_gemm_q8_0, accprobe the probe, the tile plan avoids 128 x 128 at 99 KB;
 *                   gemm_experts the routing kernel then the grouped tile (q8_0r, kr per K-quant; its token
 *                   height from m / E, 128 rows not on sm_120, MEMRA_MMQ_XE_BM forcing it) as a
 *                   dependent on the worst-case grid
 *   fp8blk          gemm_fp8_blk launches the quantiser then the GEMM from the embedded cubin (no JIT service):
 *                   the wgmma kernel on cc 9.0, the mma.sync one with MEMRA_FP8BLK_WGMMA=0; with a static
 *                   x_scale or a producer x_amax the one-pass memra_k_fp8blk_quant_given instead (also on
 *                   sm120), bad ones refused before any launch; fp8_nan_count from its own fp8_weight image;
 *                   sm90 resolves fp8_act's one-pass kernels */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kernels/mmq/mmq.h" /* the warpgroup tile's shared memory (R3W_SMEM_BYTES_OF) */
#include "memra/module.h"
#include "test.h"

/* MEMRA_MMQ_WG_SEED unset: the seeded tiles' names and picks under mmq.h's default (1 or pin) */
#if MMQ_WG_SEED_PIN_DEFAULT
#define PIN_SFX "f" /* _wgsf, _wgskf, _wgw2f */
#define WGS_CODE 9  /* wgc's code of _wgsf */
#else
#define PIN_SFX ""
#define WGS_CODE 4
#endif

/* ---- the fake driver ---------------------------------------------------------------- */

typedef int CUresult;
static int g_loaded, g_unloaded, g_pushed, g_popped;
static const char *g_launched[16];
static int g_n_launched, g_pdl[16];
static char g_last_error[512];
static void *g_current;

static int fake_error_name(CUresult r, const char **s)
{
    (void)r;
    *s = "CUDA_ERROR_FAKE";
    return 0;
}
static int fake_push(void *c)
{
    g_pushed++;
    g_current = c;
    return 0;
}
static int fake_get(void **c)
{
    *c = g_current;
    return 0;
}
static int fake_pop(void **c)
{
    g_popped++;
    *c = g_current;
    g_current = NULL;
    return 0;
}
static int fake_load(void **m, const void *image)
{
    if (image == NULL) return 1;
    *m = (void *)(uintptr_t)(0x1000 + ++g_loaded);
    return 0;
}
static int fake_unload(void *m)
{
    (void)m;
    g_unloaded++;
    return 0;
}
/* The handle of a kernel is its name, kept in a static pool. */
static char g_names[1024][48]; /* every name init looked up (each once), over every module opened: the handles point here */
static int g_n_names;
/* each handle's dynamic shared memory limit (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES, the driver's 48 KB
 * until raised): a launch asking more fails, as the driver's does */
static unsigned g_attr_smem[1024];
static int smem_refused(const void *f, unsigned smem)
{
    const ptrdiff_t i = ((const char *)f - &g_names[0][0]) / (ptrdiff_t)sizeof g_names[0];
    return smem > 48 * 1024 && i >= 0 && i < g_n_names && smem > g_attr_smem[i];
}

static const char *g_missing_kernel; /* a name containing it is not in the image (CUDA_ERROR_NOT_FOUND) */
static int fake_get_function(void **f, void *m, const char *name)
{
    (void)m;
    if (g_missing_kernel != NULL && strstr(name, g_missing_kernel) != NULL) return 500;
    for (int i = 0; i < g_n_names; i++) /* one handle a name: the pool holds each name once */
        if (strcmp(g_names[i], name) == 0) {
            *f = g_names[i];
            return 0;
        }
    if (g_n_names >= 1024 || strlen(name) >= sizeof g_names[0]) return 2;
    strcpy(g_names[g_n_names], name);
    *f = g_names[g_n_names++];
    return 0;
}
static unsigned g_last_gx, g_last_gy, g_last_gz, g_last_bx, g_last_smem; /* the last launch's grid, block, smem */
static unsigned g_grid_y[16], g_grid_z[16];                  /* each launch's grid.y and grid.z */
static unsigned g_grid_x[16], g_block_x[16], g_smem[16];     /* and its grid.x, block and dynamic smem */
static void record(void *f, int pdl)
{
    if (g_n_launched < 16) {
        g_pdl[g_n_launched] = pdl;
        g_grid_y[g_n_launched] = g_last_gy;
        g_grid_z[g_n_launched] = g_last_gz;
        g_grid_x[g_n_launched] = g_last_gx;
        g_block_x[g_n_launched] = g_last_bx;
        g_smem[g_n_launched] = g_last_smem;
        g_launched[g_n_launched++] = (const char *)f;
    }
}
/* the fp8blk persistent grouped tiles' last argument (rg, the walk's raster group), -1 before one launches */
static int g_fxe_rg = -1;
static void note_fxe_rg(const void *f, void **params)
{
    if (strstr((const char *)f, "fp8blk_experts_tma_") != NULL &&
        (strstr((const char *)f, "gsp") != NULL || strstr((const char *)f, "n128gp") != NULL))
        g_fxe_rg = *(const int *)params[15];
}
static int fake_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, void *s, void **params, void **extra)
{
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s, (void)extra;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0) return 3;
    note_fxe_rg(f, params);
    if (smem_refused(f, smem)) return 1;
    g_last_gx = gx, g_last_gy = gy, g_last_gz = gz, g_last_bx = bx, g_last_smem = smem;
    record(f, 0);
    return 0;
}
static int fake_launch_coop(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, void *s, void **params)
{
    return fake_launch(f, gx, gy, gz, bx, by, bz, smem, s, params, NULL);
}
typedef struct fake_launch_config {
    unsigned grid[3], block[3], smem;
    void *stream;
    void *attrs;
    unsigned num_attrs;
} fake_launch_config;
static int fake_launch_ex(const fake_launch_config *c, void *f, void **params, void **extra)
{
    (void)extra;
    if (c->grid[0] == 0 || c->num_attrs != 1) return 3;
    note_fxe_rg(f, params);
    if (smem_refused(f, c->smem)) return 1;
    g_last_gx = c->grid[0], g_last_gy = c->grid[1], g_last_gz = c->grid[2], g_last_bx = c->block[0];
    g_last_smem = c->smem;
    record(f, 1);
    return 0;
}
static int fake_occupancy(int *n, void *f, int bs, size_t smem)
{
    (void)f, (void)bs, (void)smem;
    *n = 4;
    return 0;
}
static int fake_capturing(void *s, int *st)
{
    (void)s;
    *st = 0;
    return 0;
}
static int fake_memset_d32(unsigned long long dst, unsigned v, size_t n, void *s)
{
    (void)v, (void)s;
    return dst != 0 && n > 0 ? 0 : 1;
}
static int fake_set_attribute(void *f, int a, int v)
{
    const ptrdiff_t i = ((const char *)f - &g_names[0][0]) / (ptrdiff_t)sizeof g_names[0];
    if (v <= 0) return 1;
    if (a == 8 && i >= 0 && i < g_n_names) g_attr_smem[i] = (unsigned)v; /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    return 0;
}

/* cuTensorMapEncodeTiled: refuses what the driver refuses for these maps (rank 2 or 3, 128-byte swizzle with a
 * 128-byte inner box or no swizzle with an inner box of a multiple of 16 bytes, strides a multiple of 16 and the
 * first at least a row, a 16-byte aligned base); g_no_tmap: the entry point is absent */
static int g_no_tmap, g_tmap_calls;
static unsigned g_tmap_box[4]; /* the box rows of the first four maps encoded since g_tmap_calls was reset */
static unsigned g_tmap_box0[4], g_tmap_rank[4]; /* and their inner box sizes (bytes) and ranks */
static int g_tmap_swz[4];                       /* and their swizzles */
static int fake_tmap_encode(void *map, int type, unsigned rank, void *global, const unsigned long long *dims,
                            const unsigned long long *strides, const unsigned *box, const unsigned *es, int il,
                            int swz, int l2, int oob)
{
    (void)l2, (void)oob, (void)es;
    if (g_tmap_calls < 4) {
        g_tmap_box[g_tmap_calls] = box[1];
        g_tmap_box0[g_tmap_calls] = box[0], g_tmap_rank[g_tmap_calls] = rank, g_tmap_swz[g_tmap_calls] = swz;
    }
    g_tmap_calls++;
    if (map == NULL || ((uintptr_t)map & 63u) != 0 || type != 0 || (rank != 2 && rank != 3) || il != 0 ||
        (swz != 3 && swz != 0))
        return 1;
    if (((uintptr_t)global & 15u) != 0 || (swz == 3 ? box[0] != 128 : box[0] % 16 != 0 || box[0] > 256) ||
        box[1] > 256 || dims[0] == 0 || strides[0] < dims[0])
        return 1;
    for (unsigned d = 0; d + 1 < rank; d++)
        if (strides[d] % 16 != 0) return 1;
    if (rank == 3 && (box[2] == 0 || box[2] > 256)) return 1;
    memset(map, 0, 128);
    return 0;
}

static void *fake_driver_proc(const char *name)
{
    if (strcmp(name, "cuTensorMapEncodeTiled") == 0 && !g_no_tmap) {
        void *p;
        int (*fn)(void *, int, unsigned, void *, const unsigned long long *, const unsigned long long *,
                  const unsigned *, const unsigned *, int, int, int, int) = fake_tmap_encode;
        memcpy(&p, &fn, sizeof p);
        return p;
    }
    static const struct {
        const char *name;
        void (*fn)(void);
    } k[] = {
        {"cuGetErrorName", (void (*)(void))fake_error_name},
        {"cuCtxPushCurrent", (void (*)(void))fake_push},
        {"cuCtxGetCurrent", (void (*)(void))fake_get},
        {"cuCtxPopCurrent", (void (*)(void))fake_pop},
        {"cuModuleLoadData", (void (*)(void))fake_load},
        {"cuModuleUnload", (void (*)(void))fake_unload},
        {"cuModuleGetFunction", (void (*)(void))fake_get_function},
        {"cuLaunchKernel", (void (*)(void))fake_launch},
        {"cuLaunchCooperativeKernel", (void (*)(void))fake_launch_coop},
        {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void (*)(void))fake_occupancy},
        {"cuMemsetD32Async", (void (*)(void))fake_memset_d32},
        {"cuStreamIsCapturing", (void (*)(void))fake_capturing},
        {"cuFuncSetAttribute", (void (*)(void))fake_set_attribute},
        {"cuLaunchKernelEx", (void (*)(void))fake_launch_ex},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(k[i].name, name) == 0) {
            void *p;
            memcpy(&p, &k[i].fn, sizeof p); /* the driver's ABI: entry points as object pointers */
            return p;
        }
    return NULL;
}

/* ---- the fake host -------------------------------------------------------------------- */

static int g_n_warn; /* the modules' messages at MEMRA_LOG_WARN or above, counted */
static void fake_log(int level, const char *module, const char *fmt, ...)
{
    if (level <= MEMRA_LOG_WARN) g_n_warn++;
    if (getenv("TEST_VERBOSE") == NULL) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%d %s] ", level, module);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
static memra_status fake_set_error(memra_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    return st;
}
/* Named scratch: a distinct fake address per name (never dereferenced); the slot named
 * g_scratch_refuse (NULL: none) is refused as a capture without a reservation refuses it. */
static const char *g_scratch_refuse;
static size_t g_scratch_bytes; /* the bytes of every scratch request since it was last zeroed */
static int g_scratch_asks;     /* and their count */
static memra_status fake_scratch_get(memra_call *call, const char *name, size_t bytes, memra_dptr *out)
{
    (void)call;
    g_scratch_bytes += bytes, g_scratch_asks++;
    if (g_scratch_refuse != NULL && strcmp(name, g_scratch_refuse) == 0) {
        *out = 0;
        return MEMRA_STATUS_NOT_SUPPORTED;
    }
    memra_dptr h = 1;
    for (const char *p = name; *p; p++) h = h * 31u + (unsigned char)*p;
    *out = (memra_dptr)0x10000000u * (1 + h % 4096u);
    return MEMRA_STATUS_OK;
}
static const char *g_wgmma_knob; /* MEMRA_FP8BLK_WGMMA as the module sees it (NULL: unset) */
static const char *g_xe_bm_knob; /* MEMRA_MMQ_XE_BM likewise (read at init) */
static const char *g_xe_split_knob; /* MEMRA_MMQ_XE_SPLIT likewise */
static const char *g_xe_wide_knob;  /* MEMRA_FP8BLK_XE_WIDE likewise */
static const char *g_xe_one_knob;   /* MEMRA_FP8BLK_XE_ONE likewise */
static const char *g_xe_pt_knob;    /* MEMRA_FP8BLK_XE_PT likewise */
static const char *g_xe_f16_knob;   /* MEMRA_MMQ_XE_F16 likewise */
static const char *g_xe_merge_knob; /* MEMRA_MMQ_XE_MERGE likewise */
static const char *g_xe_ovl_knob;   /* MEMRA_MMQ_XE_OVERLAP likewise */
static const char *g_xe_pf_knob;    /* MEMRA_MMQ_XE_PF likewise */
static const char *g_xe_qs_knob;    /* MEMRA_MMQ_XE_QS likewise */
static const char *g_xe_rem_knob;   /* MEMRA_MMQ_XE_WG_REM likewise */
static const char *g_wg_tail_knob;  /* MEMRA_MMQ_WG_TAIL likewise */
static const char *g_xe_sort_knob;  /* MEMRA_MMQ_XE_SORT likewise */
static const char *g_xe_h16_knob;   /* MEMRA_MMQ_XE_H16 likewise */
static const char *g_xe_tma_knob;   /* MEMRA_FP8BLK_XE_TMA likewise */
static const char *g_xe_n128_knob;  /* MEMRA_FP8BLK_XE_N128 likewise */
static const char *g_fxe_pipe_knob; /* MEMRA_FP8BLK_XE_PIPE likewise */
static const char *g_r3_unroll_knob; /* MEMRA_MMQ_R3_UNROLL likewise */
static const char *g_mmq_bulk_knob;  /* MEMRA_MMQ_BULK likewise */
static const char *g_xe_tma64_knob; /* MEMRA_FP8BLK_XE_TMA64 likewise */
static const char *g_kr_tc_knob;    /* MEMRA_MMQ_KR_TC likewise */
static const char *g_mmq_one_knob;  /* MEMRA_MMQ_ONE likewise */
static const char *g_kr_sums_knob;  /* MEMRA_MMQ_KR_SUMS likewise */
static const char *g_kr_bulk_knob;  /* MEMRA_MMQ_KR_BULK likewise */
static const char *g_kr6_bulk_knob; /* MEMRA_MMQ_KR6_BULK likewise */
static const char *g_mmq_wg_knob = "0"; /* MEMRA_MMQ_WG likewise; "0" outside the warpgroup cases (the others check
                                          * the records tiles' plans; unset is auto, the warpgroup tile at m >= 1024) */
static const char *g_mmq_wg_tr_knob; /* MEMRA_MMQ_WG_TR likewise */
static const char *g_mmq_wg_per_knob; /* MEMRA_MMQ_WG_PERSIST likewise */
static const char *g_mmq_pdl_knob;    /* MEMRA_MMQ_PDL likewise */
static const char *g_mmq_sk_knob;     /* MEMRA_MMQ_WG_SK likewise */
static const char *g_mmq_lean_knob;   /* MEMRA_MMQ_QUANT_LEAN likewise */
static const char *g_mmq_wg_sd_knob;  /* MEMRA_MMQ_WG_SEED likewise */
static const char *g_mmq_bm_knob;     /* MEMRA_MMQ_BM likewise */
static const char *g_kr_wg_knob = "0"; /* MEMRA_MMQ_KR_WG likewise (the records tiles' cases: 0) */
static const char *g_xe_loop2_knob; /* MEMRA_MMQ_XE_LOOP2 likewise */
static const char *g_xe_tall_knob;  /* MEMRA_MMQ_XE_TALL likewise */
static const char *g_xe_wg_knob;    /* MEMRA_MMQ_XE_WG likewise */
/* MEMRA_MMQ_XE_RASTER likewise, "0" outside its own checks (the other grouped checks count on the plain grid's
 * shape; the raster's checks set NULL for the default) */
static const char *g_xe_raster_knob = "0";
static const char *g_fxe_split_knob; /* MEMRA_FP8BLK_XE_SPLIT likewise */
static const char *g_fxe_pf_knob;    /* MEMRA_FP8BLK_XE_PF likewise */
static const char *g_fxe_gs_knob;    /* MEMRA_FP8BLK_XE_GS likewise */
static const char *g_fxe_persist_knob; /* MEMRA_FP8BLK_XE_PERSIST likewise */
static const char *g_fxe_l2_knob;      /* MEMRA_FP8BLK_XE_L2 likewise */
static const char *g_fxe_raster_knob;  /* MEMRA_FP8BLK_XE_RASTER likewise */
static const char *g_fxe_ctas_knob;    /* MEMRA_FP8BLK_XE_CTAS likewise */
static const char *g_fxe_tall_knob;    /* MEMRA_FP8BLK_XE_TALL likewise */
static const char *g_fxe_half_knob;    /* MEMRA_FP8BLK_XE_HALF likewise */
static const char *g_fxe_qu_knob;      /* MEMRA_FP8BLK_XE_QU likewise */
static const char *g_w16_knob; /* MEMRA_W16 likewise */
static const char *g_w16_raster_knob; /* MEMRA_W16_XE_RASTER likewise */
static const char *g_w16_fit_knob;    /* MEMRA_W16_XE_FIT likewise */
static const char *g_w16_split_knob;  /* MEMRA_W16_SPLIT likewise */
static const char *g_w16_tile_knob;   /* MEMRA_W16_TILE likewise */
static const char *fake_knob(const memra_device_caps *caps, const char *name)
{
    (void)caps;
    if (strcmp(name, "MEMRA_W16") == 0) return g_w16_knob;
    if (strcmp(name, "MEMRA_W16_XE_RASTER") == 0) return g_w16_raster_knob;
    if (strcmp(name, "MEMRA_W16_XE_FIT") == 0) return g_w16_fit_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_HALF") == 0) return g_fxe_half_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_QU") == 0) return g_fxe_qu_knob;
    if (strcmp(name, "MEMRA_W16_SPLIT") == 0) return g_w16_split_knob;
    if (strcmp(name, "MEMRA_W16_TILE") == 0) return g_w16_tile_knob;
    if (strcmp(name, "MEMRA_FP8BLK_WGMMA") == 0) return g_wgmma_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_BM") == 0) return g_xe_bm_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_SPLIT") == 0) return g_xe_split_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_WIDE") == 0) return g_xe_wide_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_ONE") == 0) return g_xe_one_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_PT") == 0) return g_xe_pt_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_F16") == 0) return g_xe_f16_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_MERGE") == 0) return g_xe_merge_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_OVERLAP") == 0) return g_xe_ovl_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_PF") == 0) return g_xe_pf_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_QS") == 0) return g_xe_qs_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_WG_REM") == 0) return g_xe_rem_knob;
    if (strcmp(name, "MEMRA_MMQ_WG_TAIL") == 0) return g_wg_tail_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_SORT") == 0) return g_xe_sort_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_H16") == 0) return g_xe_h16_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_TMA") == 0) return g_xe_tma_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_N128") == 0) return g_xe_n128_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_PIPE") == 0) return g_fxe_pipe_knob;
    if (strcmp(name, "MEMRA_MMQ_R3_UNROLL") == 0) return g_r3_unroll_knob;
    if (strcmp(name, "MEMRA_MMQ_BULK") == 0) return g_mmq_bulk_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_TMA64") == 0) return g_xe_tma64_knob;
    if (strcmp(name, "MEMRA_MMQ_KR_TC") == 0) return g_kr_tc_knob;
    if (strcmp(name, "MEMRA_MMQ_ONE") == 0) return g_mmq_one_knob;
    if (strcmp(name, "MEMRA_MMQ_KR_SUMS") == 0) return g_kr_sums_knob;
    if (strcmp(name, "MEMRA_MMQ_KR_BULK") == 0) return g_kr_bulk_knob;
    if (strcmp(name, "MEMRA_MMQ_KR6_BULK") == 0) return g_kr6_bulk_knob;
    if (strcmp(name, "MEMRA_MMQ_WG") == 0) return g_mmq_wg_knob;
    if (strcmp(name, "MEMRA_MMQ_WG_TR") == 0) return g_mmq_wg_tr_knob;
    if (strcmp(name, "MEMRA_MMQ_WG_PERSIST") == 0) return g_mmq_wg_per_knob;
    if (strcmp(name, "MEMRA_MMQ_PDL") == 0) return g_mmq_pdl_knob;
    if (strcmp(name, "MEMRA_MMQ_WG_SK") == 0) return g_mmq_sk_knob;
    if (strcmp(name, "MEMRA_MMQ_QUANT_LEAN") == 0) return g_mmq_lean_knob;
    if (strcmp(name, "MEMRA_MMQ_WG_SEED") == 0) return g_mmq_wg_sd_knob;
    if (strcmp(name, "MEMRA_MMQ_BM") == 0) return g_mmq_bm_knob;
    if (strcmp(name, "MEMRA_MMQ_KR_WG") == 0) return g_kr_wg_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_LOOP2") == 0) return g_xe_loop2_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_TALL") == 0) return g_xe_tall_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_WG") == 0) return g_xe_wg_knob;
    if (strcmp(name, "MEMRA_MMQ_XE_RASTER") == 0) return g_xe_raster_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_SPLIT") == 0) return g_fxe_split_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_PF") == 0) return g_fxe_pf_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_GS") == 0) return g_fxe_gs_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_PERSIST") == 0) return g_fxe_persist_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_L2") == 0) return g_fxe_l2_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_RASTER") == 0) return g_fxe_raster_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_CTAS") == 0) return g_fxe_ctas_knob;
    if (strcmp(name, "MEMRA_FP8BLK_XE_TALL") == 0) return g_fxe_tall_knob;
    return NULL; /* every other knob at its default */
}
static void *fake_library_open(const char *which)
{
    (void)which;
    return NULL; /* no cuBLASLt, no NVRTC */
}

static const memra_host_services k_host = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_host_services),
    .log = fake_log,
    .set_error = fake_set_error,
    .driver_proc = fake_driver_proc,
    .jit = NULL,
    .library_open = fake_library_open,
    .scratch_get = fake_scratch_get,
    .knob = fake_knob,
};

static memra_device_caps fake_caps(int cc)
{
    memra_device_caps c = {
        .struct_size = sizeof(memra_device_caps),
        .arch = cc == 90 ? MEMRA_ARCH_SM90 : MEMRA_ARCH_SM120,
        .profile = cc == 90 ? "sm90" : "sm120",
        .name = cc == 90 ? "fake H200" : "fake RTX 5090",
        .ordinal = 0,
        .cc = cc,
        .sm_count = cc == 90 ? 132 : 170,
        .total_mem = 1ull << 34,
        .driver_version = 13000,
        .jit_target = cc == 90 ? "sm_90a" : "sm_120a",
        .smem_per_block_optin = cc == 90 ? 232448 : 101376,
        .cu_context = (void *)(uintptr_t)0xC0,
        .cu_device = 0,
    };
    return c;
}

/* ---- helpers ---------------------------------------------------------------------------- */

typedef struct mod {
    const memra_module_desc *desc;
    void *ctx;
    memra_device_caps caps;
} mod;

static int open_mod(const char *path, int cc, mod *out)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        printf("dlopen %s: %s\n", path, dlerror());
        return 0;
    }
    memra_module_entry_fn entry;
    *(void **)&entry = dlsym(dl, "memra_module_entry");
    if (entry == NULL) return 0;
    out->desc = entry();
    out->caps = fake_caps(cc);
    g_loaded = g_unloaded = 0;
    memset(g_attr_smem, 0, sizeof g_attr_smem); /* this module's load sets the limits of the kernels it launches */
    memra_status st = out->desc->init(&k_host, &out->caps, &out->ctx);
    printf("%s init on cc %d: %s%s%s; %d images loaded\n", out->desc->name, cc, st == MEMRA_STATUS_OK ? "OK" : "failed",
           st == MEMRA_STATUS_OK ? "" : ": ", st == MEMRA_STATUS_OK ? "" : g_last_error, g_loaded);
    return st == MEMRA_STATUS_OK;
}

static int close_mod(mod *m, int want_images)
{
    const int loaded = g_loaded;
    m->desc->fini(m->ctx);
    printf("%s fini: %d of %d images unloaded (want %d loaded); pushes %d, pops %d\n", m->desc->name, g_unloaded,
           loaded, want_images, g_pushed, g_popped);
    return g_unloaded == loaded && loaded == want_images && g_pushed == g_popped;
}

static memra_call call_of(mod *m)
{
    memra_call c = {.struct_size = sizeof(memra_call), .module_ctx = m->ctx, .caps = &m->caps, .stream = NULL,
                    .variant = -1}; /* the module's own choice, as the core sets it without a tuned variant */
    return c;
}

static memra_gemm_args gemm(int m, int n, int k)
{
    memra_gemm_args a = {.struct_size = sizeof(memra_gemm_args), .m = m, .n = n, .k = k,
                         .w = 0x20000000, .x = 0x30000000, .y = 0x40000000, .ldy = n, .alpha = 1.0f,
                         .w_scale = 1.0f, .w_scale_grid = 0x50000000};
    return a;
}

/* Some launch since the last reset is named prefix...suffix. */
static int launch_ending(const char *prefix, const char *suffix)
{
    int found = 0;
    for (int i = 0; i < g_n_launched; i++) {
        const size_t gl = strlen(g_launched[i]), wl = strlen(suffix);
        found |= gl >= wl && strcmp(g_launched[i] + gl - wl, suffix) == 0 &&
                 strncmp(g_launched[i], prefix, strlen(prefix)) == 0;
    }
    return found;
}

/* A tile's name is stem, a tile shape (4, 2, 4n3, 2n3), then a suffix: the suffix, or NULL where got
 * does not start with stem. */
static const char *tile_suffix(const char *got, const char *stem)
{
    const char *rest = strncmp(got, stem, strlen(stem)) == 0 ? got + strlen(stem) : NULL;
    return rest != NULL ? rest + strspn(rest, "24n3") : NULL;
}

/* The op ran (OK) and launched exactly `n` kernels named want[0..n), pdl[i] as given (-1: either). */
static int launched(const char *what, memra_status st, int n, const char *const *want, const int *pdl)
{
    int ok = st == MEMRA_STATUS_OK && g_n_launched == n;
    for (int i = 0; ok && i < n; i++)
        ok = strncmp(g_launched[i], want[i], strlen(want[i])) == 0 && (pdl[i] < 0 || pdl[i] == g_pdl[i]);
    printf("  %-28s status %d, %d launches:", what, (int)st, g_n_launched);
    for (int i = 0; i < g_n_launched; i++) printf(" %s%s", g_launched[i], g_pdl[i] ? "(pdl)" : "");
    printf("  %s\n", ok ? "ok" : "FAIL");
    if (st != MEMRA_STATUS_OK && g_last_error[0]) printf("    last error: %s\n", g_last_error);
    g_n_launched = 0;
    return ok;
}

/* launched(), with the first kernel's name exactly want[0] (launched() matches prefixes). */
static int launched_exact(const char *what, memra_status st, int n, const char *const *want, const int *pdl)
{
    const int first = g_n_launched > 0 && strcmp(g_launched[0], want[0]) == 0;
    if (!first) printf("  %-28s first launch %s, want exactly %s  FAIL\n", what, g_n_launched ? g_launched[0] : "none", want[0]);
    return launched(what, st, n, want, pdl) && first;
}

/* Whether init looked up kernel `name` (the fake's handle pool). */
static int resolved(const char *name)
{
    for (int i = 0; i < g_n_names; i++)
        if (strcmp(g_names[i], name) == 0) return 1;
    printf("  kernel %s was never looked up  FAIL\n", name);
    return 0;
}

/* gemm_fp8_blk of the block-128 family with the own pass, a static scale, a
 * producer amax (the one-pass quantiser), and bad given scales. */
static int fp8blk_given(mod *m, const char *gemm_kernel)
{
    int ok = 1;
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(64, 256, 512);
    ok &= launched_exact("gemm_fp8_blk own amax", m->desc->ops->gemm_fp8_blk(&c, &a), 2,
                         (const char *[]){"memra_k_fp8blk_quant", gemm_kernel}, (const int[]){0, 0});
    a.x_scale = 0.02f;
    c = call_of(m);
    ok &= launched_exact("gemm_fp8_blk x_scale", m->desc->ops->gemm_fp8_blk(&c, &a), 2,
                         (const char *[]){"memra_k_fp8blk_quant_given", gemm_kernel}, (const int[]){0, 0});
    a.x_amax = 0x60000000;
    c = call_of(m);
    ok &= launched_exact("gemm_fp8_blk x_amax", m->desc->ops->gemm_fp8_blk(&c, &a), 2,
                         (const char *[]){"memra_k_fp8blk_quant_given", gemm_kernel}, (const int[]){0, 0});
    a.x_scale = 0.0f;
    c = call_of(m);
    ok &= launched_exact("gemm_fp8_blk x_amax only", m->desc->ops->gemm_fp8_blk(&c, &a), 2,
                         (const char *[]){"memra_k_fp8blk_quant_given", gemm_kernel}, (const int[]){0, 0});
    a.x_amax = 0x60000002;
    c = call_of(m);
    memra_status st = m->desc->ops->gemm_fp8_blk(&c, &a);
    ok &= st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
    printf("  gemm_fp8_blk x_amax misaligned: status %d  %s\n", (int)st, st == MEMRA_STATUS_INVALID_ARGUMENT ? "ok" : "FAIL");
    a.x_amax = 0;
    a.x_scale = -1.0f;
    c = call_of(m);
    st = m->desc->ops->gemm_fp8_blk(&c, &a);
    ok &= st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
    printf("  gemm_fp8_blk x_scale -1: status %d  %s\n", (int)st, st == MEMRA_STATUS_INVALID_ARGUMENT ? "ok" : "FAIL");
    g_n_launched = 0;
    return ok;
}

static int declined(const char *what, memra_status st, const memra_call *c, const char *reason_part)
{
    const int ok = st == MEMRA_STATUS_DECLINED && c->decline_reason != NULL && strstr(c->decline_reason, reason_part);
    printf("  %-28s status %d, reason \"%s\"  %s\n", what, (int)st, c->decline_reason ? c->decline_reason : "",
           ok ? "ok" : "FAIL");
    g_n_launched = 0;
    return ok;
}

/* ---- cases ------------------------------------------------------------------------------- */

/* gemm_w16 (the w16 family): the activations' pass, then the tile of the format and token width, and with
 * split-k the slices' sum; the plan on 132 SMs; declines and errors launch nothing. */
static int gemm_w16_plans(mod *m)
{
    int ok = 1;
    memra_call c = call_of(m);
    /* m 4096, 5120 -> 5120 Q8_0: 16 x 40 CTAs of 256 tokens, unsplit */
    memra_gemm_args a = gemm(4096, 5120, 5120);
    a.w_format = MEMRA_FORMAT_Q8_0;
    memra_status st = m->desc->ops->gemm_w16(&c, &a);
    const int g1 = g_grid_x[1] == 16 && g_grid_y[1] == 40 && g_grid_z[1] == 1 && g_block_x[1] == 384 &&
                   g_smem[1] == 4u * 41472u + 1024u;
    printf("  gemm_w16 Q8_0 4096 tile grid %u x %u x %u, block %u, smem %u  %s\n", g_grid_x[1], g_grid_y[1],
           g_grid_z[1], g_block_x[1], g_smem[1], g1 ? "ok" : "FAIL");
    ok &= g1 && launched("gemm_w16 Q8_0 m 4096", st, 2, (const char *[]){"memra_k_w16_x16", "memra_k_w16_q8_0_n256"},
                         (const int[]){0, 0});
    /* m 512, 5120 -> 1024 Q6_K: the 256-token grid (16 CTAs) is 12% of a wave: 128 tokens (32 CTAs); the default
     * plan (MEMRA_W16_SPLIT=auto = waves) splits k in 4 slices of 20 steps (128 CTAs, one wave), where fill's 5
     * would make 160 (two waves; checked below under MEMRA_W16_SPLIT=fill) */
    a = gemm(512, 1024, 5120);
    a.w_format = MEMRA_FORMAT_Q6_K;
    c = call_of(m);
    st = m->desc->ops->gemm_w16(&c, &a);
    const int g2 = g_grid_x[1] == 4 && g_grid_y[1] == 8 && g_grid_z[1] == 4;
    printf("  gemm_w16 Q6_K 512 tile grid %u x %u x %u  %s\n", g_grid_x[1], g_grid_y[1], g_grid_z[1], g2 ? "ok" : "FAIL");
    ok &= g2 && launched("gemm_w16 Q6_K m 512 split", st, 3,
                         (const char *[]){"memra_k_w16_x16", "memra_k_w16_q6_k_n128", "memra_k_w16_sum"},
                         (const int[]){0, 0, 0});
    /* m x k past a one-dimensional grid of the pass (2^31 - 1 tokens x 2^24 columns): declined, nothing launched */
    a = gemm(0x7FFFFFFF, 256, 1 << 24);
    a.w_format = MEMRA_FORMAT_Q8_0;
    c = call_of(m);
    ok &= declined("gemm_w16 m x k too large", m->desc->ops->gemm_w16(&c, &a), &c, "too large");
    /* k 544 (Q8_0 blocks, not the tile's 64-column steps): declined */
    a = gemm(64, 256, 544);
    a.w_format = MEMRA_FORMAT_Q4_0;
    c = call_of(m);
    ok &= declined("gemm_w16 k 544", m->desc->ops->gemm_w16(&c, &a), &c, "multiple of 64");
    /* an f16 activation: moved into the tiles by the x16h pass (2 row tiles of 128 tokens, unsplit: 8 steps) */
    a = gemm(64, 256, 512);
    a.w_format = MEMRA_FORMAT_Q8_0;
    a.x_is_f16 = 1;
    c = call_of(m);
    ok &= launched("gemm_w16 x_is_f16", m->desc->ops->gemm_w16(&c, &a), 2,
                   (const char *[]){"memra_k_w16_x16h", "memra_k_w16_q8_0_n128"}, (const int[]){0, 0});
    /* the host's refusals: E4M3 (no W16 layout), a K-quant k off 256, ldy under n */
    static const struct { int32_t f; int k, ldy; const char *what; } bad[3] = {
        {MEMRA_FORMAT_E4M3, 512, 256, "E4M3"}, {MEMRA_FORMAT_Q5_K, 640, 256, "Q5_K k 640"},
        {MEMRA_FORMAT_Q8_0, 512, 255, "ldy 255 < n"}};
    for (int i = 0; i < 3; i++) {
        a = gemm(64, 256, bad[i].k);
        a.w_format = bad[i].f;
        a.ldy = bad[i].ldy;
        c = call_of(m);
        st = m->desc->ops->gemm_w16(&c, &a);
        const int e = st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
        printf("  gemm_w16 %-18s status %d  %s\n", bad[i].what, (int)st, e ? "ok" : "FAIL");
        ok &= e;
        g_n_launched = 0;
    }
    return ok;
}

static int case_sm90(const char *so)
{
    mod m;
    if (!open_mod(so, 90, &m)) return 0;
    int ok = 1;
    memra_call c = call_of(&m);
    ok &= launched("cvt_f16", m.desc->ops->cvt_f16(&c, 0x1000, 0x2000, 4096), 1,
                   (const char *[]){"memra_k_cvt_f32_f16"}, (const int[]){0});
    ok &= launched("dequant_f16 Q4_K", m.desc->ops->dequant_f16(&c, MEMRA_FORMAT_Q4_K, 0x1000, 4, 256, 0x2000), 1,
                   (const char *[]){"memra_k_dequant_q4_k"}, (const int[]){0});
    ok &= launched("fp8_nan_count", m.desc->ops->fp8_nan_count(&c, 0x1000, 1 << 20, 0x2000), 1,
                   (const char *[]){"memra_k_fp8_nan_count"}, (const int[]){0});
    /* dequant_kr_f16: the format's K-records kernel, Q8_0's records kernel; a source off 8 bytes declines, Q4_0
     * declines (its records are Q8_0 records), K-quant cols off 256 is an error */
    static const memra_format krf[3] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const char *const krk[3] = {"memra_k_dequant_kr_q4_k", "memra_k_dequant_kr_q5_k", "memra_k_dequant_kr_q6_k"};
    for (int f = 0; f < 3; f++) {
        c = call_of(&m);
        ok &= launched("dequant_kr_f16", m.desc->ops->dequant_kr_f16(&c, krf[f], 0x1000, 5, 512, 0x2000), 1,
                       (const char *[]){krk[f]}, (const int[]){0});
    }
    c = call_of(&m);
    ok &= declined("dequant_kr_f16 src % 8 = 4", m.desc->ops->dequant_kr_f16(&c, MEMRA_FORMAT_Q4_K, 0x1004, 5, 512, 0x2000),
                   &c, "aligned");
    /* 8-byte alignment is all the kernels need (the super-block heads are read as two 8-byte words) */
    c = call_of(&m);
    ok &= launched("dequant_kr_f16 src % 16 = 8", m.desc->ops->dequant_kr_f16(&c, MEMRA_FORMAT_Q5_K, 0x1008, 5, 512, 0x2000),
                   1, (const char *[]){"memra_k_dequant_kr_q5_k"}, (const int[]){0});
    c = call_of(&m);
    ok &= launched("dequant_kr_f16 Q8_0 records", m.desc->ops->dequant_kr_f16(&c, MEMRA_FORMAT_Q8_0, 0x1000, 5, 288, 0x2000),
                   1, (const char *[]){"memra_k_dequant_kr_q8_0"}, (const int[]){0});
    c = call_of(&m);
    ok &= declined("dequant_kr_f16 Q4_0", m.desc->ops->dequant_kr_f16(&c, MEMRA_FORMAT_Q4_0, 0x1000, 5, 512, 0x2000), &c,
                   "Q8_0 records only");
    c = call_of(&m);
    {
        const memra_status sk = m.desc->ops->dequant_kr_f16(&c, MEMRA_FORMAT_Q6_K, 0x1000, 5, 384, 0x2000);
        ok &= sk == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
        printf("  dequant_kr_f16 cols 384: status %d  %s\n", (int)sk,
               sk == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0 ? "ok" : "FAIL");
    }
    memra_gemm_args a = gemm(64, 256, 512);
    c = call_of(&m);
    ok &= declined("gemm_f16 (no cuBLASLt)", m.desc->ops->gemm_f16(&c, &a), &c, "cuBLASLt");
    /* the blas FP8 lanes' one-pass quantisers are loaded (no cuBLASLt here, so no GEMM runs) */
    ok &= resolved("memra_k_quant_e4m3_given") && resolved("memra_k_quant_e4m3_row128_given");
    a.x_scale = NAN;
    c = call_of(&m);
    memra_status sx = m.desc->ops->gemm_fp8(&c, &a);
    ok &= sx == MEMRA_STATUS_INVALID_ARGUMENT;
    printf("  gemm_fp8 x_scale NaN: status %d  %s\n", (int)sx, sx == MEMRA_STATUS_INVALID_ARGUMENT ? "ok" : "FAIL");
    a.x_scale = 0.5f;
    c = call_of(&m);
    ok &= declined("gemm_fp8 x_scale (no cuBLASLt)", m.desc->ops->gemm_fp8(&c, &a), &c, "cuBLASLt");
    a.x_scale = 0.0f;
    ok &= m.desc->ops->quant_q8_1 == NULL && m.desc->ops->gemm_q8_0r == NULL;
    ok &= m.desc->ops->gemm_w16 == NULL; /* the w16 module's */
    ok &= close_mod(&m, 4);
    return ok;
}

/* The w16 module on cc 9.0: MEMRA_W16 unset (0, the default) loads no image and gemm_w16 declines;
 * MEMRA_W16=auto its one image and gemm_w16's plans; on cc 12.0 it scores 0 */
/* gemm_experts on lane gemm_w16 (the w16 family's grouped tile): the routing, the routed rows' pass, the tile over
 * the table's worst case (ceil(m / BN) + min(E, m) token tiles, at most m), split-k's scattered sum; declines for
 * other lanes and too many experts; errors launch nothing. */
/* One gemm_experts call on lane gemm_w16 on the fake driver: rows x k -> n, format f, E experts (ids on the device) */
static memra_status w16_xe_call(mod *m, int rows, int n, int k, int32_t f, int E)
{
    memra_gemm_args xa = gemm(rows, n, k);
    xa.w_format = f;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_w16, .n_experts = E,
                                  .ids = 0x60000000};
    memra_call c = call_of(m);
    return m->desc->ops->gemm_experts(&c, &xa, &ex);
}

static int gemm_w16_experts_plans(mod *m)
{
    static const unsigned big = 4u * 41472u + 1024u, n64 = 4u * 16896u + 1024u, n160 = 4u * 29184u + 1024u;
    static const struct {
        int m, n, k, E;
        int32_t f;
        unsigned gx, gy, gz, smem;
        const char *tile;
        const char *what;
    } rows[] = {
        /* Mixtral-like gate at 512 tokens, top-2: 1024 rows over 8 experts, 128 a mean expert (141 with the
         * tenth for uneven routing: one 160-token CTA at 0.84 (Q8_0) or 0.88 (Q4_K) of a 256-token one, against
         * one of 256 or two of 128 at 0.63 / 0.76 each): 160-token tiles, 7 + 8 of them, 112 row tiles: 1680
         * CTAs, unsplit; under 16 x 160 rows: the plain grid */
        {1024, 14336, 4096, 8, MEMRA_FORMAT_Q8_0, 15, 112, 1, n160, "memra_k_w16_xe_q8_0_n160", "Q8_0 1024 rows E 8"},
        {1024, 14336, 4096, 8, MEMRA_FORMAT_Q4_K, 15, 112, 1, n160, "memra_k_w16_xe_q4_k_n160", "Q4_K 1024 rows E 8"},
        /* the 160-token tile's edges: 928 rows over 8 (116 a mean, 128 with the tenth: one 128-token CTA) take
         * 128, 8 + 8 tiles; 1168 rows (146 a mean, 161 with the tenth: two 160-token CTAs, never taken) take 256,
         * 5 + 8 tiles */
        {928, 14336, 4096, 8, MEMRA_FORMAT_Q8_0, 16, 112, 1, big, "memra_k_w16_xe_q8_0_n128", "Q8_0 928 rows E 8"},
        {1168, 14336, 4096, 8, MEMRA_FORMAT_Q6_K, 13, 112, 1, big, "memra_k_w16_xe_q6_k_n256", "Q6_K 1168 rows E 8"},
        /* 8192 rows over 8 experts (1024 a mean expert): 256-token tiles, 32 + 8 of them, unsplit; 32 full token
         * tiles: the raster (MEMRA_W16_XE_RASTER=auto: groups of 8), a 1-D grid of 40 x 32 CTAs */
        {8192, 4096, 14336, 8, MEMRA_FORMAT_Q4_K, 40 * 32, 1, 1, big, "memra_k_w16_xe_q4_k_n256", "Q4_K 8192 rows E 8"},
        /* Qwen3-like gate at 512 tokens, top-8: 4096 rows over 128 experts, 32 a mean expert: 64-token tiles (two
         * CTAs an SM), 64 + 128 of them, 6 row tiles: 1152 CTAs, unsplit; rows of 64 token tiles and more: the
         * raster's 1-D grid (auto: m >= 16 tiles) */
        {4096, 768, 2048, 128, MEMRA_FORMAT_Q8_0, 192 * 6, 1, 1, n64, "memra_k_w16_xe_q8_0_n64", "Q8_0 4096 rows E 128"},
        /* at 4096 tokens: 32768 rows, 256 a mean expert (282 with the tenth: two 256-token CTAs cost 2, three of
         * 128 at 0.63 each 1.89): 128-token tiles, 256 + 128, rastered; Q4_K's 128-token CTA costs 0.76 (2.28):
         * 256-token tiles, 128 + 128, rastered. At 360 rows a mean expert (396 with the tenth) Q8_0 takes 256
         * again: two CTAs against four of 128 (2.52) */
        {32768, 768, 2048, 128, MEMRA_FORMAT_Q4_0, 384 * 6, 1, 1, big, "memra_k_w16_xe_q4_0_n128", "Q4_0 32768 rows E 128"},
        {32768, 768, 2048, 128, MEMRA_FORMAT_Q4_K, 256 * 6, 1, 1, big, "memra_k_w16_xe_q4_k_n256", "Q4_K 32768 rows E 128"},
        /* 2880 rows over 8 experts (360 a mean, 396 with the tenth): Q8_0 on 256-token tiles, 12 + 8 of them x 6
         * row tiles (120 CTAs, under 16 token tiles: the plain grid), so split-k in 2 slices of 16 steps */
        {2880, 768, 2048, 8, MEMRA_FORMAT_Q8_0, 20, 6, 2, big, "memra_k_w16_xe_q8_0_n256", "Q8_0 2880 rows E 8"},
        /* 64 rows over 4 experts (16 a mean expert), 4096 -> 256: 1 + 4 64-token tiles, 2 row tiles, 10 CTAs: 8
         * slices of 8 steps */
        {64, 256, 4096, 4, MEMRA_FORMAT_Q6_K, 5, 2, 8, n64, "memra_k_w16_xe_q6_k_n64", "Q6_K 64 rows E 4 split"},
        /* 3 rows over 128 experts: the table holds at most 3 tiles (one row each) */
        {3, 768, 2048, 128, MEMRA_FORMAT_Q5_K, 3, 6, 4, n64, "memra_k_w16_xe_q5_k_n64", "Q5_K 3 rows E 128 split"},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        memra_gemm_args a = gemm(rows[i].m, rows[i].n, rows[i].k);
        a.w_format = rows[i].f;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_w16, .n_experts = rows[i].E,
                                      .ids = 0x60000000};
        memra_call c = call_of(m);
        const memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
        const int g = g_grid_x[2] == rows[i].gx && g_grid_y[2] == rows[i].gy && g_grid_z[2] == rows[i].gz &&
                      g_block_x[2] == 384 && g_smem[2] == rows[i].smem && g_grid_x[0] == 1 &&
                      g_block_x[0] == 1024;
        printf("  gemm_experts w16 %-24s tile grid %u x %u x %u, %u bytes of shared memory  %s\n", rows[i].what,
               g_grid_x[2], g_grid_y[2], g_grid_z[2], g_smem[2], g ? "ok" : "FAIL");
        const int split = rows[i].gz > 1;
        ok &= g && launched(rows[i].what, st, split ? 4 : 3,
                            (const char *[]){"memra_k_w16_route", "memra_k_w16_x16g", rows[i].tile, "memra_k_w16_sumg"},
                            (const int[]){0, 0, 0, 0});
    }
    memra_gemm_args a = gemm(1024, 4096, 4096);
    a.w_format = MEMRA_FORMAT_Q8_0;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_q8_0r, .n_experts = 8,
                                  .ids = 0x60000000};
    memra_call c = call_of(m);
    ok &= declined("gemm_experts lane gemm_q8_0r", m->desc->ops->gemm_experts(&c, &a, &ex), &c, "gemm_w16 only");
    ex.lane = MEMRA_OP_gemm_w16;
    ex.n_experts = 4097;
    c = call_of(m);
    ok &= declined("gemm_experts 4097 experts", m->desc->ops->gemm_experts(&c, &a, &ex), &c, "4096 experts");
    ex.n_experts = 8;
    a.m = 0; /* the core's question (no rows): taken, nothing launched */
    c = call_of(m);
    memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    ok &= st == MEMRA_STATUS_OK && g_n_launched == 0;
    printf("  gemm_experts w16 no rows: status %d, %d launches  %s\n", (int)st, g_n_launched,
           st == MEMRA_STATUS_OK && g_n_launched == 0 ? "ok" : "FAIL");
    a.m = 1024;
    ex.ids = 0;
    c = call_of(m);
    st = m->desc->ops->gemm_experts(&c, &a, &ex);
    ok &= st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
    printf("  gemm_experts w16 ids NULL: status %d  %s\n", (int)st,
           st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0 ? "ok" : "FAIL");
    g_n_launched = 0;
    return ok;
}

static int case_w16(const char *so)
{
    mod m;
    g_w16_knob = NULL;
    if (!open_mod(so, 90, &m)) return 0;
    memra_gemm_args a = gemm(4096, 5120, 5120);
    a.w_format = MEMRA_FORMAT_Q8_0;
    memra_call c = call_of(&m);
    int ok = declined("gemm_w16 MEMRA_W16 unset", m.desc->ops->gemm_w16(&c, &a), &c, "MEMRA_W16=0");
    /* the grouped lane likewise, asked with no rows (the core's question): declined, not taken */
    {
        memra_gemm_args z = gemm(0, 4096, 4096);
        z.w_format = MEMRA_FORMAT_Q8_0;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_w16, .n_experts = 8,
                                      .ids = 0x60000000};
        c = call_of(&m);
        ok &= declined("gemm_experts w16 MEMRA_W16 unset", m.desc->ops->gemm_experts(&c, &z, &ex), &c, "MEMRA_W16=0");
    }
    ok &= close_mod(&m, 0);
    g_w16_knob = "auto";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= gemm_w16_plans(&m);
    ok &= gemm_w16_experts_plans(&m);
    const memra_device_caps c120 = fake_caps(120);
    ok &= m.desc->score(&c120) == 0;
    ok &= close_mod(&m, 1);
    /* MEMRA_W16_XE_RASTER=0: the 256-token tile on the (token tiles, row tiles) grid; =8: 1024 rows on 8 experts,
     * the 160-token tile (7 + 8 token tiles, no raster by default) on a 1-D grid of token tiles x row tiles */
    static const struct {
        const char *knob;
        int m, n, k;
        unsigned gx, gy;
    } rr[] = {{"0", 8192, 4096, 14336, 40, 32}, {"8", 1024, 14336, 4096, 15u * 112u, 1}};
    for (size_t i = 0; i < sizeof rr / sizeof rr[0]; i++) {
        g_w16_raster_knob = rr[i].knob;
        if (!open_mod(so, 90, &m)) return 0;
        memra_gemm_args xa = gemm(rr[i].m, rr[i].n, rr[i].k);
        xa.w_format = MEMRA_FORMAT_Q4_K;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_w16, .n_experts = 8,
                                      .ids = 0x60000000};
        c = call_of(&m);
        const memra_status st = m.desc->ops->gemm_experts(&c, &xa, &ex);
        const int g = st == MEMRA_STATUS_OK && g_grid_x[2] == rr[i].gx && g_grid_y[2] == rr[i].gy && g_grid_z[2] == 1;
        printf("  gemm_experts w16 raster %s, %d rows: tile grid %u x %u x %u  %s\n", rr[i].knob, rr[i].m, g_grid_x[2],
               g_grid_y[2], g_grid_z[2], g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_w16_raster_knob = NULL;
    /* MEMRA_W16_XE_FIT=1: where the grouped call takes the 160-token tile (1024 rows over 8 experts), its twin
     * memra_k_w16_xe_<fmt>_n160f on the same grid; elsewhere (8192 rows: 256-token tiles) the plain entry */
    g_w16_fit_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    static const struct {
        int m, n, k;
        int32_t f;
        unsigned gx, gy;
        const char *tile;
    } ft[] = {{1024, 14336, 4096, MEMRA_FORMAT_Q6_K, 15, 112, "memra_k_w16_xe_q6_k_n160f"},
              {1024, 14336, 4096, MEMRA_FORMAT_Q4_0, 15, 112, "memra_k_w16_xe_q4_0_n160f"},
              {8192, 4096, 14336, MEMRA_FORMAT_Q8_0, 40 * 32, 1, "memra_k_w16_xe_q8_0_n256"}};
    for (size_t i = 0; i < sizeof ft / sizeof ft[0]; i++) {
        const memra_status st = w16_xe_call(&m, ft[i].m, ft[i].n, ft[i].k, ft[i].f, 8);
        const int g = st == MEMRA_STATUS_OK && g_n_launched == 3 && strcmp(g_launched[2], ft[i].tile) == 0 &&
                      g_grid_x[2] == ft[i].gx && g_grid_y[2] == ft[i].gy && g_grid_z[2] == 1 &&
                      g_smem[2] == (ft[i].m == 1024 ? 4u * 29184u : 4u * 41472u) + 1024u;
        printf("  gemm_experts w16 MEMRA_W16_XE_FIT=1, %d rows: %s grid %u x %u x %u  %s\n", ft[i].m,
               g_n_launched > 2 ? g_launched[2] : "-", g_grid_x[2], g_grid_y[2], g_grid_z[2], g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    /* an image without the twins: the module loads, and the plain 160-token tile serves */
    g_missing_kernel = "_n160f";
    if (!open_mod(so, 90, &m)) return 0;
    {
        const memra_status st = w16_xe_call(&m, 1024, 14336, 4096, MEMRA_FORMAT_Q8_0, 8);
        const int g =
            st == MEMRA_STATUS_OK && g_n_launched == 3 && strcmp(g_launched[2], "memra_k_w16_xe_q8_0_n160") == 0;
        printf("  gemm_experts w16 MEMRA_W16_XE_FIT=1, an image without the twins: %s  %s\n",
               g_n_launched > 2 ? g_launched[2] : "-", g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    g_missing_kernel = NULL;
    g_w16_fit_knob = NULL;
    /* The default plan (MEMRA_W16_SPLIT unset: auto = waves): a dense call's token tile and slices by the wave
     * model (w16_ops.c plan_by_waves) on 132 SMs, where fill takes 128 tokens at m = 512 and splits until every SM
     * has a CTA. At m = 512:
     * 5120->1024 Q8_0: 128 tokens in 4 slices (128 CTAs, one wave; fill's 5 make 160, two waves);
     * 17408->5120 Q4_K: 256 tokens in 3 slices (fill: 160 CTAs of 128, two waves, the second of 28);
     * 5120->5120 Q6_K: 256 tokens unsplit (80 CTAs, one wave: a K-quant's 128-token CTA takes 0.76 of a 256-token
     * one's time, so fill's two waves of 128 cost 1.52 of it); 5120->12288 Q8_0: fill's plan (384 CTAs of 128,
     * 2.9 waves, against 192 of 256 in two waves of 1 / 0.63 the CTA time: under a tenth apart). At m = 4096
     * 5120->1024 Q8_0: 256 tokens unsplit (128 CTAs; fill 2 slices). A grouped call keeps fill's slices (the 64
     * rows over 4 experts of gemm_w16_experts_plans: 8). Then MEMRA_W16_SPLIT=fill and =waves on 5120->1024 Q8_0
     * at m = 512: fill's 5 slices, waves' 4 */
    g_w16_split_knob = NULL;
    if (!open_mod(so, 90, &m)) return 0;
    static const struct {
        int m, n, k;
        int32_t f;
        unsigned gx, gy, gz;
        const char *tile;
    } wz[] = {{512, 1024, 5120, MEMRA_FORMAT_Q8_0, 4, 8, 4, "memra_k_w16_q8_0_n128"},
              {512, 5120, 17408, MEMRA_FORMAT_Q4_K, 2, 40, 3, "memra_k_w16_q4_k_n256"},
              {512, 5120, 5120, MEMRA_FORMAT_Q6_K, 2, 40, 1, "memra_k_w16_q6_k_n256"},
              {512, 12288, 5120, MEMRA_FORMAT_Q8_0, 4, 96, 1, "memra_k_w16_q8_0_n128"},
              {4096, 1024, 5120, MEMRA_FORMAT_Q8_0, 16, 8, 1, "memra_k_w16_q8_0_n256"}};
    for (size_t i = 0; i < sizeof wz / sizeof wz[0]; i++) {
        memra_gemm_args wa = gemm(wz[i].m, wz[i].n, wz[i].k);
        wa.w_format = wz[i].f;
        c = call_of(&m);
        const memra_status st = m.desc->ops->gemm_w16(&c, &wa);
        const int g = st == MEMRA_STATUS_OK && g_n_launched == (wz[i].gz > 1 ? 3 : 2) && g_grid_x[1] == wz[i].gx &&
                      g_grid_y[1] == wz[i].gy && g_grid_z[1] == wz[i].gz && strcmp(g_launched[1], wz[i].tile) == 0 &&
                      (wz[i].gz == 1 || strcmp(g_launched[2], "memra_k_w16_sum") == 0);
        printf("  gemm_w16 split waves, m %d, %d -> %d: %s grid %u x %u x %u, %d launches  %s\n", wz[i].m, wz[i].k,
               wz[i].n, g_n_launched > 1 ? g_launched[1] : "-", g_grid_x[1], g_grid_y[1], g_grid_z[1], g_n_launched,
               g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    {
        const memra_status st = w16_xe_call(&m, 64, 256, 4096, MEMRA_FORMAT_Q6_K, 4);
        const int g = st == MEMRA_STATUS_OK && g_grid_z[2] == 8;
        printf("  gemm_experts w16 split waves, 64 rows E 4: tile grid %u x %u x %u  %s\n", g_grid_x[2], g_grid_y[2],
               g_grid_z[2], g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    static const struct { const char *knob; unsigned gz; } fw[] = {{"fill", 5}, {"waves", 4}, {"auto", 4}};
    for (size_t i = 0; i < sizeof fw / sizeof fw[0]; i++) {
        g_w16_split_knob = fw[i].knob;
        if (!open_mod(so, 90, &m)) return 0;
        memra_gemm_args wa = gemm(512, 1024, 5120);
        wa.w_format = MEMRA_FORMAT_Q8_0;
        c = call_of(&m);
        const memra_status st = m.desc->ops->gemm_w16(&c, &wa);
        const int g = st == MEMRA_STATUS_OK && g_grid_x[1] == 4 && g_grid_y[1] == 8 && g_grid_z[1] == fw[i].gz &&
                      strcmp(g_launched[1], "memra_k_w16_q8_0_n128") == 0;
        printf("  gemm_w16 MEMRA_W16_SPLIT=%s, m 512, 5120 -> 1024: grid %u x %u x %u  %s\n", fw[i].knob, g_grid_x[1],
               g_grid_y[1], g_grid_z[1], g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_w16_split_knob = NULL;
    /* MEMRA_W16_TILE=160 (the grouped tile only): the Mixtral-like 1024 rows over 8 experts on 160-token
     * tiles, ceil(1024 / 160) + 8 = 15 of them x 112 row tiles on the plain grid (1024 < 16 x 160), 4 x 29184 +
     * 1024 bytes of shared memory; the Qwen3-like 32768 rows over 128 experts: 205 + 128 token tiles, rastered
     * (1-D grid); a dense call under it takes its own plan (m 512, 5120 -> 5120 Q6_K: 2 x 40 CTAs of 256) */
    g_w16_tile_knob = "160";
    if (!open_mod(so, 90, &m)) return 0;
    static const struct {
        int m, n, k, E;
        int32_t f;
        unsigned gx, gy;
        const char *tile;
    } t160[] = {{1024, 14336, 4096, 8, MEMRA_FORMAT_Q8_0, 15, 112, "memra_k_w16_xe_q8_0_n160"},
                {32768, 768, 2048, 128, MEMRA_FORMAT_Q5_K, 333 * 6, 1, "memra_k_w16_xe_q5_k_n160"}};
    for (size_t i = 0; i < sizeof t160 / sizeof t160[0]; i++) {
        memra_gemm_args xa = gemm(t160[i].m, t160[i].n, t160[i].k);
        xa.w_format = t160[i].f;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_w16, .n_experts = t160[i].E,
                                      .ids = 0x60000000};
        c = call_of(&m);
        const memra_status st = m.desc->ops->gemm_experts(&c, &xa, &ex);
        const int g = st == MEMRA_STATUS_OK && g_n_launched == 3 && strcmp(g_launched[2], t160[i].tile) == 0 &&
                      g_grid_x[2] == t160[i].gx && g_grid_y[2] == t160[i].gy && g_grid_z[2] == 1 &&
                      g_smem[2] == 4u * 29184u + 1024u && g_block_x[2] == 384;
        printf("  gemm_experts w16 tile 160, %d rows E %d: %s grid %u x %u x %u, smem %u  %s\n", t160[i].m, t160[i].E,
               g_n_launched > 2 ? g_launched[2] : "-", g_grid_x[2], g_grid_y[2], g_grid_z[2], g_smem[2],
               g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    {
        memra_gemm_args wa = gemm(512, 5120, 5120);
        wa.w_format = MEMRA_FORMAT_Q6_K;
        c = call_of(&m);
        const memra_status st = m.desc->ops->gemm_w16(&c, &wa);
        const int g = st == MEMRA_STATUS_OK && g_n_launched == 2 && strcmp(g_launched[1], "memra_k_w16_q6_k_n256") == 0 &&
                      g_grid_x[1] == 2 && g_grid_y[1] == 40;
        printf("  gemm_w16 under MEMRA_W16_TILE=160, m 512, 5120 -> 5120 Q6_K: %s grid %u x %u  %s\n",
               g_n_launched > 1 ? g_launched[1] : "-", g_grid_x[1], g_grid_y[1], g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    g_w16_tile_knob = NULL;
    g_w16_knob = NULL;
    return ok;
}

static int case_sm120(const char *so, int cc)
{
    mod m;
    if (!open_mod(so, cc, &m)) return 0;
    int ok = 1;
    memra_call c = call_of(&m);
    ok &= launched("quant_q8_1", m.desc->ops->quant_q8_1(&c, 0x1000, 64, 512, 0x2000), 1,
                   (const char *[]){"memra_k_quant_q8_1"}, (const int[]){1});
    memra_gemm_args a = gemm(512, 5120, 5120);
    c = call_of(&m);
    memra_status st = m.desc->ops->gemm_q8_0r(&c, &a);
    /* on cc 12.0 the 99 KB opt-in leaves out the 128 x 128 tile */
    const int big_tile = g_n_launched > 0 && strcmp(g_launched[0], "memra_k_gemm_q8_0r_mt4") == 0;
    ok &= launched("gemm_q8_0r", st, g_n_launched >= 1 ? g_n_launched : 1,
                   (const char *[]){"memra_k_gemm_q8_0r_mt", "memra_k_splitk_sum"}, (const int[]){1, 1});
    if (cc == 120 && big_tile) {
        printf("  gemm_q8_0r ran the 128 x 128 tile on a 99 KB device  FAIL\n");
        ok = 0;
    }
    /* gemm_kr: each K-quant's own kernels (the K-packed widening differs), never 128 x 128 on 99 KB */
    static const struct { memra_format f; const char *name, *tile, *big; } kr[] = {
        {MEMRA_FORMAT_Q4_K, "q4_k", "memra_k_gemm_kr_q4_k_mt", "memra_k_gemm_kr_q4_k_mt4"},
        {MEMRA_FORMAT_Q5_K, "q5_k", "memra_k_gemm_kr_q5_k_mt", "memra_k_gemm_kr_q5_k_mt4"},
        {MEMRA_FORMAT_Q6_K, "q6_k", "memra_k_gemm_kr_q6_k_mt", "memra_k_gemm_kr_q6_k_mt4"}};
    for (size_t f = 0; f < sizeof kr / sizeof kr[0]; f++) {
        a = gemm(512, 5120, 5120);
        a.w_format = (int32_t)kr[f].f;
        c = call_of(&m);
        st = m.desc->ops->gemm_kr(&c, &a);
        /* the 128 x 128 tile on either fold (Q4_K's default _t entry point ends in "t") */
        const size_t bl = strlen(kr[f].big);
        const int big = g_n_launched > 0 && strncmp(g_launched[0], kr[f].big, bl) == 0 &&
                        strspn(g_launched[0] + bl, "tox") == strlen(g_launched[0] + bl); /* "", t, tx, x, o, to */
        char what[40];
        snprintf(what, sizeof what, "gemm_kr %s", kr[f].name);
        ok &= launched(what, st, g_n_launched >= 1 ? g_n_launched : 1,
                       (const char *[]){kr[f].tile, "memra_k_splitk_sum"}, (const int[]){1, 1});
        if (cc == 120 && big) {
            printf("  gemm_kr ran the 128 x 128 tile on a 99 KB device  FAIL\n");
            ok = 0;
        }
    }
    c = call_of(&m);
    a = gemm(64, 256, 512);
    if (cc == 120) {
        ok &= launched("gemm_fp8_blk", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                       (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_gemm"}, (const int[]){0, 0});
        ok &= fp8blk_given(&m, "memra_k_fp8blk_gemm");
    } else
        ok &= declined("gemm_fp8_blk", m.desc->ops->gemm_fp8_blk(&c, &a), &c, "need a cc 12.x device");
    c = call_of(&m);
    ok &= launched("scale", m.desc->ops->scale(&c, 0x1000, 1000, 2.0f), 1, (const char *[]){"memra_k_scale_f32"},
                   (const int[]){0});
    /* convert, dequant, fp8_act, fp8_weight, mmq (+ fp8blk_mx on cc 12.0) */
    ok &= close_mod(&m, cc == 120 ? 7 : 5); /* on cc 12.x both FP8 MMA kinds (fp8blk, fp8blk_mx: the variants) */
    return ok;
}

/* gemm_experts of m rows over E experts, n = 300, k = 256, on `lane` (w_format for gemm_kr):
 * the routing kernel (plain) then `kernel` as a dependent launch on a gx x gy grid of 256 threads. */
/* gemm_experts' launches: the routing kernel, the grouped tile `kernel` on gx x gy, and where
 * `kernel2` is not NULL the remainder tile on gx x gy2 (both dependent launches). */
static int experts_launch(mod *m, memra_op lane, memra_format f, int rows, int E, const char *kernel, unsigned gx,
                          unsigned gy, const char *kernel2, unsigned gy2)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(rows, 300, 256);
    a.w_format = (int32_t)f;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = (int32_t)lane, .n_experts = E, .ids = 0x60000000};
    const memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    const unsigned lx = g_last_gx, ly1 = g_grid_y[1], ly2 = g_grid_y[2], lb = g_last_bx;
    char what[64];
    snprintf(what, sizeof what, "gemm_experts m %d E %d", rows, E);
    int ok = launched(what, st, kernel2 ? 3 : 2, (const char *[]){"memra_k_experts_route", kernel, kernel2 ? kernel2 : ""},
                      (const int[]){0, 1, 1});
    const int grid = lx == gx && ly1 == gy && (!kernel2 || ly2 == gy2) && lb == 256;
    printf("    %s: grid %u x %u", kernel, lx, ly1);
    if (kernel2) printf(", %s: grid %u x %u", kernel2, lx, ly2);
    printf(", block %u (want %u x %u", lb, gx, gy);
    if (kernel2) printf(", %u x %u", gx, gy2);
    printf(", 256)  %s\n", grid ? "ok" : "FAIL");
    return ok && grid;
}

/* gemm_experts on lane f16 / bf16 (on by default; MEMRA_MMQ_XE_F16=0 declines them, case_mmq) (n = 300, k = 256): the routing (one
 * table), the activation's conversion (cvt16_f16 / _bf16, or copy16 for an f16 x) on
 * ceil(m k / 4 / 256) blocks, then the tile-major 16-bit tile of the grouped floor's height
 * (m / E: 128 -> 128 rows, 12.5 -> 32) on (ceil(m / bm) + E, ceil(300 / BN)): 3 column blocks of
 * 128, 2 of 256 for MEMRA_MMQ_XE_H16=n8's 128-row tile; bf16 with an f16 x refused. */
static int h16_launch_y(mod *m, memra_op lane, int x16, int rows, int E, const char *cvt, const char *tile, unsigned gx,
                        unsigned gy)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(rows, 300, 256);
    a.x_is_f16 = x16;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = (int32_t)lane, .n_experts = E, .ids = 0x60000000};
    const memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    const unsigned qx = (unsigned)(((long long)rows * 64 + 255) / 256);
    const int grid = g_n_launched == 3 && g_grid_x[1] == qx && g_block_x[1] == 256 && g_grid_x[2] == gx &&
                     g_grid_y[2] == gy && g_block_x[2] == 256;
    printf("    %s: cvt %u (%u), tile %u x %u (%u); want %u (256), %u x %u (256)  %s\n", tile, g_grid_x[1], g_block_x[1],
           g_grid_x[2], g_grid_y[2], g_block_x[2], qx, gx, gy, grid ? "ok" : "FAIL");
    char what[64];
    snprintf(what, sizeof what, "gemm_experts %s m %d E %d", lane == MEMRA_OP_gemm_bf16 ? "bf16" : "f16", rows, E);
    return launched_exact(what, st, 3, (const char *[]){"memra_k_experts_route", cvt, tile}, (const int[]){0, 0, 0}) &&
           grid;
}
static int h16_launch(mod *m, memra_op lane, int x16, int rows, int E, const char *cvt, const char *tile, unsigned gx)
{
    return h16_launch_y(m, lane, x16, rows, E, cvt, tile, gx, 3);
}

static int h16_cases(const char *so)
{
    mod m;
    g_xe_f16_knob = NULL; /* the default: on */
    if (!open_mod(so, 90, &m)) return 0;
    int ok = h16_launch(&m, MEMRA_OP_gemm_f16, 0, 1024, 8, "memra_k_experts_cvt16_f16", "memra_k_experts_h16_f16_mt4_k64", 16);
    ok &= h16_launch(&m, MEMRA_OP_gemm_f16, 1, 1024, 8, "memra_k_experts_copy16", "memra_k_experts_h16_f16_mt4_k64", 16);
    ok &= h16_launch(&m, MEMRA_OP_gemm_bf16, 0, 100, 8, "memra_k_experts_cvt16_bf16", "memra_k_experts_h16_bf16_mt1_k64",
                     4 + 8);
    ok &= h16_launch(&m, MEMRA_OP_gemm_bf16, 0, 512, 8, "memra_k_experts_cvt16_bf16", "memra_k_experts_h16_bf16_mt2_k64",
                     8 + 8);
    {
        memra_call c = call_of(&m);
        memra_gemm_args a = gemm(64, 300, 256);
        a.x_is_f16 = 1;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_bf16, .n_experts = 8,
                                      .ids = 0x60000000};
        const memra_status st = m.desc->ops->gemm_experts(&c, &a, &ex);
        const int r = st == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
        printf("  gemm_experts bf16 with an f16 x: status %d, %d launches  %s\n", (int)st, g_n_launched, r ? "ok" : "FAIL");
        ok &= r;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    /* the sweep's variants: 256 columns on the 64- and 128-row tiles, the 32-row tile as it is
     * (32 values a stage); 32 values a stage on every tile */
    g_xe_h16_knob = "n8";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= h16_launch_y(&m, MEMRA_OP_gemm_f16, 0, 1024, 8, "memra_k_experts_cvt16_f16", "memra_k_experts_h16_f16_mt4_n8",
                       16, 2);
    ok &= h16_launch(&m, MEMRA_OP_gemm_bf16, 0, 100, 8, "memra_k_experts_cvt16_bf16", "memra_k_experts_h16_bf16_mt1",
                     4 + 8);
    ok &= close_mod(&m, 1);
    g_xe_h16_knob = "k32";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= h16_launch(&m, MEMRA_OP_gemm_bf16, 0, 512, 8, "memra_k_experts_cvt16_bf16", "memra_k_experts_h16_bf16_mt2",
                     8 + 8);
    ok &= close_mod(&m, 1);
    g_xe_h16_knob = NULL;
    return ok;
}

/* MEMRA_MMQ_XE_WG=1 (unset: auto, below: at k = 256 the records tiles): gemm_experts' Q8_0 128-row table on
 * the seeded warpgroup tile, n = 300,
 * k = 256, E = 8. Where it applies (cc 9.0, tensor maps, both kernels, the records' gather, the 128-row
 * table: m / E >= 96, or MEMRA_MMQ_XE_BM=128): the routing, the gather, the maps kernel (a plain launch,
 * one warp a map: ceil(2 E / 4) = 4 blocks of 128), the tile (a dependent launch on the table's worst case
 * ceil(m / 128) + E tiles x ceil(300 / 128) = 3 x the split, 384 threads, R3W_SMEM_BYTES_SD(1)), then the
 * 32-row remainder table's _mt1_sb and, split, the slices' sum; four maps encoded: the weight's two
 * templates and the sorted records' two (rank 3, 128-row boxes; codes 128 bytes swizzled, heads 16 plain).
 * With MEMRA_MMQ_XE_OVERLAP=1 too, unsplit: the early-trigger tile _wgs_o1 and the remainders on the
 * gathering _mt1_o2 (split: the plain pair). Elsewhere the records tiles, and neither kernel launched;
 * so too where the maps' or the sorted records' scratch is refused (a capture without a reservation). */
/* One gemm_experts call on m's module: rows x 300 x k over 8 experts, Q8_0 records (kq: Q4_K on gemm_kr);
 * the launches land in g_launched */
static memra_status xe_call(mod *m, int rows, int k, int kq)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(rows, 300, k);
    a.w_format = kq ? (int32_t)MEMRA_FORMAT_Q4_K : 0;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = (int32_t)(kq ? MEMRA_OP_gemm_kr : MEMRA_OP_gemm_q8_0r),
                                  .n_experts = 8, .ids = 0x60000000};
    return m->desc->ops->gemm_experts(&c, &a, &ex);
}

static int xe_wg_cases(const char *so)
{
    static const struct {
        int cc, no_tmap;
        const char *knob, *missing, *sort, *bm, *split;
        int rows, kq, want, ovl;
    } xc[] = {{90, 0, "1", NULL, NULL, NULL, NULL, 1024, 0, 1, 0},
              {90, 0, NULL, NULL, NULL, NULL, NULL, 1024, 0, 0, 0},
              {90, 0, "0", NULL, NULL, NULL, NULL, 1024, 0, 0, 0},
              {120, 0, "1", NULL, NULL, NULL, NULL, 1024, 0, 0, 0},
              {90, 1, "1", NULL, NULL, NULL, NULL, 1024, 0, 0, 0},
              {90, 0, "1", "experts_q8_0r_wgs", NULL, NULL, NULL, 1024, 0, 0, 0},
              {90, 0, "1", "experts_maps_q8_0r", NULL, NULL, NULL, 1024, 0, 0, 0},
              {90, 0, "1", NULL, "0", NULL, NULL, 1024, 0, 0, 0},
              {90, 0, "1", NULL, NULL, NULL, NULL, 100, 0, 0, 0},
              {90, 0, "1", NULL, NULL, "128", NULL, 100, 0, 1, 0},
              {90, 0, "1", NULL, NULL, NULL, "2", 1024, 0, 1, 0},
              {90, 0, "1", NULL, NULL, NULL, NULL, 1024, 1, 0, 0},
              /* with MEMRA_MMQ_XE_OVERLAP=1: the overlapped pair; split, or without _wgs_o1, the plain one */
              {90, 0, "1", NULL, NULL, NULL, NULL, 1024, 0, 1, 1},
              {90, 0, "1", NULL, NULL, NULL, "2", 1024, 0, 1, 1},
              {90, 0, "1", "wgs_o1", NULL, NULL, NULL, 1024, 0, 1, 1}};
    int ok = 1;
    for (size_t i = 0; i < sizeof xc / sizeof xc[0]; i++) {
        mod m;
        g_xe_wg_knob = xc[i].knob, g_missing_kernel = xc[i].missing, g_no_tmap = xc[i].no_tmap;
        g_xe_sort_knob = xc[i].sort, g_xe_bm_knob = xc[i].bm, g_xe_split_knob = xc[i].split;
        g_xe_ovl_knob = xc[i].ovl ? "1" : NULL;
        g_mmq_wg_sd_knob = "1"; /* the unpinned tile and its early-trigger twin (the pinned default: below) */
        if (!open_mod(so, xc[i].cc, &m)) return 0;
        g_tmap_calls = 0;
        const memra_status st = xe_call(&m, xc[i].rows, 256, xc[i].kq);
        int wg = 0, maps = 0;
        for (int l = 0; l < g_n_launched && l < 16; l++) {
            wg += strcmp(g_launched[l], "memra_k_experts_q8_0r_wgs") == 0;
            maps += strcmp(g_launched[l], "memra_k_experts_maps_q8_0r") == 0;
        }
        int good = st == MEMRA_STATUS_OK;
        if (xc[i].want) {
            const int split = xc[i].split != NULL, rem = xc[i].bm == NULL;
            const unsigned tiles = (unsigned)(xc[i].rows + 127) / 128 + 8, S = split ? 2u : 1u;
            /* the overlapped pair where asked, unsplit and the image has _wgs_o1 */
            const int o = xc[i].ovl && !split && xc[i].missing == NULL;
            const char *want[6] = {"memra_k_experts_route", "memra_k_experts_gather_q8_1", "memra_k_experts_maps_q8_0r",
                                   o ? "memra_k_experts_q8_0r_wgs_o1" : "memra_k_experts_q8_0r_wgs",
                                   rem ? (o ? "memra_k_experts_q8_0r_mt1_o2" : "memra_k_experts_q8_0r_mt1_sb") : NULL,
                                   split ? "memra_k_experts_splitk_sum" : NULL};
            const int nl = 4 + rem + split;
            good &= g_n_launched == nl;
            for (int l = 0; l < nl && good; l++) good &= strcmp(g_launched[l], want[l]) == 0;
            good &= g_grid_x[2] == 4 && g_block_x[2] == 128 && g_pdl[2] == 0;
            good &= g_grid_x[3] == tiles && g_grid_y[3] == 3 && g_grid_z[3] == S && g_block_x[3] == 384 &&
                    g_smem[3] == (unsigned)R3W_SMEM_BYTES_SD(1) && g_pdl[3] == 1;
            good &= !rem || (g_grid_z[4] == S && g_pdl[4] == 1);
            good &= g_tmap_calls == 4;
            for (int j = 0; j < 4 && g_tmap_calls == 4; j++)
                good &= g_tmap_rank[j] == 3 && g_tmap_box[j] == 128 && g_tmap_box0[j] == ((j & 1) ? 16u : 128u) &&
                        g_tmap_swz[j] == ((j & 1) ? 0 : 3);
        } else {
            good &= g_n_launched >= 2 && wg == 0 && maps == 0;
        }
        printf("  XE_WG=%s cc %d%s%s%s%s%s%s%s gemm_experts %s m %d E 8: %d launches (%s, %s, %s), tile %u x %u x %u "
               "(%u threads), %d maps  %s\n",
               xc[i].knob ? xc[i].knob : "unset", xc[i].cc, xc[i].missing ? ", image without " : xc[i].ovl ? ", XE_OVERLAP=1" : "",
               xc[i].missing ? xc[i].missing : "", xc[i].no_tmap ? ", no tensor maps" : "",
               xc[i].sort ? ", XE_SORT=" : "", xc[i].sort ? xc[i].sort : "", xc[i].bm ? ", XE_BM=" : "",
               xc[i].bm ? xc[i].bm : (xc[i].split ? ", XE_SPLIT=2" : ""), xc[i].kq ? "q4_k" : "q8_0", xc[i].rows,
               g_n_launched, g_n_launched > 2 ? g_launched[2] : "-", g_n_launched > 3 ? g_launched[3] : "-",
               g_n_launched > 4 ? g_launched[4] : "-", g_grid_x[3], g_grid_y[3], g_grid_z[3], g_block_x[3], g_tmap_calls,
               good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_mmq_wg_sd_knob = NULL;
    /* auto (unset, the default): the warpgroup tile (the default seed's) from k = 4096 (mmq_ops.c MMQ_XE_WG_AUTO_K),
     * the records tiles below it; =0 never, =1 at any k */
    static const struct {
        const char *knob;
        int k, want;
    } ac[] = {{NULL, 4096, 1}, {NULL, 14336, 1}, {NULL, 2048, 0}, {"auto", 4096, 1}, {"auto", 768, 0},
              {"0", 4096, 0}, {"1", 768, 1}};
    for (size_t i = 0; i < sizeof ac / sizeof ac[0]; i++) {
        mod m;
        g_xe_wg_knob = ac[i].knob, g_missing_kernel = NULL, g_xe_ovl_knob = NULL, g_xe_split_knob = "1", g_xe_bm_knob = NULL;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, 1024, ac[i].k, 0);
        int wg = 0;
        for (int l = 0; l < g_n_launched && l < 16; l++) wg += strcmp(g_launched[l], "memra_k_experts_q8_0r_wgs" PIN_SFX) == 0;
        const int good = st == MEMRA_STATUS_OK && wg == ac[i].want;
        printf("  XE_WG=%s cc 90 gemm_experts q8_0 m 1024 E 8 k %d: %s  %s\n", ac[i].knob ? ac[i].knob : "unset (auto)",
               ac[i].k, wg ? "the warpgroup tile" : "the records tiles", good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_split_knob = NULL;
    /* MEMRA_MMQ_WG_SEED=pp: the grouped tile's twin that folds in turn (_wgspp) in _wgs's place, the same grid;
     * with XE_OVERLAP=1 too it stays plain (no early-trigger twin: a warning); an image without it: the records tiles */
    /* MEMRA_MMQ_WG_SEED=pin likewise: _wgsf (the fold pinned behind the s8 wgmma); iadd: _wgsi (no seed wgmma); unset:
     * mmq.h's default */
    static const struct {
        const char *missing;
        int ovl;
        const char *tile, *rem, *seed;
    } pc[] = {{NULL, 0, "memra_k_experts_q8_0r_wgspp", "memra_k_experts_q8_0r_mt1_sb", "pp"},
              {NULL, 1, "memra_k_experts_q8_0r_wgspp", "memra_k_experts_q8_0r_mt1_sb", "pp"},
              {"experts_q8_0r_wgspp", 0, "memra_k_experts_q8_0r_mt4_sb", "memra_k_experts_q8_0r_mt1_sb", "pp"},
              {NULL, 0, "memra_k_experts_q8_0r_wgsf", "memra_k_experts_q8_0r_mt1_sb", "pin"},
              {NULL, 1, "memra_k_experts_q8_0r_wgsf", "memra_k_experts_q8_0r_mt1_sb", "pin"},
              {"experts_q8_0r_wgsf", 0, "memra_k_experts_q8_0r_mt4_sb", "memra_k_experts_q8_0r_mt1_sb", "pin"},
              {NULL, 0, "memra_k_experts_q8_0r_wgsi", "memra_k_experts_q8_0r_mt1_sb", "iadd"},
              {NULL, 1, "memra_k_experts_q8_0r_wgsi", "memra_k_experts_q8_0r_mt1_sb", "iadd"},
              {"experts_q8_0r_wgsi", 0, "memra_k_experts_q8_0r_mt4_sb", "memra_k_experts_q8_0r_mt1_sb", "iadd"},
              {NULL, 0, "memra_k_experts_q8_0r_wgs" PIN_SFX, "memra_k_experts_q8_0r_mt1_sb", NULL}};
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
        mod m;
        g_mmq_wg_sd_knob = pc[i].seed, g_xe_wg_knob = "1", g_missing_kernel = pc[i].missing, g_xe_ovl_knob = pc[i].ovl ? "1" : NULL;
        g_xe_bm_knob = NULL;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, 1024, 256, 0);
        const int wgx = pc[i].missing == NULL, at = wgx ? 3 : 2, nl = wgx ? 5 : 4;
        int good = st == MEMRA_STATUS_OK && g_n_launched == nl && strcmp(g_launched[at], pc[i].tile) == 0 &&
                   strcmp(g_launched[at + 1], pc[i].rem) == 0;
        if (wgx) good &= g_grid_x[3] == 1024 / 128 + 8 && g_grid_y[3] == 3 && g_block_x[3] == 384 &&
                         g_smem[3] == (unsigned)R3W_SMEM_BYTES_SD(1);
        printf("  XE_WG=1 WG_SEED=%s%s%s%s cc 90 gemm_experts q8_0 m 1024 E 8: %d launches, tile %s, then %s  %s\n",
               pc[i].seed ? pc[i].seed : "unset", pc[i].ovl ? ", XE_OVERLAP=1" : "", pc[i].missing ? ", image without " : "", pc[i].missing ? pc[i].missing : "",
               g_n_launched, g_n_launched > at ? g_launched[at] : "-", g_n_launched > at + 1 ? g_launched[at + 1] : "-",
               good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_mmq_wg_sd_knob = NULL, g_xe_ovl_knob = NULL, g_missing_kernel = NULL;
    /* MEMRA_MMQ_XE_PF=1: _wgs's twin with the weight's L2 prefetch (_wgs_pf) in its place, the same grid and the same
     * remainder launch; refused, with _wgs's own tile kept, under the folds in turn (_wgspp), beside XE_WG_REM=1
     * (_wgsr, whose grid holds both tables) and for an image without it (_wgs) */
    static const struct {
        const char *missing, *seed, *rem;
        const char *tile;
    } fc[] = {{NULL, "1", NULL, "memra_k_experts_q8_0r_wgs_pf"},
              {NULL, "pp", NULL, "memra_k_experts_q8_0r_wgspp"},
              {NULL, "1", "1", "memra_k_experts_q8_0r_wgsr"},
              {"experts_q8_0r_wgs_pf", "1", NULL, "memra_k_experts_q8_0r_wgs"}};
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++) {
        mod m;
        g_xe_pf_knob = "1", g_mmq_wg_sd_knob = fc[i].seed, g_xe_wg_knob = "1", g_missing_kernel = fc[i].missing;
        g_xe_rem_knob = fc[i].rem, g_xe_bm_knob = NULL;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, 1024, 256, 0);
        /* route, gather, maps, the tile (on (1024 / 128 + 8 [+ 8 remainders under REM]) x 3), then the remainders'
         * launch but under REM */
        const int nl = fc[i].rem ? 4 : 5;
        int good = st == MEMRA_STATUS_OK && g_n_launched == nl && strcmp(g_launched[3], fc[i].tile) == 0 &&
                   g_grid_x[3] == 1024 / 128 + 8 + (fc[i].rem ? 8 : 0) && g_grid_y[3] == 3 &&
                   g_smem[3] == (unsigned)R3W_SMEM_BYTES_SD(1);
        if (!fc[i].rem) good &= strcmp(g_launched[4], "memra_k_experts_q8_0r_mt1_sb") == 0;
        printf("  XE_WG=1 XE_PF=1 WG_SEED=%s%s%s%s cc 90 gemm_experts q8_0 m 1024 E 8: %d launches, tile %s on %u x %u  %s\n",
               fc[i].seed, fc[i].rem ? ", XE_WG_REM=1" : "", fc[i].missing ? ", image without " : "",
               fc[i].missing ? fc[i].missing : "", g_n_launched, g_n_launched > 3 ? g_launched[3] : "-", g_grid_x[3],
               g_grid_y[3], good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_pf_knob = NULL, g_mmq_wg_sd_knob = NULL, g_missing_kernel = NULL, g_xe_rem_knob = NULL;
    /* MEMRA_MMQ_XE_QS=1: _wgs's quick-start twin (_wgs_q) in its place, the same grid, shared memory and remainder
     * launch; refused, with the tile that would run without it kept, under the folds in turn (_wgspp), beside
     * XE_PF=1 (_wgs_pf), beside XE_WG_REM=1 (_wgsr) and for an image without it (_wgs) */
    static const struct {
        const char *missing, *seed, *pf, *rem;
        const char *tile;
    } qc[] = {{NULL, "1", NULL, NULL, "memra_k_experts_q8_0r_wgs_q"},
              {NULL, "pp", NULL, NULL, "memra_k_experts_q8_0r_wgspp"},
              {NULL, "1", "1", NULL, "memra_k_experts_q8_0r_wgs_pf"},
              {NULL, "1", NULL, "1", "memra_k_experts_q8_0r_wgsr"},
              {"experts_q8_0r_wgs_q", "1", NULL, NULL, "memra_k_experts_q8_0r_wgs"}};
    for (size_t i = 0; i < sizeof qc / sizeof qc[0]; i++) {
        mod m;
        g_xe_qs_knob = "1", g_xe_pf_knob = qc[i].pf, g_mmq_wg_sd_knob = qc[i].seed, g_xe_wg_knob = "1";
        g_missing_kernel = qc[i].missing, g_xe_rem_knob = qc[i].rem, g_xe_bm_knob = NULL;
        const int w0 = g_n_warn;
        if (!open_mod(so, 90, &m)) return 0;
        const int warns = g_n_warn - w0; /* the refusal's one warning at load; none where the twin loaded */
        const memra_status st = xe_call(&m, 1024, 256, 0);
        const int nl = qc[i].rem ? 4 : 5;
        int good = st == MEMRA_STATUS_OK && g_n_launched == nl && strcmp(g_launched[0], "memra_k_experts_route") == 0 &&
                   strcmp(g_launched[3], qc[i].tile) == 0 && g_grid_x[3] == 1024 / 128 + 8 + (qc[i].rem ? 8 : 0) &&
                   g_grid_y[3] == 3 && g_smem[3] == (unsigned)R3W_SMEM_BYTES_SD(1) && warns == (i == 0 ? 0 : 1);
        if (!qc[i].rem) good &= strcmp(g_launched[4], "memra_k_experts_q8_0r_mt1_sb") == 0;
        printf("  XE_WG=1 XE_QS=1 WG_SEED=%s%s%s%s%s cc 90 gemm_experts q8_0 m 1024 E 8: %d launches, tile %s on %u x %u, "
               "%d warnings at load  %s\n",
               qc[i].seed, qc[i].pf ? ", XE_PF=1" : "", qc[i].rem ? ", XE_WG_REM=1" : "",
               qc[i].missing ? ", image without " : "", qc[i].missing ? qc[i].missing : "", g_n_launched,
               g_n_launched > 3 ? g_launched[3] : "-", g_grid_x[3], g_grid_y[3], warns, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_qs_knob = NULL, g_xe_pf_knob = NULL, g_mmq_wg_sd_knob = NULL, g_missing_kernel = NULL, g_xe_rem_knob = NULL;
    /* MEMRA_MMQ_XE_RASTER: 1 (and unset: the default) launches the tile on a 1-D grid of tiles_max x 3 CTAs
     * (n = 300: 3 row blocks), auto where the mean expert has 384 rows or more (4096 rows over 8), auto below it and
     * 0 the plain grid; with XE_WG_REM=1 the combined grid stays plain */
    static const struct {
        const char *knob, *rem;
        int rows;
        unsigned gx, gy;
        const char *tile;
    } xr[] = {{"1", NULL, 1024, (1024 / 128 + 8) * 3, 1, "memra_k_experts_q8_0r_wgs" PIN_SFX},
              {"auto", NULL, 1024, 1024 / 128 + 8, 3, "memra_k_experts_q8_0r_wgs" PIN_SFX},
              {NULL, NULL, 4096, (4096 / 128 + 8) * 3, 1, "memra_k_experts_q8_0r_wgs" PIN_SFX},
              {"0", NULL, 4096, 4096 / 128 + 8, 3, "memra_k_experts_q8_0r_wgs" PIN_SFX},
              {"auto", NULL, 4096, (4096 / 128 + 8) * 3, 1, "memra_k_experts_q8_0r_wgs" PIN_SFX},
              {"1", "1", 1024, 1024 / 128 + 8 + 8, 3, "memra_k_experts_q8_0r_wgsr"}};
    for (size_t i = 0; i < sizeof xr / sizeof xr[0]; i++) {
        mod m;
        g_xe_raster_knob = xr[i].knob, g_xe_wg_knob = "1", g_xe_rem_knob = xr[i].rem, g_xe_bm_knob = NULL;
        g_mmq_wg_sd_knob = xr[i].rem ? "1" : NULL;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, xr[i].rows, 256, 0);
        const int good = st == MEMRA_STATUS_OK && g_n_launched > 3 && strcmp(g_launched[3], xr[i].tile) == 0 &&
                         g_grid_x[3] == xr[i].gx && g_grid_y[3] == xr[i].gy && g_grid_z[3] == 1;
        printf("  XE_WG=1 XE_RASTER=%s%s cc 90 gemm_experts q8_0 m %d E 8: tile %s on %u x %u x %u (want %u x %u)  %s\n",
               xr[i].knob ? xr[i].knob : "unset", xr[i].rem ? ", XE_WG_REM=1" : "", xr[i].rows,
               g_n_launched > 3 ? g_launched[3] : "-", g_grid_x[3], g_grid_y[3], g_grid_z[3], xr[i].gx, xr[i].gy,
               good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_raster_knob = "0", g_xe_rem_knob = NULL, g_mmq_wg_sd_knob = NULL;
    /* MEMRA_MMQ_XE_WG_REM=1: the remainders (at most 32 rows) in the tile's grid, _wgsr on (tiles_max + the remainder
     * table's E) x 3 x S CTAs, and no remainder launch (split: the slices' sum after it; with XE_OVERLAP=1 too: the
     * same); refused (the image without _wgsr, or the folds in turn asked): _wgs / _wgspp and the 32-row launch */
    static const struct {
        const char *missing, *split, *seed;
        int ovl, rem;
        const char *tile;
    } mc[] = {{NULL, NULL, "1", 0, 1, "memra_k_experts_q8_0r_wgsr"},
              {NULL, "2", "1", 0, 1, "memra_k_experts_q8_0r_wgsr"},
              {NULL, NULL, "1", 1, 1, "memra_k_experts_q8_0r_wgsr"},
              {"q8_0r_wgsr", NULL, "1", 0, 0, "memra_k_experts_q8_0r_wgs"},
              {NULL, NULL, "pp", 0, 0, "memra_k_experts_q8_0r_wgspp"},
#if MMQ_WG_SEED_PIN_DEFAULT
              {NULL, NULL, NULL, 0, 0, "memra_k_experts_q8_0r_wgsf"}
#else
              {NULL, NULL, NULL, 0, 1, "memra_k_experts_q8_0r_wgsr"}
#endif
    };
    for (size_t i = 0; i < sizeof mc / sizeof mc[0]; i++) {
        mod m;
        g_xe_rem_knob = "1", g_xe_wg_knob = "1", g_missing_kernel = mc[i].missing, g_xe_split_knob = mc[i].split;
        g_mmq_wg_sd_knob = mc[i].seed, g_xe_ovl_knob = mc[i].ovl ? "1" : NULL, g_xe_bm_knob = NULL;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, 1024, 256, 0);
        const unsigned S = mc[i].split ? 2u : 1u;
        const int nl = 4 + !mc[i].rem + (S > 1);
        int good = st == MEMRA_STATUS_OK && g_n_launched == nl && strcmp(g_launched[3], mc[i].tile) == 0 &&
                   g_grid_y[3] == 3 && g_grid_z[3] == S && g_block_x[3] == 384 &&
                   g_smem[3] == (unsigned)R3W_SMEM_BYTES_SD(1) && g_pdl[3] == 1;
        good &= g_grid_x[3] == (mc[i].rem ? 1024u / 128 + 8 + 8 : 1024u / 128 + 8);
        if (!mc[i].rem) good &= g_n_launched > 4 && strcmp(g_launched[4], "memra_k_experts_q8_0r_mt1_sb") == 0;
        if (S > 1) good &= strcmp(g_launched[nl - 1], "memra_k_experts_splitk_sum") == 0;
        printf("  XE_WG=1 XE_WG_REM=1%s%s%s%s%s%s cc 90 gemm_experts q8_0 m 1024 E 8: %d launches, tile %s on %u x %u x %u, "
               "then %s  %s\n",
               mc[i].split ? ", XE_SPLIT=2" : "", mc[i].ovl ? ", XE_OVERLAP=1" : "", mc[i].seed ? ", WG_SEED=" : "",
               mc[i].seed ? mc[i].seed : "",
               mc[i].missing ? ", image without " : "", mc[i].missing ? mc[i].missing : "", g_n_launched,
               g_n_launched > 3 ? g_launched[3] : "-", g_grid_x[3], g_grid_y[3], g_grid_z[3],
               g_n_launched > 4 ? g_launched[4] : "-", good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_rem_knob = NULL, g_mmq_wg_sd_knob = NULL, g_xe_ovl_knob = NULL, g_missing_kernel = NULL, g_xe_split_knob = NULL;
    /* a call whose rows pick a shorter table than the 128-row one: a warning where MEMRA_MMQ_XE_WG=1 asked for the
     * tile (a test must not pass on the records tiles), none under auto or at 128 rows an expert; two calls each, the
     * warning once a module (memra_stream_reserve runs the call at every m up to 1024: run s1 logged 191) */
    static const struct {
        const char *knob;
        int rows, warns;
    } nc[] = {{"1", 100, 1}, {NULL, 100, 0}, {"1", 1024, 0}};
    for (size_t i = 0; i < sizeof nc / sizeof nc[0]; i++) {
        mod m;
        g_xe_wg_knob = nc[i].knob;
        if (!open_mod(so, 90, &m)) return 0;
        const int w0 = g_n_warn;
        const memra_status st = xe_call(&m, nc[i].rows, 256, 0);
        const memra_status st2 = xe_call(&m, nc[i].rows, 256, 0);
        const int good = st == MEMRA_STATUS_OK && st2 == MEMRA_STATUS_OK && g_n_warn - w0 == nc[i].warns;
        printf("  XE_WG=%s cc 90 gemm_experts q8_0 m %d E 8, two calls: %d warnings (want %d)  %s\n",
               nc[i].knob ? nc[i].knob : "unset", nc[i].rows, g_n_warn - w0, nc[i].warns, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_wg_knob = NULL;
    /* the maps' or the sorted records' scratch refused (a capture without a reservation for it): the
     * records tiles, sorted (_mt4_sb, _mt1_sb) or gathering (_mt4, _mt1), and neither kernel of the knob */
    static const struct {
        const char *refuse, *tile, *rem;
    } rc[] = {{"experts.maps", "memra_k_experts_q8_0r_mt4_sb", "memra_k_experts_q8_0r_mt1_sb"},
              {"experts.xs", "memra_k_experts_q8_0r_mt4", "memra_k_experts_q8_0r_mt1"}};
    g_xe_wg_knob = "1", g_missing_kernel = NULL, g_xe_ovl_knob = NULL, g_xe_split_knob = NULL, g_xe_bm_knob = NULL;
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        mod m;
        g_scratch_refuse = rc[i].refuse;
        if (!open_mod(so, 90, &m)) return 0;
        const memra_status st = xe_call(&m, 1024, 256, 0);
        int wg = 0, tile = 0, rem = 0;
        for (int l = 0; l < g_n_launched && l < 16; l++) {
            wg += strstr(g_launched[l], "_wgs") != NULL || strstr(g_launched[l], "maps_q8_0r") != NULL;
            tile += strcmp(g_launched[l], rc[i].tile) == 0;
            rem += strcmp(g_launched[l], rc[i].rem) == 0;
        }
        const int good = st == MEMRA_STATUS_OK && wg == 0 && tile == 1 && rem == 1;
        printf("  XE_WG=1 cc 90, scratch \"%s\" refused: %d launches (%s, %s); want %s and %s, no warpgroup tile  %s\n",
               rc[i].refuse, g_n_launched, g_n_launched > 1 ? g_launched[1] : "-", g_n_launched > 2 ? g_launched[2] : "-",
               rc[i].tile, rc[i].rem, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        g_scratch_refuse = NULL;
        ok &= close_mod(&m, 1);
    }
    g_xe_wg_knob = NULL, g_missing_kernel = NULL, g_no_tmap = 0;
    g_xe_sort_knob = NULL, g_xe_bm_knob = NULL, g_xe_split_knob = NULL, g_xe_ovl_knob = NULL;
    return ok;
}

/* A records tile's grid of at most one CTA an SM, launched as a dependent, asks for more than half the SM's
 * shared memory, so that no SM holds two of its CTAs (runs l2 / n3: with PDL, 5120->1024 at m = 768 on 12 x 11
 * CTAs of the 64 x 96 tile ran 0.098 ms against 0.055 without); a larger grid, MEMRA_MMQ_PDL=pack and =0 ask
 * for the tile's own bytes, and the fake driver refuses a launch past the function's set limit. Records plan
 * (MEMRA_MMQ_WG=0), cc 9.0 (132 SMs, 227 KB a block: past half is 115968 bytes). */
static int mmq_one_pad(const char *so)
{
    static const struct {
        const char *pdl; /* MEMRA_MMQ_PDL */
        int m, n, k;
        const char *tile;
        unsigned gx, gy, smem; /* the tile's launch: its grid and dynamic shared memory */
        int dep;               /* launched as a dependent */
    } cs[] = {
        {NULL, 768, 1024, 5120, "memra_k_gemm_q8_0r_mt2n3b", 12, 11, 115968, 1},
        {"pack", 768, 1024, 5120, "memra_k_gemm_q8_0r_mt2n3b", 12, 11, R3_SMEM_BYTES(2, 3), 1},
        {"0", 768, 1024, 5120, "memra_k_gemm_q8_0r_mt2n3b", 12, 11, R3_SMEM_BYTES(2, 3), 0},
        {"1", 384, 5120, 6144, "memra_k_gemm_q8_0r_mt4b", 3, 40, 115968, 1},
        {NULL, 4096, 12288, 5120, "memra_k_gemm_q8_0r_mt4n3b", 32, 128, R3_SMEM_BYTES(4, 3), 1},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        mod m;
        g_mmq_pdl_knob = cs[i].pdl;
        const int opened = open_mod(so, 90, &m);
        g_mmq_pdl_knob = NULL;
        if (!opened) return 0;
        memra_call c = call_of(&m);
        memra_gemm_args a = gemm(cs[i].m, cs[i].n, cs[i].k);
        const memra_status st = m.desc->ops->gemm_q8_0r(&c, &a);
        const int good = st == MEMRA_STATUS_OK && g_n_launched == 1 && strcmp(g_launched[0], cs[i].tile) == 0 &&
                         g_grid_x[0] == cs[i].gx && g_grid_y[0] == cs[i].gy && g_grid_z[0] == 1 &&
                         g_smem[0] == cs[i].smem && g_pdl[0] == cs[i].dep;
        printf("  gemm_q8_0r m %d %d->%d MEMRA_MMQ_PDL=%s: status %d, %d launches, %s %u x %u x %u, smem %u, pdl %d; "
               "want %s %u x %u x 1, smem %u, pdl %d  %s\n",
               cs[i].m, cs[i].k, cs[i].n, cs[i].pdl ? cs[i].pdl : "(unset)", (int)st, g_n_launched,
               g_n_launched ? g_launched[0] : "-", g_grid_x[0], g_grid_y[0], g_grid_z[0], g_smem[0], g_pdl[0], cs[i].tile,
               cs[i].gx, cs[i].gy, cs[i].smem, cs[i].dep, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    return ok;
}

/* MEMRA_MMQ_QUANT_LEAN=1: quant_q8_1 on memra_k_quant_q8_1l, grid (ceil(m / 64), records a row = ceil(k / 512) 4),
 * 256 threads, a dependent; unset or 0, or where the image lacks the kernel, memra_k_quant_q8_1 on the capped 1-D grid */
static int mmq_quant_lean(const char *so)
{
    static const struct {
        const char *knob, *missing;
        int m, k;
        const char *kernel;
        unsigned gx, gy;
    } cs[] = {
        {"1", NULL, 512, 5120, "memra_k_quant_q8_1l", 8, 40},
        {"1", NULL, 4096, 17408, "memra_k_quant_q8_1l", 64, 136},
        {"1", NULL, 1, 32, "memra_k_quant_q8_1l", 1, 4},
        {"1", NULL, 300, 1501, "memra_k_quant_q8_1l", 5, 12},
        {NULL, NULL, 512, 5120, "memra_k_quant_q8_1l", 8, 40},       /* the default since run r2 */
        {NULL, "quant_q8_1l", 512, 5120, "memra_k_quant_q8_1", 320, 1},
        {"0", NULL, 512, 5120, "memra_k_quant_q8_1", 320, 1},        /* 20480 records, 64 a block */
        {"0", NULL, 4096, 17408, "memra_k_quant_q8_1", 132 * 16, 1}, /* the grid's cap: 16 blocks an SM */
        {"1", "quant_q8_1l", 512, 5120, "memra_k_quant_q8_1", 320, 1},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        mod m;
        g_mmq_lean_knob = cs[i].knob, g_missing_kernel = cs[i].missing;
        const int opened = open_mod(so, 90, &m);
        g_mmq_lean_knob = NULL, g_missing_kernel = NULL;
        if (!opened) return 0;
        memra_call c = call_of(&m);
        const memra_status st = m.desc->ops->quant_q8_1(&c, 0x1000, cs[i].m, cs[i].k, 0x2000);
        const int good = st == MEMRA_STATUS_OK && g_n_launched == 1 && strcmp(g_launched[0], cs[i].kernel) == 0 &&
                         g_grid_x[0] == cs[i].gx && g_grid_y[0] == cs[i].gy && g_grid_z[0] == 1 && g_block_x[0] == 256 &&
                         g_smem[0] == 0 && g_pdl[0] == 1;
        printf("  quant_q8_1 m %d k %d MEMRA_MMQ_QUANT_LEAN=%s%s: status %d, %d launches, %s %u x %u; want %s %u x %u  %s\n",
               cs[i].m, cs[i].k, cs[i].knob ? cs[i].knob : "(unset)", cs[i].missing ? " (no kernel)" : "", (int)st,
               g_n_launched, g_n_launched ? g_launched[0] : "-", g_grid_x[0], g_grid_y[0], cs[i].kernel, cs[i].gx,
               cs[i].gy, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    return ok;
}

/* MEMRA_MMQ_WG_SK=1 (with MEMRA_MMQ_WG=all on cc 9.0): the stream-k tile on min(132, units) CTAs (a unit: a
 * 128 x 128 tile's 128-deep step), then its fix-up on one block a tile, both dependents; with
 * MEMRA_MMQ_WG_PERSIST or without the kernel, the seeded tile as before (and a warning, not counted here) */
static int mmq_sk(const char *so)
{
    static const struct {
        int m, n, k;
        const char *per, *missing;
        unsigned grid, rem; /* grid 0: not the stream-k tile; rem: the tiles past the whole waves (the fix-up's) */
        const char *sk, *wg; /* MEMRA_MMQ_WG_SK (NULL: 1; "unset": unset, the default auto), MEMRA_MMQ_WG (NULL: all) */
    } cs[] = {
        /* unset: auto */
        {512, 5120, 6144, NULL, NULL, 132, 28, "unset", "auto"},
        {512, 12288, 5120, NULL, NULL, 0, 0, "unset", "auto"},
        /* 0: never */
        {512, 5120, 6144, NULL, NULL, 0, 0, "0", "auto"},
        /* auto, under the default MEMRA_MMQ_WG (auto): 160 tiles (a last wave of 28 of 132) take it, 384 (120 of
         * 132) and 3072 (23 waves) do not, nor 32 (under one wave) */
        {512, 5120, 6144, NULL, NULL, 132, 28, "auto", "auto"},
        {512, 5120, 17408, NULL, NULL, 132, 28, "auto", "auto"},
        {512, 12288, 5120, NULL, NULL, 0, 0, "auto", "auto"},
        {4096, 12288, 5120, NULL, NULL, 0, 0, "auto", "auto"},
        {512, 1024, 5120, NULL, NULL, 0, 0, "auto", "auto"},
        {512, 5120, 6144, NULL, NULL, 132, 28, NULL, NULL},  /* 160 tiles x 48 steps: one wave whole, 28 tiles split */
        {100, 300, 256, NULL, NULL, 6, 3, NULL, NULL},       /* 3 tiles x 2 steps: fewer units than SMs, all split */
        {4096, 1024, 5120, NULL, NULL, 132, 124, NULL, NULL}, /* 256 tiles */
        {1024, 4224, 512, NULL, NULL, 132, 0, NULL, NULL},   /* 264 tiles: two whole waves, no fix-up */
        {512, 5120, 6144, "1", NULL, 0, 0, NULL, NULL},
        {512, 5120, 6144, NULL, "gemm_q8_0r_skfix", 0, 0, NULL, NULL},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        mod m;
        g_mmq_wg_knob = cs[i].wg ? cs[i].wg : "all";
        g_mmq_sk_knob = cs[i].sk == NULL ? "1" : strcmp(cs[i].sk, "unset") == 0 ? NULL : cs[i].sk;
        g_mmq_wg_per_knob = cs[i].per, g_missing_kernel = cs[i].missing;
        g_mmq_wg_sd_knob = "1"; /* the unpinned tile, _wgsk (the pinned twin's picks below) */
        const int opened = open_mod(so, 90, &m);
        g_mmq_sk_knob = NULL, g_mmq_wg_per_knob = NULL, g_missing_kernel = NULL, g_mmq_wg_sd_knob = NULL;
        if (!opened) {
            g_mmq_wg_knob = "0";
            return 0;
        }
        memra_call c = call_of(&m);
        memra_gemm_args a = gemm(cs[i].m, cs[i].n, cs[i].k);
        const memra_status st = m.desc->ops->gemm_q8_0r(&c, &a);
        int good = st == MEMRA_STATUS_OK;
        if (cs[i].grid) {
            good &= g_n_launched == 1 + (cs[i].rem > 0) && strcmp(g_launched[0], "memra_k_gemm_q8_0r_wgsk") == 0 &&
                    g_grid_x[0] == cs[i].grid && g_grid_y[0] == 1 && g_grid_z[0] == 1 && g_block_x[0] == 384 &&
                    g_smem[0] == (unsigned)R3W_SMEM_BYTES_SD(1) && g_pdl[0] == 1;
            if (cs[i].rem > 0)
                good &= strcmp(g_launched[1], "memra_k_gemm_q8_0r_skfix") == 0 && g_grid_x[1] == cs[i].rem &&
                        g_grid_y[1] == 16 && g_block_x[1] == 256 && g_smem[1] == 0 && g_pdl[1] == 1;
        } else {
            /* the plain tiles: under =1 the seeded tile, under auto whatever the plan picks */
            good &= g_n_launched >= 1 && strstr(g_launched[0], "_wgsk") == NULL &&
                    (g_n_launched < 2 || strstr(g_launched[1], "skfix") == NULL) &&
                    (cs[i].sk != NULL || strstr(g_launched[0], "memra_k_gemm_q8_0r_wg") != NULL);
        }
        printf("  gemm_q8_0r m %d %d->%d MEMRA_MMQ_WG_SK=%s%s%s%s: status %d, %d launches, %s %u, %s %u  %s\n", cs[i].m,
               cs[i].k, cs[i].n, cs[i].sk ? cs[i].sk : "1", cs[i].per ? " PERSIST=" : "", cs[i].per ? cs[i].per : "",
               cs[i].missing ? " (no skfix)" : "", (int)st, g_n_launched, g_n_launched ? g_launched[0] : "-", g_grid_x[0],
               g_n_launched > 1 ? g_launched[1] : "-", g_grid_x[1], good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    /* MEMRA_MMQ_WG_SEED=pin (and unset, where pin is mmq.h's default): the stream-k twin with the fold pinned
     * (_wgskf) where SEED=1 takes _wgsk, and =iadd its twin without the seed wgmma (_wgski) (auto and the plain tile's
     * defaults otherwise: 6144->5120 at m 512 is 160 tiles, 5120->12288 is not taken) */
    static const struct {
        int m, k, n;
        unsigned grid, rem;
        const char *want, *seed;
    } pcs[] = {{512, 6144, 5120, 132, 28, "memra_k_gemm_q8_0r_wgskf", "pin"},
               {512, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgsf", "pin"},
               {4096, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgsf", "pin"},
               {512, 6144, 5120, 132, 28, "memra_k_gemm_q8_0r_wgsk" PIN_SFX, NULL},
               {4096, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgs" PIN_SFX, NULL},
               {512, 6144, 5120, 132, 28, "memra_k_gemm_q8_0r_wgsk", "1"},
               {4096, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgs", "1"},
               /* iadd: its stream-k twin _wgski (no seed wgmma) */
               {512, 6144, 5120, 132, 28, "memra_k_gemm_q8_0r_wgski", "iadd"},
               {512, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgsi", "iadd"},
               {4096, 5120, 12288, 0, 0, "memra_k_gemm_q8_0r_wgsi", "iadd"}};
    for (size_t i = 0; i < sizeof pcs / sizeof pcs[0]; i++) {
        mod m;
        g_mmq_wg_knob = "auto", g_mmq_sk_knob = NULL, g_mmq_wg_sd_knob = pcs[i].seed;
        const int opened = open_mod(so, 90, &m);
        if (!opened) {
            g_mmq_wg_knob = "0", g_mmq_wg_sd_knob = NULL;
            return 0;
        }
        memra_call c = call_of(&m);
        memra_gemm_args a = gemm(pcs[i].m, pcs[i].n, pcs[i].k);
        const memra_status st = m.desc->ops->gemm_q8_0r(&c, &a);
        int good = st == MEMRA_STATUS_OK && g_n_launched >= 1 && strcmp(g_launched[0], pcs[i].want) == 0;
        if (pcs[i].grid)
            good &= g_grid_x[0] == pcs[i].grid && g_n_launched == 2 && strcmp(g_launched[1], "memra_k_gemm_q8_0r_skfix") == 0 &&
                    g_grid_x[1] == pcs[i].rem;
        printf("  gemm_q8_0r m %d %d->%d MEMRA_MMQ_WG_SEED=%s (WG, SK unset): %d launches, %s %u  %s\n", pcs[i].m,
               pcs[i].k, pcs[i].n, pcs[i].seed ? pcs[i].seed : "unset", g_n_launched, g_n_launched ? g_launched[0] : "-", g_grid_x[0], good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_mmq_wg_sd_knob = NULL;
    g_mmq_wg_knob = "0";
    return ok;
}

static int case_mmq(const char *so)
{
    mod m;
    /* the records' gather into expert order is the default; off here, so that the grouped cases
     * below see the gathering tiles they name (the sorted ones at the end) */
    g_xe_sort_knob = "0";
    g_xe_f16_knob = "0"; /* the 16-bit lanes off: declined by name below (h16_cases: on) */
    const int opened = open_mod(so, 90, &m);
    g_xe_f16_knob = NULL;
    if (!opened) return 0;
    int ok = 1;
    memra_call c = call_of(&m);
    memra_gemm_args a = gemm(100, 300, 256);
    ok &= launched("gemm_q8_0", m.desc->ops->gemm_q8_0(&c, &a), 1, (const char *[]){"memra_k_gemm_q8_0"},
                   (const int[]){0});
    static const memra_format kq[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const char *const kq_tile[] = {"memra_k_gemm_kr_q4_k_mt", "memra_k_gemm_kr_q5_k_mt", "memra_k_gemm_kr_q6_k_mt"};
    for (int f = 0; f < 3; f++) { /* each K-quant on its own kernels */
        memra_gemm_args kr = a;
        kr.w_format = (int32_t)kq[f];
        c = call_of(&m);
        ok &= launched(kq_tile[f], m.desc->ops->gemm_kr(&c, &kr), 1, &kq_tile[f], (const int[]){-1});
    }
    /* the H200 plan at m = 4096 (run b2's refit of the 128 x 96 step): 128 x 96 at 5120->12288,
     * 128 x 128 at 17408->5120; gemm_kr (Q4_K on its TF32 fold and the sum plane by default) keeps the unrefitted step: 128 x 128 at 5120->12288 */
    static const struct { int n, k; const char *tile; } plan[] = {
        {12288, 5120, "memra_k_gemm_q8_0r_mt4n3b"}, {17408, 5120, "memra_k_gemm_q8_0r_mt4n3b"},
        {5120, 17408, "memra_k_gemm_q8_0r_mt4b"}, {5120, 6144, "memra_k_gemm_q8_0r_mt4b"}};
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        memra_gemm_args p = gemm(4096, plan[i].n, plan[i].k);
        c = call_of(&m);
        ok &= launched_exact("gemm_q8_0r plan m=4096", m.desc->ops->gemm_q8_0r(&c, &p), 1, &plan[i].tile,
                             (const int[]){-1});
    }
    {
        memra_gemm_args p = gemm(4096, 12288, 5120);
        p.w_format = (int32_t)MEMRA_FORMAT_Q4_K;
        c = call_of(&m);
        ok &= launched_exact("gemm_kr plan m=4096", m.desc->ops->gemm_kr(&c, &p), 1,
                             (const char *[]){"memra_k_gemm_kr_q4_k_mt4txb"}, (const int[]){-1});
    }
    c = call_of(&m);
    ok &= launched("accprobe s32", m.desc->ops->accprobe(&c, MEMRA_ACCPROBE_S32, &a), 1,
                   (const char *[]){"memra_k_probe_s32"}, (const int[]){0});
    c = call_of(&m);
    ok &= declined("accprobe mx on cc 9.0", m.desc->ops->accprobe(&c, MEMRA_ACCPROBE_MX, &a), &c, "sm_120a");
    c = call_of(&m);
    ok &= launched("repack_q8_0", m.desc->ops->repack_q8_0(&c, 0x1000, 256, 512, 0x2000), 1,
                   (const char *[]){"memra_k_repack_q8_0"}, (const int[]){0});
    /* gemm_experts (issue 30): the routing kernel then the grouped tile kernel (a dependent
     * launch) on a grid of the worst case, ceil(n / 128) column tiles by ceil(m / bm) + E row
     * tiles, bm from the mean rows per expert (m / E: 12.5 -> 32, 64 -> 64, 128 -> 128), and above
     * 32 rows the remainder tile (32 rows) on min(E, m) row tiles, one per expert at most; no
     * host read in between (the fake driver has no copies); K-quant experts on their own
     * kernels; other lanes declined */
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 100, 8, "memra_k_experts_q8_0r_mt1", 3, 4 + 8, NULL, 0);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 512, 8, "memra_k_experts_q8_0r_mt2", 3, 16, "memra_k_experts_q8_0r_mt1", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 1024, 8, "memra_k_experts_q8_0r_mt4", 3, 16, "memra_k_experts_q8_0r_mt1", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q4_K, 4096, 128, "memra_k_experts_kr_q4_k_mt1", 3, 128 + 128, NULL, 0);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q5_K, 512, 8, "memra_k_experts_kr_q5_k_mt2", 3, 16, "memra_k_experts_kr_q5_k_mt1", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q6_K, 1024, 8, "memra_k_experts_kr_q6_k_mt4", 3, 16, "memra_k_experts_kr_q6_k_mt1", 8);
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_f16, .n_experts = 8,
                                  .ids = 0x60000000};
    c = call_of(&m);
    ok &= declined("gemm_experts f16 lane", m.desc->ops->gemm_experts(&c, &a, &ex), &c, "MEMRA_MMQ_XE_F16=0");
    ex.lane = MEMRA_OP_gemm_fp8;
    c = call_of(&m);
    ok &= declined("gemm_experts fp8 lane", m.desc->ops->gemm_experts(&c, &a, &ex), &c, "gemm_q8_0r and gemm_kr lanes");
    ex.lane = MEMRA_OP_gemm_q8_0r, ex.n_experts = 5000;
    c = call_of(&m);
    ok &= declined("gemm_experts 5000 experts", m.desc->ops->gemm_experts(&c, &a, &ex), &c, "4096 experts");
    ex.lane = MEMRA_OP_gemm_kr, ex.n_experts = 8;
    c = call_of(&m);
    {
        const memra_status ks = m.desc->ops->gemm_experts(&c, &a, &ex); /* no K-quant w_format */
        printf("  gemm_experts gemm_kr without a K-quant w_format: status %d  %s\n", (int)ks,
               ks == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0 ? "ok" : "FAIL");
        ok &= ks == MEMRA_STATUS_INVALID_ARGUMENT && g_n_launched == 0;
        g_n_launched = 0;
    }
    ok &= close_mod(&m, 1);
    /* sm_120's 99 KB: the 128-row grouped tiles do not load, a mean of 128 rows takes 64 */
    if (!open_mod(so, 120, &m)) return 0;
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 1024, 8, "memra_k_experts_q8_0r_mt2", 3, 16 + 8, "memra_k_experts_q8_0r_mt1", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q6_K, 1024, 8, "memra_k_experts_kr_q6_k_mt2", 3, 16 + 8, "memra_k_experts_kr_q6_k_mt1", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q4_K, 100, 8, "memra_k_experts_kr_q4_k_mt1", 3, 4 + 8, NULL, 0);
    ok &= close_mod(&m, 1);
    /* MEMRA_MMQ_XE_BM=32 forces the 32-row tile where the mean would take 128 */
    g_xe_bm_knob = "32";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 1024, 8, "memra_k_experts_q8_0r_mt1", 3, 32 + 8, NULL, 0);
    g_xe_bm_knob = NULL;
    ok &= close_mod(&m, 1);
    /* MEMRA_MMQ_XE_SPLIT=3: both tile launches on 3 k slices (grid.z), then the split-k sum over
     * the routed rows (a dependent launch); unforced at k = 256 nothing splits (above: grid.z 1) */
    g_xe_split_knob = "3";
    if (!open_mod(so, 90, &m)) return 0;
    {
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(1024, 300, 4096);
        memra_gemm_experts_args ex2 = {.struct_size = sizeof ex2, .lane = MEMRA_OP_gemm_q8_0r, .n_experts = 8,
                                       .ids = 0x60000000};
        const memra_status st2 = m.desc->ops->gemm_experts(&c2, &a2, &ex2);
        const unsigned z1 = g_grid_z[1], z2 = g_grid_z[2], y3 = g_grid_y[3];
        int k_ok = launched("gemm_experts split 3", st2, 4,
                            (const char *[]){"memra_k_experts_route", "memra_k_experts_q8_0r_mt4",
                                             "memra_k_experts_q8_0r_mt1", "memra_k_experts_splitk_sum"},
                            (const int[]){0, 1, 1, 1});
        const int zs = z1 == 3 && z2 == 3 && y3 == 1024;
        printf("    grid.z %u and %u (want 3 and 3), the sum over %u rows (want 1024)  %s\n", z1, z2, y3,
               zs ? "ok" : "FAIL");
        ok &= k_ok && zs;
    }
    g_xe_split_knob = NULL;
    ok &= close_mod(&m, 1);
    /* MEMRA_MMQ_XE_MERGE=1: the full and the remainder tiles in one grid, the tiles on grid.x
     * (the full tiles' worst case first, x 0 .. 15, the remainders' after it, 16 .. 23) and the
     * 3 column blocks on grid.y, one dependent launch after the routing; where no remainder
     * table exists (a mean of 12.5 rows: 32-row tiles only) the single table as before */
    g_xe_merge_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 1024, 8, "memra_k_experts_q8_0r_mt4r1", 16 + 8, 3, NULL, 0);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 512, 8, "memra_k_experts_q8_0r_mt2r1", 16 + 8, 3, NULL, 0);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q6_K, 1024, 8, "memra_k_experts_kr_q6_k_mt4r1", 16 + 8, 3, NULL, 0);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 100, 8, "memra_k_experts_q8_0r_mt1", 3, 4 + 8, NULL, 0);
    g_xe_merge_knob = NULL;
    ok &= close_mod(&m, 1);
    /* MEMRA_MMQ_XE_OVERLAP=1: the same two launches on the _o1 full tile (it lets the remainder
     * launch start early) and the _o2 remainder tile (it waits at its end); one table alone (a
     * mean of 12.5 rows) and a split launch keep the plain kernels */
    g_xe_ovl_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 1024, 8, "memra_k_experts_q8_0r_mt4_o1", 3, 16,
                         "memra_k_experts_q8_0r_mt1_o2", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 512, 8, "memra_k_experts_q8_0r_mt2_o1", 3, 16,
                         "memra_k_experts_q8_0r_mt1_o2", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_kr, MEMRA_FORMAT_Q5_K, 1024, 8, "memra_k_experts_kr_q5_k_mt4_o1", 3, 16,
                         "memra_k_experts_kr_q5_k_mt1_o2", 8);
    ok &= experts_launch(&m, MEMRA_OP_gemm_q8_0r, 0, 100, 8, "memra_k_experts_q8_0r_mt1", 3, 4 + 8, NULL, 0);
    g_xe_ovl_knob = NULL;
    ok &= close_mod(&m, 1);
    /* the default (MEMRA_MMQ_XE_SORT unset): the routing, the records' gather into expert order (a
     * plain launch on ceil(9 m / 256) x 2 steps of 128, 256 threads), then the _s tiles, the
     * remainders after them (dependent launches); one table alone the same; with the overlap knob
     * too, the sort wins */
    g_xe_sort_knob = NULL;
    g_xe_ovl_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    {
        const char *want[2][4] = {
            {"memra_k_experts_route", "memra_k_experts_gather_q8_1", "memra_k_experts_q8_0r_mt4_sb",
             "memra_k_experts_q8_0r_mt1_sb"}, /* cc 9.0: the bulk-copy sorted tiles by default */
            {"memra_k_experts_route", "memra_k_experts_gather_q8_1", "memra_k_experts_kr_q6_k_mt1_s", NULL}};
        const int rows[2] = {1024, 100};
        const memra_op lanes[2] = {MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_kr};
        const memra_format fmts[2] = {0, MEMRA_FORMAT_Q6_K};
        for (int i = 0; i < 2; i++) {
            memra_call c2 = call_of(&m);
            memra_gemm_args a2 = gemm(rows[i], 300, 256);
            a2.w_format = (int32_t)fmts[i];
            memra_gemm_experts_args ex2 = {.struct_size = sizeof ex2, .lane = (int32_t)lanes[i], .n_experts = 8,
                                           .ids = 0x60000000};
            const memra_status st2 = m.desc->ops->gemm_experts(&c2, &a2, &ex2);
            const int nl = want[i][3] ? 4 : 3;
            int k_ok = launched("gemm_experts sorted", st2, nl, want[i], (const int[]){0, 0, 1, 1});
            const unsigned gx = (unsigned)((9 * rows[i] + 255) / 256);
            const int gg = g_grid_x[1] == gx && g_grid_y[1] == 2 && g_block_x[1] == 256;
            printf("    gather grid %u x %u (%u), want %u x 2 (256)  %s\n", g_grid_x[1], g_grid_y[1], g_block_x[1], gx,
                   gg ? "ok" : "FAIL");
            ok &= k_ok && gg;
        }
    }
    g_xe_sort_knob = NULL;
    g_xe_ovl_knob = NULL;
    ok &= close_mod(&m, 1);
    /* gemm_q8_0r on 64 tokens takes a 64-token tile: a rolled one by default (on cc 9.0 the
     * bulk-copy _b one), the unrolled one (_u) with MEMRA_MMQ_R3_UNROLL=1 and MEMRA_MMQ_BULK unset */
    for (int un = 0; un < 2; un++) {
        g_r3_unroll_knob = un ? "1" : NULL;
        if (!open_mod(so, 90, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(64, 300, 256);
        const memra_status st2 = m.desc->ops->gemm_q8_0r(&c2, &a2);
        const char *got = g_n_launched > 0 ? g_launched[0] : "";
        const size_t len = strlen(got);
        const int u = len > 0 && got[len - 1] == 'u';
        ok &= launched(un ? "gemm_q8_0r (R3_UNROLL=1)" : "gemm_q8_0r (64 tokens)", st2, 1,
                       (const char *[]){"memra_k_gemm_q8_0r_mt2"}, (const int[]){1});
        if (u != un) {
            printf("  gemm_q8_0r 64 tokens: %s, want the %s tile  FAIL\n", got, un ? "unrolled" : "rolled");
            ok = 0;
        }
        ok &= close_mod(&m, 1);
    }
    g_r3_unroll_knob = NULL;
    /* the bulk-copy tiles (_b) on cc 9.0 and 12.0 (the images this test module carries) by default
     * and with MEMRA_MMQ_BULK=1, the cp.async ones with =0: the 64-token call on each, exactly one
     * launch of the tile, and the grouped Q8_0 call on the matching sorted tiles */
    static const struct {
        int cc;
        const char *knob;
        int b;
    } bulk[] = {{90, NULL, 1}, {120, NULL, 1}, {90, "1", 1}, {120, "1", 1}, {90, "0", 0}, {120, "0", 0}};
    for (size_t i = 0; i < sizeof bulk / sizeof bulk[0]; i++) {
        g_mmq_bulk_knob = bulk[i].knob;
        if (!open_mod(so, bulk[i].cc, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(64, 300, 256);
        const memra_status st2 = m.desc->ops->gemm_q8_0r(&c2, &a2);
        /* a 64-token tile (mt2 or mt2n3), the _b one exactly where the knob applies */
        const char *got = g_n_launched > 0 ? g_launched[0] : "";
        const int b = (strcmp(got, "memra_k_gemm_q8_0r_mt2b") == 0 || strcmp(got, "memra_k_gemm_q8_0r_mt2n3b") == 0),
                  plain = (strcmp(got, "memra_k_gemm_q8_0r_mt2") == 0 || strcmp(got, "memra_k_gemm_q8_0r_mt2n3") == 0);
        char what[48];
        snprintf(what, sizeof what, "gemm_q8_0r BULK=%s cc %d", bulk[i].knob ? bulk[i].knob : "unset", bulk[i].cc);
        if (!(bulk[i].b ? b : plain))
            printf("  %s: %s, want the %s tile  FAIL\n", what, got, bulk[i].b ? "bulk-copy (_b)" : "cp.async");
        ok &= launched(what, st2, 1, (const char *[]){"memra_k_gemm_q8_0r_mt2"}, (const int[]){-1}) &&
              (bulk[i].b ? b : plain);
        /* gemm_experts on Q8_0 (1024 rows over 8 experts): the sorted tiles' _sb entry points, exactly */
        memra_call c3 = call_of(&m);
        memra_gemm_args a3 = gemm(1024, 300, 256);
        memra_gemm_experts_args ex3 = {.struct_size = sizeof ex3, .lane = MEMRA_OP_gemm_q8_0r, .n_experts = 8,
                                       .ids = 0x60000000};
        const memra_status st3 = m.desc->ops->gemm_experts(&c3, &a3, &ex3);
        const char *main_tile = bulk[i].cc == 120 ? (bulk[i].b ? "memra_k_experts_q8_0r_mt2_sb" : "memra_k_experts_q8_0r_mt2_s")
                                                  : (bulk[i].b ? "memra_k_experts_q8_0r_mt4_sb" : "memra_k_experts_q8_0r_mt4_s");
        const char *rem_tile = bulk[i].b ? "memra_k_experts_q8_0r_mt1_sb" : "memra_k_experts_q8_0r_mt1_s";
        const int xb = g_n_launched == 4 && strcmp(g_launched[2], main_tile) == 0 && strcmp(g_launched[3], rem_tile) == 0;
        printf("  gemm_experts q8_0 %s: %d launches, %s, %s; want %s, %s  %s\n", what, g_n_launched,
               g_n_launched > 2 ? g_launched[2] : "-", g_n_launched > 3 ? g_launched[3] : "-", main_tile, rem_tile,
               st3 == MEMRA_STATUS_OK && xb ? "ok" : "FAIL");
        ok &= st3 == MEMRA_STATUS_OK && xb;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    /* an image without the _sb tiles: the dense call on _b, the grouped one on _s; without a _b
     * tile (the 96-wide one missing): the cp.async tiles, the grouped call on _s too */
    static const char *const missing[2] = {"_sb", "n3b"};
    g_mmq_bulk_knob = "1";
    for (int i = 0; i < 2; i++) {
        g_missing_kernel = missing[i];
        if (!open_mod(so, 90, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(64, 300, 256);
        const memra_status st2 = m.desc->ops->gemm_q8_0r(&c2, &a2);
        const char *got = g_n_launched > 0 ? g_launched[0] : "";
        const int gb = got[0] != '\0' && got[strlen(got) - 1] == 'b';
        g_n_launched = 0;
        memra_call c3 = call_of(&m);
        memra_gemm_args a3 = gemm(1024, 300, 256);
        memra_gemm_experts_args ex3 = {.struct_size = sizeof ex3, .lane = MEMRA_OP_gemm_q8_0r, .n_experts = 8,
                                       .ids = 0x60000000};
        const memra_status st3 = m.desc->ops->gemm_experts(&c3, &a3, &ex3);
        const int xs = g_n_launched == 4 && strcmp(g_launched[2], "memra_k_experts_q8_0r_mt4_s") == 0 &&
                       strcmp(g_launched[3], "memra_k_experts_q8_0r_mt1_s") == 0;
        const int good = st2 == MEMRA_STATUS_OK && st3 == MEMRA_STATUS_OK && gb == (i == 0) && xs;
        printf("  BULK=1, image without \"%s\": gemm_q8_0r on %s, gemm_experts on %s  %s\n", missing[i], got,
               g_n_launched > 2 ? g_launched[2] : "-", good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        g_missing_kernel = NULL;
        ok &= close_mod(&m, 1);
    }
    g_mmq_bulk_knob = NULL;
    /* gemm_kr: the _t tiles (the min term on TF32 MMAs) for Q4_K and Q5_K by default (knob unset) and
     * with MEMRA_MMQ_KR_TC=1, for Q4_K alone with q4_k, for neither with =0; Q6_K (no min term) on its plain tiles
     * always (kq, kq_tile above). tcs[v]: the setting, then its formats on _t as bits */
    static const char *const tcs[4] = {"0", NULL, "q4_k", "1"};
    static const int tcbits_of[4] = {0, 3, 1, 3}; /* unset: both (run d3) */
    for (int v = 0; v < 4; v++) {
        g_kr_tc_knob = tcs[v];
        const int tcbits = tcbits_of[v];
        if (!open_mod(so, 90, &m)) return 0;
        for (int f = 0; f < 3; f++) {
            memra_call c2 = call_of(&m);
            memra_gemm_args a2 = gemm(512, 300, 256);
            a2.w_format = (int32_t)kq[f];
            const memra_status st2 = m.desc->ops->gemm_kr(&c2, &a2);
            const char *got = g_n_launched > 0 ? g_launched[0] : "";
            size_t len = strlen(got);
            if (len > 1 && strcmp(got + len - 2, "xb") == 0) len--; /* the bulk-copy ones (MEMRA_MMQ_KR_BULK): _txb */
            if (len > 0 && got[len - 1] == 'x') len--; /* the sum-plane tiles (MEMRA_MMQ_KR_SUMS): _tx, _x */
            const int t = len > 0 && got[len - 1] == 't';
            char what[48];
            const int tc = tcbits >> f & 1;
            snprintf(what, sizeof what, "gemm_kr %s (KR_TC=%s)", f == 0 ? "q4_k" : f == 1 ? "q5_k" : "q6_k",
                     tcs[v] ? tcs[v] : "unset");
            ok &= launched(what, st2, 1, &kq_tile[f], (const int[]){-1});
            if (t != tc) {
                printf("  %s: %s, want the %s tile  FAIL\n", what, got, tc ? "_t" : "plain");
                ok = 0;
            }
            /* gemm_experts (sorted records, 512 rows over 8 experts: the 64-row tile) takes the same fold */
            memra_call c3 = call_of(&m);
            memra_gemm_args a3 = gemm(512, 300, 256);
            a3.w_format = (int32_t)kq[f];
            memra_gemm_experts_args x3 = {.struct_size = sizeof x3, .lane = MEMRA_OP_gemm_kr, .n_experts = 8,
                                          .ids = 0x60000000};
            const memra_status st3 = m.desc->ops->gemm_experts(&c3, &a3, &x3);
            char want[64];
            /* and the sum plane (MEMRA_MMQ_KR_SUMS unset: on) at each format's default fold: Q4_K TC, Q5_K per-32 */
            const int xs = f == 0 ? tc : f == 1; /* Q4_K's TC fold, Q5_K's either */
            /* and on cc 9.0 the bulk copies (MEMRA_MMQ_KR_BULK unset: on) where the fold is TC and t from the plane */
            snprintf(want, sizeof want, "%s2_s%s%s%s", kq_tile[f] + strlen("memra_k_gemm_kr_"), tc ? "t" : "", xs ? "x" : "",
                     tc && xs ? "b" : "");
            const int found = launch_ending("memra_k_experts_kr_", want);
            printf("  gemm_experts %s: status %d, a launch ending in %s  %s\n", what + 8, (int)st3, want,
                   st3 == MEMRA_STATUS_OK && found ? "ok" : "FAIL");
            ok &= st3 == MEMRA_STATUS_OK && found;
            g_n_launched = 0;
        }
        ok &= close_mod(&m, 1);
    }
    g_kr_tc_knob = NULL;
    /* the sorted grouped K-quant tiles follow MEMRA_MMQ_KR_BULK as the dense ones: _stxb on cc 9.0 by
     * default; _stx with the knob 0, on cc 12.0, or where the image lacks one of the _stxb tiles.
     * MEMRA_MMQ_XE_LOOP2=1 takes _stxb2 where _stxb would serve and the image has every _stxb2 tile */
    static const struct {
        int cc;
        const char *krb, *missing, *want, *loop2;
    } xb[] = {{90, NULL, NULL, "_mt2_stxb", NULL},         {90, "1", NULL, "_mt2_stxb", NULL},
              {90, "0", NULL, "_mt2_stx", NULL},           {120, NULL, NULL, "_mt2_stx", NULL},
              {90, NULL, "q5_k_mt4_stxb", "_mt2_stx", NULL}, {90, NULL, NULL, "_mt2_stxb2", "1"},
              {90, NULL, NULL, "_mt2_stxb", "0"},          {90, "0", NULL, "_mt2_stx", "1"},
              {120, NULL, NULL, "_mt2_stx", "1"},          {90, NULL, "q5_k_mt1_stxb2", "_mt2_stxb", "1"}};
    for (size_t i = 0; i < sizeof xb / sizeof xb[0]; i++) {
        g_kr_bulk_knob = xb[i].krb, g_missing_kernel = xb[i].missing, g_xe_loop2_knob = xb[i].loop2;
        if (!open_mod(so, xb[i].cc, &m)) return 0;
        memra_call c3 = call_of(&m);
        memra_gemm_args a3 = gemm(512, 300, 256);
        a3.w_format = (int32_t)MEMRA_FORMAT_Q5_K;
        memra_gemm_experts_args x3 = {.struct_size = sizeof x3, .lane = MEMRA_OP_gemm_kr, .n_experts = 8,
                                      .ids = 0x60000000};
        const memra_status st3 = m.desc->ops->gemm_experts(&c3, &a3, &x3);
        const int found = launch_ending("memra_k_experts_kr_q5_k", xb[i].want);
        printf("  gemm_experts q5_k KR_BULK=%s XE_LOOP2=%s cc %d%s%s: status %d, a launch ending in %s  %s\n",
               xb[i].krb ? xb[i].krb : "unset", xb[i].loop2 ? xb[i].loop2 : "unset", xb[i].cc,
               xb[i].missing ? ", image without " : "",
               xb[i].missing ? xb[i].missing : "", (int)st3, xb[i].want, st3 == MEMRA_STATUS_OK && found ? "ok" : "FAIL");
        ok &= st3 == MEMRA_STATUS_OK && found;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_kr_bulk_knob = NULL, g_missing_kernel = NULL, g_xe_loop2_knob = NULL;
    /* MEMRA_MMQ_XE_TALL=1: on cc 9.0, beside the sorted bulk tiles (Q8_0 _sb, Q4_K _stxb), rows at
     * 96-160 an expert (here 1024 over 8: 128) take one 160 x 96 interleaved tile each: grid
     * ceil(300 / 96) = 4 column blocks x ceil(1024 / 160) + 8 = 15 row tiles, then the 32-row remainder
     * launch on 3 x 8; above 160 an expert (2048 over 8), Q5_K, the knob unset, cc 12.0 or an image
     * without the tile: no tall tile (the 128-row tiles, or the 64-row ones on cc 12.0) */
    static const struct {
        int cc;
        const char *knob, *missing;
        memra_format f; /* 0: Q8_0 (gemm_q8_0r) */
        int rows;
        const char *want; /* the tall tile, or NULL: none launched */
        unsigned gx, gy;
        const char *loop2; /* MEMRA_MMQ_XE_LOOP2 (Q4_K's sorted tiles then _stxb2: the tall tile still serves) */
    } tall[] = {{90, "1", NULL, 0, 1024, "memra_k_experts_q8_0r_mt5n3_sbi", 4, 15, NULL},
                {90, "1", NULL, MEMRA_FORMAT_Q4_K, 1024, "memra_k_experts_kr_q4_k_mt5n3_stxbi", 4, 15, NULL},
                {90, "1", NULL, 0, 2048, NULL, 0, 0, NULL},
                {90, NULL, NULL, 0, 1024, NULL, 0, 0, NULL},
                {90, "0", NULL, MEMRA_FORMAT_Q4_K, 1024, NULL, 0, 0, NULL},
                {90, "1", NULL, MEMRA_FORMAT_Q5_K, 1024, NULL, 0, 0, NULL},
                {120, "1", NULL, 0, 1024, NULL, 0, 0, NULL},
                {90, "1", "q8_0r_mt5n3_sbi", 0, 1024, NULL, 0, 0, NULL},
                {90, "1", NULL, MEMRA_FORMAT_Q4_K, 1024, "memra_k_experts_kr_q4_k_mt5n3_stxbi", 4, 15, "1"}};
    for (size_t i = 0; i < sizeof tall / sizeof tall[0]; i++) {
        g_xe_tall_knob = tall[i].knob, g_missing_kernel = tall[i].missing, g_xe_loop2_knob = tall[i].loop2;
        if (!open_mod(so, tall[i].cc, &m)) return 0;
        memra_call c4 = call_of(&m);
        memra_gemm_args a4 = gemm(tall[i].rows, 300, 256);
        a4.w_format = (int32_t)tall[i].f;
        memra_gemm_experts_args x4 = {.struct_size = sizeof x4,
                                      .lane = tall[i].f ? MEMRA_OP_gemm_kr : MEMRA_OP_gemm_q8_0r,
                                      .n_experts = 8,
                                      .ids = 0x60000000};
        const memra_status st4 = m.desc->ops->gemm_experts(&c4, &a4, &x4);
        int at = -1, any = 0; /* the tall tile's launch, and whether any launch is a tall tile */
        for (int j = 0; j < g_n_launched; j++) {
            if (strstr(g_launched[j], "_mt5n3_") != NULL) any = 1;
            if (tall[i].want != NULL && strcmp(g_launched[j], tall[i].want) == 0) at = j;
        }
        /* then the remainder (the 32-row sorted tile) on the 128-row tiles' 3 column blocks */
        const int rem = at >= 0 && at + 1 < g_n_launched && strstr(g_launched[at + 1], "_mt1_s") != NULL &&
                        g_grid_x[at + 1] == 3;
        const int good = st4 == MEMRA_STATUS_OK &&
                         (tall[i].want == NULL ? !any
                                               : at >= 0 && g_grid_x[at] == tall[i].gx && g_grid_y[at] == tall[i].gy && rem);
        printf("  gemm_experts %s m %d E 8 XE_TALL=%s%s cc %d%s%s: status %d, %s", tall[i].f ? "q4/5_k" : "q8_0",
               tall[i].rows, tall[i].knob ? tall[i].knob : "unset", tall[i].loop2 ? " XE_LOOP2=1" : "", tall[i].cc, tall[i].missing ? ", image without " : "",
               tall[i].missing ? tall[i].missing : "", (int)st4, tall[i].want ? tall[i].want : "no tall tile");
        if (at >= 0) printf(" on %u x %u (want %u x %u, then the remainder: %s)", g_grid_x[at], g_grid_y[at], tall[i].gx,
                            tall[i].gy, rem ? "yes" : "no");
        printf("  %s\n", good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_xe_tall_knob = NULL, g_missing_kernel = NULL, g_xe_loop2_knob = NULL;
    /* MEMRA_MMQ_KR6_BULK (unset: on): Q6_K's one-CTA tiles on the bulk copies (_ob) on cc 9.0, where its tiles
     * are the one-CTA ones (MEMRA_MMQ_ONE unset, q6_k or 1) and the image has every _ob tile; else the tiles it had */
    static const struct {
        int cc;
        const char *one, *kr6, *missing, *want; /* want: the suffix after the tile shape */
    } q6b[] = {{90, NULL, "1", NULL, "ob"},  {90, "1", "1", NULL, "ob"},          {90, "q6_k", "1", NULL, "ob"},
               {90, NULL, NULL, NULL, "ob"}, {90, NULL, "0", NULL, "o"},          {90, "0", "1", NULL, ""},
               {90, "0", NULL, NULL, ""},    {120, NULL, "1", NULL, "o"},         {120, NULL, NULL, NULL, "o"},
               {90, NULL, "1", "q6_k_mt2n3ob", "o"}, {90, NULL, NULL, "q6_k_mt4ob", "o"}};
    for (size_t i = 0; i < sizeof q6b / sizeof q6b[0]; i++) {
        g_mmq_one_knob = q6b[i].one, g_kr6_bulk_knob = q6b[i].kr6, g_missing_kernel = q6b[i].missing;
        if (!open_mod(so, q6b[i].cc, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(4096, 12288, 5120);
        a2.w_format = (int32_t)MEMRA_FORMAT_Q6_K;
        const memra_status st2 = m.desc->ops->gemm_kr(&c2, &a2);
        const char *got = g_n_launched > 0 ? g_launched[0] : "";
        const char *rest = tile_suffix(got, "memra_k_gemm_kr_q6_k_mt");
        const int good = st2 == MEMRA_STATUS_OK && g_n_launched == 1 && rest != NULL && strcmp(rest, q6b[i].want) == 0;
        printf("  ONE=%s KR6_BULK=%s cc %d%s%s gemm_kr q6_k: %s, want a tile ending \"%s\"  %s\n",
               q6b[i].one ? q6b[i].one : "unset", q6b[i].kr6 ? q6b[i].kr6 : "unset", q6b[i].cc,
               q6b[i].missing ? ", image without " : "", q6b[i].missing ? q6b[i].missing : "", got, q6b[i].want,
               good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_mmq_one_knob = NULL, g_kr6_bulk_knob = NULL, g_missing_kernel = NULL;
    /* MEMRA_MMQ_WG (=1, =all; unset: auto, below): gemm_q8_0r's warpgroup tile (128 x 128, 384 threads, four rank-3 tensor
     * maps) where the plan picks a 128-token tile (=1: m = 4096, 5120 -> 12288 picks 128 x 96, so the grid is
     * ceil(n / 128) = 96 wide) or any tile (=all: m = 512, 5120 -> 1024 picks a 64-token tile); the split is
     * the plan's on the warpgroup tile alone at one CTA an SM (32 tiles on 132 SMs: 4 slices of 10 steps);
     * not on cc 12.0, not without the kernel or the driver's tensor maps, not at m = 512 with =1;
     * MEMRA_MMQ_WG_SEED (unset: mmq.h MMQ_WG_SEED_PIN_DEFAULT; =0 in the first cases): _wgs (=pin: _wgsf), or _wgps
     * with PERSIST, their smem 4 KB more */
    static const struct {
        int cc, no_tmap;
        const char *knob, *missing, *tr, *per;
        int m, n;
        int wg; /* 1: memra_k_gemm_q8_0r_wg launched, 2: _wgt (MEMRA_MMQ_WG_TR=1), 3: _wgp (MEMRA_MMQ_WG_PERSIST=1),
                 * 4: _wgs (MEMRA_MMQ_WG_SEED=1), 5: _wgps (both), 6: _wgsa (MEMRA_MMQ_WG_SEED=smem),
                 * 7: _wgsax (MEMRA_MMQ_WG_SEED=xp), 8: _wgspp (MEMRA_MMQ_WG_SEED=pp), 9: _wgsf (=pin),
                 * 10: _wgsi (=iadd) */
        const char *sd;
    } wgc[] = {{90, 0, "1", NULL, NULL, NULL, 4096, 12288, 1, "0"},       {90, 0, "0", NULL, NULL, NULL, 4096, 12288, 0, "0"},
               {90, 0, "0", NULL, NULL, NULL, 4096, 12288, 0, NULL},       {120, 0, "1", NULL, NULL, NULL, 4096, 12288, 0, "0"},
               {90, 0, "1", "q8_0r_wg", NULL, NULL, 4096, 12288, 0, "0"}, {90, 1, "1", NULL, NULL, NULL, 4096, 12288, 0, "0"},
               {90, 0, "1", NULL, NULL, NULL, 512, 1024, 0, "0"},         {90, 0, "all", NULL, NULL, NULL, 512, 1024, 1, "0"},
               {90, 0, "all", NULL, "1", NULL, 512, 1024, 2, "0"},        {90, 0, "1", "q8_0r_wgt", "1", NULL, 4096, 12288, 0, "0"},
               {90, 0, "0", NULL, "1", NULL, 4096, 12288, 0, "0"},        {90, 0, "1", NULL, NULL, "1", 4096, 12288, 3, "0"},
               {90, 0, "all", NULL, NULL, "1", 512, 1024, 3, "0"},        {90, 0, "1", "q8_0r_wgp", NULL, "1", 4096, 12288, 2, "0"},
               {90, 0, "0", NULL, NULL, "1", 4096, 12288, 0, "0"},        {90, 0, "1", NULL, NULL, "8", 4096, 12288, 3, "0"},
               {90, 0, "1", NULL, NULL, NULL, 4096, 12288, 4, "1"},  {90, 0, "all", NULL, NULL, NULL, 512, 1024, 4, "1"},
               {90, 0, "1", NULL, "0", NULL, 4096, 12288, 4, "1"},   {90, 0, "1", NULL, NULL, "1", 4096, 12288, 5, "1"},
               {90, 0, "1", NULL, NULL, "8", 4096, 12288, 5, "1"},   {90, 0, "all", NULL, NULL, "1", 512, 1024, 5, "1"},
               {90, 0, "1", NULL, NULL, NULL, 4096, 12288, 1, "0"},  {90, 0, "0", NULL, NULL, NULL, 4096, 12288, 0, "1"},
               {120, 0, "1", NULL, NULL, NULL, 4096, 12288, 0, "1"}, {90, 0, "1", "q8_0r_wgs", NULL, NULL, 4096, 12288, 0, "1"},
               {90, 0, "1", "q8_0r_wgps", NULL, "1", 4096, 12288, 4, "1"}, {90, 1, "1", NULL, NULL, NULL, 4096, 12288, 0, "1"},
               /* the defaults (auto, seeded: _wgs, or _wgsf where pin is the default; SEED=1 _wgs): from m = 1024 tokens, whatever the plan's tile, and below
                * where the plan's model prices it under the records tiles (step_wg; 132 SMs, k = 5120): at
                * m = 512 on 5120 -> 1024 (4 slices of 10 steps: 7.1 paired steps against 7.8 for 64 x 96 in 3
                * slices) and 5120 -> 12288 (56.0 against 59.4), not on 5120 -> 5120 (34.9 against 29.7: two
                * 128 x 96 tiles an SM in one round) or 5120 -> 17408 (93.3 against 89.2); 1023 x 1024 as 1024;
                * m = 128, 5120 -> 1024 not (3.4 against 2.7); the split always the plan's at a step of 1.0
                * (1024 x 2560: 4 slices, where step_wg would give 2); below 1024 only _wgs is weighed (not
                * with PERSIST, SEED=smem / xp, SEED=0, MEMRA_MMQ_BM=64 or without tensor maps: the records
                * tiles at 512 x 1024); PERSIST still honoured; not on cc 12.0, not without tensor maps or
                * the kernel */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, WGS_CODE, NULL}, {90, 0, "auto", NULL, NULL, NULL, 1024, 1024, WGS_CODE, NULL},
               {90, 0, NULL, NULL, NULL, NULL, 1024, 1024, WGS_CODE, NULL},  {90, 0, NULL, NULL, NULL, NULL, 1023, 1024, WGS_CODE, NULL},
               {90, 0, NULL, NULL, NULL, NULL, 512, 1024, WGS_CODE, NULL},   {90, 0, NULL, NULL, NULL, NULL, 512, 12288, WGS_CODE, NULL},
               {90, 0, NULL, NULL, NULL, NULL, 512, 5120, 0, NULL},   {90, 0, "auto", NULL, NULL, NULL, 512, 17408, 0, NULL},
               {90, 0, NULL, NULL, NULL, NULL, 128, 1024, 0, NULL},   {90, 0, NULL, NULL, NULL, NULL, 1024, 2560, WGS_CODE, NULL},
               {90, 0, NULL, NULL, NULL, "1", 512, 1024, 0, NULL},    {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 0, "smem"},
               {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 0, "0"},    {90, 1, NULL, NULL, NULL, NULL, 512, 1024, 0, NULL},
               {90, 0, "bm64", NULL, NULL, NULL, 512, 1024, 0, NULL},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, NULL},  {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 1, "0"},
               {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, NULL}, {90, 1, NULL, NULL, NULL, NULL, 4096, 12288, 0, NULL},
               {90, 0, NULL, "q8_0r_wgs" PIN_SFX, NULL, NULL, 4096, 12288, 0, NULL},
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 4, "1"}, {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 4, "1"},
               /* MEMRA_MMQ_WG_SEED=smem: _wgsa (the seed's A from shared memory); with PERSIST _wgps */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 6, "smem"}, {90, 0, "all", NULL, NULL, NULL, 512, 1024, 6, "smem"},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, "smem"}, {90, 0, NULL, "q8_0r_wgsa", NULL, NULL, 4096, 12288, 0, "smem"},
               {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, "smem"},
               /* MEMRA_MMQ_WG_SEED=xp: _wgsax (_wgsa with the token scales a group ahead); with PERSIST _wgps */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 7, "xp"}, {90, 0, "all", NULL, NULL, NULL, 512, 1024, 7, "xp"},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, "xp"}, {90, 0, NULL, "q8_0r_wgsax", NULL, NULL, 4096, 12288, 0, "xp"},
               {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, "xp"},
               /* MEMRA_MMQ_WG_SEED=pp: _wgspp (_wgs folding in turn); with PERSIST _wgps; below 1024 tokens under
                * auto the records tiles, as for smem / xp */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 8, "pp"}, {90, 0, "all", NULL, NULL, NULL, 512, 1024, 8, "pp"},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, "pp"}, {90, 0, NULL, "q8_0r_wgspp", NULL, NULL, 4096, 12288, 0, "pp"},
               {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 0, "pp"},  {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, "pp"},
               /* MEMRA_MMQ_WG_SEED=pin: _wgsf (_wgs with the fold pinned behind the s8 wgmma), as pp, but below 1024
                * tokens the plan's fit weighs it as _wgs */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 9, "pin"}, {90, 0, "all", NULL, NULL, NULL, 512, 1024, 9, "pin"},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, "pin"}, {90, 0, NULL, "q8_0r_wgsf", NULL, NULL, 4096, 12288, 0, "pin"},
               {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 9, "pin"},  {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, "pin"},
               /* MEMRA_MMQ_WG_SEED=iadd: _wgsi (_wgs without the seed's MMA), as pin */
               {90, 0, NULL, NULL, NULL, NULL, 4096, 12288, 10, "iadd"}, {90, 0, "all", NULL, NULL, NULL, 512, 1024, 10, "iadd"},
               {90, 0, NULL, NULL, NULL, "1", 4096, 12288, 5, "iadd"}, {90, 0, NULL, "q8_0r_wgsi", NULL, NULL, 4096, 12288, 0, "iadd"},
               {90, 0, NULL, NULL, NULL, NULL, 512, 1024, 10, "iadd"},  {120, 0, NULL, NULL, NULL, NULL, 4096, 12288, 0, "iadd"}};
    g_mmq_sk_knob = "0"; /* the plain grids' plans; the stream-k tile's picks (160 tiles here at 1024 x 2560 and
                          * 512 x 5120) are mmq_sk's */
    for (size_t i = 0; i < sizeof wgc / sizeof wgc[0]; i++) {
        /* knob "bm64": MEMRA_MMQ_WG unset, MEMRA_MMQ_BM=64 */
        const int bm64 = wgc[i].knob != NULL && strcmp(wgc[i].knob, "bm64") == 0;
        g_mmq_wg_knob = bm64 ? NULL : wgc[i].knob, g_mmq_bm_knob = bm64 ? "64" : NULL;
        g_missing_kernel = wgc[i].missing, g_no_tmap = wgc[i].no_tmap;
        g_mmq_wg_tr_knob = wgc[i].tr, g_mmq_wg_per_knob = wgc[i].per, g_mmq_wg_sd_knob = wgc[i].sd;
        if (!open_mod(so, wgc[i].cc, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(wgc[i].m, wgc[i].n, 5120);
        g_tmap_calls = 0;
        const memra_status st2 = m.desc->ops->gemm_q8_0r(&c2, &a2);
        const char *got = g_n_launched > 0 ? g_launched[0] : "";
        const int is_wg = strcmp(got, "memra_k_gemm_q8_0r_wg") == 0    ? 1
                          : strcmp(got, "memra_k_gemm_q8_0r_wgt") == 0 ? 2
                          : strcmp(got, "memra_k_gemm_q8_0r_wgp") == 0 ? 3
                          : strcmp(got, "memra_k_gemm_q8_0r_wgs") == 0 ? 4
                          : strcmp(got, "memra_k_gemm_q8_0r_wgps") == 0 ? 5
                          : strcmp(got, "memra_k_gemm_q8_0r_wgsa") == 0 ? 6
                          : strcmp(got, "memra_k_gemm_q8_0r_wgsax") == 0 ? 7
                          : strcmp(got, "memra_k_gemm_q8_0r_wgspp") == 0 ? 8
                          : strcmp(got, "memra_k_gemm_q8_0r_wgsf") == 0 ? 9
                          : strcmp(got, "memra_k_gemm_q8_0r_wgsi") == 0 ? 10
                                                                        : 0;
        const int per = is_wg == 3 || is_wg == 5;
        /* the persistent tiles: a 1-D grid of min(tiles x slices, 132 SMs) (m = 512: 32 tiles x 4 slices) */
        const unsigned want_gx = per ? (wgc[i].per[0] == '8' ? 8u : wgc[i].m == 512 ? 128u : 132u)
                                     : (unsigned)(wgc[i].m + 127) / 128;
        const unsigned want_gy = per ? 1u : (unsigned)(wgc[i].n + 127) / 128;
        /* the split the plan chose: a sum launch after a split tile */
        /* the maps in the kernel's order: weight codes (128-byte rows, swizzled), weight heads (16 bytes, plain),
         * token codes, token heads; rank 3, 128 rows a box; dynamic smem the kernel's (mmq.h) */
        int maps_ok = g_tmap_calls == 4;
        for (int j = 0; j < 4 && maps_ok; j++)
            maps_ok = g_tmap_rank[j] == 3 && g_tmap_box[j] == 128 && g_tmap_box0[j] == ((j & 1) ? 16u : 128u) &&
                      g_tmap_swz[j] == ((j & 1) ? 0 : 3);
        const unsigned want_smem = (unsigned)(is_wg >= 4   ? R3W_SMEM_BYTES_SD(1)
                                              : is_wg >= 2 ? R3W_SMEM_BYTES_OF(1)
                                                           : R3W_SMEM_BYTES_OF(0));
        const int shape_ok = !is_wg || (g_grid_x[0] == want_gx && g_grid_y[0] == want_gy && g_block_x[0] == 384 &&
                                        maps_ok && g_smem[0] == want_smem &&
                                        (per ? g_grid_z[0] == 1 && (g_n_launched == 1) == (wgc[i].m != 512)
                                                    : (g_grid_z[0] == 1) == (g_n_launched == 1) &&
                                                          (wgc[i].m != 512 || wgc[i].n != 1024 || g_grid_z[0] == 4) &&
                                                          (wgc[i].m != 1024 || wgc[i].n != 2560 || g_grid_z[0] == 4)));
        const int good = st2 == MEMRA_STATUS_OK && g_n_launched >= 1 && is_wg == wgc[i].wg && shape_ok;
        printf("  WG=%s WG_TR=%s WG_PERSIST=%s WG_SEED=%s cc %d%s%s%s gemm_q8_0r %d x %d x 5120: %s on %u x %u x %u "
               "(%u threads), %d maps  %s\n",
               wgc[i].knob ? wgc[i].knob : "unset", wgc[i].tr ? wgc[i].tr : "unset", wgc[i].per ? wgc[i].per : "unset",
               wgc[i].sd ? wgc[i].sd : "unset",
               wgc[i].cc, wgc[i].missing ? ", image without " : "",
               wgc[i].missing ? wgc[i].missing : "", wgc[i].no_tmap ? ", no tensor maps" : "", wgc[i].m, wgc[i].n, got,
               g_grid_x[0], g_grid_y[0], g_grid_z[0], g_block_x[0], g_tmap_calls, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_mmq_wg_knob = "0", g_mmq_wg_tr_knob = NULL, g_mmq_wg_per_knob = NULL, g_mmq_wg_sd_knob = NULL, g_mmq_bm_knob = NULL;
    g_mmq_sk_knob = NULL;
    g_missing_kernel = NULL, g_no_tmap = 0;
    /* MEMRA_MMQ_WG_TAIL=1 (with MEMRA_MMQ_WG_SEED=1, stream-k off): _wgst where m mod 128 is 1 .. 96, on _wgs's
     * grid; _wgs at other m, without the knob, without the kernel (a warning); beside the folds in turn or the
     * pinned tile, that tile and a warning (SEED unset: as mmq.h's default) */
    static const struct {
        const char *knob, *missing, *sd;
        int m, warns;
        const char *want;
    } tc[] = {{"1", NULL, "1", 4100, 0, "memra_k_gemm_q8_0r_wgst"},  {"1", NULL, "1", 4128, 0, "memra_k_gemm_q8_0r_wgst"},
              {"1", NULL, "1", 4096, 0, "memra_k_gemm_q8_0r_wgs"},   {"1", NULL, "1", 4129, 0, "memra_k_gemm_q8_0r_wgst"},
              {"1", NULL, "1", 4192, 0, "memra_k_gemm_q8_0r_wgst"},  {"1", NULL, "1", 4193, 0, "memra_k_gemm_q8_0r_wgs"},
              {NULL, NULL, "1", 4100, 0, "memra_k_gemm_q8_0r_wgs"},  {"1", "q8_0r_wgst", "1", 4100, 1, "memra_k_gemm_q8_0r_wgs"},
              {"1", NULL, "pp", 4100, 1, "memra_k_gemm_q8_0r_wgspp"}, 
#if MMQ_WG_SEED_PIN_DEFAULT
              {"1", NULL, NULL, 4100, 1, "memra_k_gemm_q8_0r_wgsf"}
#else
              {"1", NULL, NULL, 4100, 0, "memra_k_gemm_q8_0r_wgst"}
#endif
    };
    g_mmq_wg_knob = NULL, g_mmq_sk_knob = "0";
    for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) {
        g_wg_tail_knob = tc[i].knob, g_missing_kernel = tc[i].missing, g_mmq_wg_sd_knob = tc[i].sd;
        const int w0 = g_n_warn;
        if (!open_mod(so, 90, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(tc[i].m, 12288, 5120);
        const memra_status st2 = m.desc->ops->gemm_q8_0r(&c2, &a2);
        const int good = st2 == MEMRA_STATUS_OK && g_n_launched == 1 && strcmp(g_launched[0], tc[i].want) == 0 &&
                         g_grid_x[0] == (unsigned)(tc[i].m + 127) / 128 && g_grid_y[0] == 96 && g_grid_z[0] == 1 &&
                         g_block_x[0] == 384 && g_smem[0] == (unsigned)R3W_SMEM_BYTES_SD(1) && g_n_warn - w0 == tc[i].warns;
        printf("  WG_TAIL=%s%s%s%s cc 90 gemm_q8_0r %d x 12288 x 5120: %s on %u x %u x %u, %d warnings  %s\n",
               tc[i].knob ? tc[i].knob : "unset", tc[i].sd ? " WG_SEED=" : "", tc[i].sd ? tc[i].sd : "",
               tc[i].missing ? ", image without q8_0r_wgst" : "", tc[i].m, g_n_launched ? g_launched[0] : "-", g_grid_x[0],
               g_grid_y[0], g_grid_z[0], g_n_warn - w0, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_wg_tail_knob = NULL, g_missing_kernel = NULL, g_mmq_wg_sd_knob = NULL, g_mmq_wg_knob = "0", g_mmq_sk_knob = NULL;
    /* memra_call.sizing = 1 (memra_stream_reserve's sizing): gemm_q8_0r, gemm_kr and quant_q8_1 make the
     * real call's scratch requests (count and bytes, split-k partial sums or none), launch nothing and
     * set it to 2; the defaults (auto: _wgs at 512 x 1024 in 4 slices, the stream-k tile at 512 x 5120 and
     * 1536 x 1536 (160 and 144 tiles), _wgs at 4096 x 12288, Q4_K's records tiles). Where the stream-k tile may serve gemm_q8_0r (cc 9.0,
     * MEMRA_MMQ_WG_SK auto) and this call does not take it, sizing asks its 2 x 132 x 64 KB slots once more */
    {
        g_mmq_wg_knob = NULL;
        if (!open_mod(so, 90, &m)) return 0;
        static const struct {
            int m, n, kind; /* kind 0: gemm_q8_0r, 1: gemm_kr (Q4_K), 2: quant_q8_1 */
        } sz[] = {{512, 1024, 0}, {512, 5120, 0}, {1536, 1536, 0}, {4096, 12288, 0}, {512, 1024, 1}, {300, 0, 2}};
        for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
            size_t bytes[2];
            int asks[2], launched[2], back = -1;
            memra_status st[2];
            for (int sizing = 0; sizing < 2; sizing++) {
                memra_call c2 = call_of(&m);
                c2.sizing = sizing;
                memra_gemm_args a2 = gemm(sz[i].m, sz[i].n, 5120);
                if (sz[i].kind == 1) a2.w_format = (int32_t)MEMRA_FORMAT_Q4_K;
                g_scratch_bytes = 0, g_scratch_asks = 0, g_n_launched = 0;
                st[sizing] = sz[i].kind == 0   ? m.desc->ops->gemm_q8_0r(&c2, &a2)
                             : sz[i].kind == 1 ? m.desc->ops->gemm_kr(&c2, &a2)
                                               : m.desc->ops->quant_q8_1(&c2, 0x1000, sz[i].m, 5120, 0x2000);
                bytes[sizing] = g_scratch_bytes, asks[sizing] = g_scratch_asks, launched[sizing] = g_n_launched;
                if (sizing) back = c2.sizing;
            }
            /* the stream-k slots, asked by sizing alone where the real call runs another gemm_q8_0r tile */
            const int T = (sz[i].m + 127) / 128 * ((sz[i].n + 127) / 128); /* the auto rule, 132 SMs */
            const int sk_takes = T >= 132 && T <= 5 * 132 && T % 132 != 0 && T % 132 <= 132 / 4;
            const int sk_extra = sz[i].kind == 0 && !sk_takes;
            const size_t sk_bytes = sk_extra ? (size_t)132 * 2 * 65536 : 0;
            const int good = st[0] == MEMRA_STATUS_OK && st[1] == MEMRA_STATUS_OK && launched[0] >= 1 && launched[1] == 0 &&
                             back == 2 && bytes[0] + sk_bytes == bytes[1] && asks[0] + sk_extra == asks[1];
            printf("  sizing %s %d x %d x 5120: real call %d launches, %d scratch asks of %zu bytes; sized: %d launches, "
                   "%d asks of %zu bytes, sizing %d  %s\n",
                   sz[i].kind == 0 ? "gemm_q8_0r" : sz[i].kind == 1 ? "gemm_kr q4_k" : "quant_q8_1", sz[i].m, sz[i].n,
                   launched[0], asks[0], bytes[0], launched[1], asks[1], bytes[1], back, good ? "ok" : "FAIL");
            ok &= good;
        }
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
        g_mmq_wg_knob = "0";
    }
    ok &= xe_wg_cases(so);
    /* MEMRA_MMQ_KR_WG=1: gemm_kr's Q4_K / Q5_K on the seeded warpgroup tile, every pick, on
     * cc 9.x with tensor maps and the sum plane (MEMRA_MMQ_KR_SUMS): grid ceil(m / 128) x ceil(n / 128) x
     * the split, 384 threads, R3W_SMEM_BYTES_KQ, one map (the token codes: rank 3, 128 x 128, swizzled);
     * Q6_K keeps its tiles; =mma: the _wgm kernels, R3W_SMEM_BYTES_KM. want: the format's kernel of the
     * knob (1) or a records tile (0); =pre: the _wgm pair, then (wide 1) the widening pass
     * memra_k_kq_widen_<f> on ceil(n / 128) x ceil(k / 128) blocks of 128 threads and the tile on its image,
     * memra_k_gemm_kr_kq_wgw, as the _wgm tile; without that kernel, or with the image's scratch refused
     * (refuse), the _wgm tile alone (wide 0, want 1); =pre2 (wide 2): memra_k_kq_prep2_<f> on ceil(n / 128) +
     * ceil(m / 128) x ceil(k / 128) blocks (the weight's and the tokens' images), then memra_k_gemm_kr_kq_wgw2;
     * =auto (also unset, the default): =pre2 from 1024 tokens, the records tiles below. Under the default a
     * tile that cannot apply (cc 12.0, no tensor maps, no sum plane, no scratch) is no news: no message at
     * WARN; an explicit knob that cannot apply warns */
    static const struct {
        int cc, no_tmap;
        const char *knob, *sums, *missing;
        int f, m, n, want, wide;
        const char *refuse;
    } kwc[] = {{90, 0, "1", NULL, NULL, 0, 4096, 12288, 1, 0, NULL}, {90, 0, "1", NULL, NULL, 1, 4096, 12288, 1, 0, NULL},
               {90, 0, "1", NULL, NULL, 2, 4096, 12288, 0, 0, NULL}, {90, 0, "1", NULL, NULL, 0, 512, 1024, 1, 0, NULL},
               {90, 0, NULL, NULL, NULL, 0, 4096, 12288, 1, 2, NULL}, {90, 0, "0", NULL, NULL, 1, 4096, 12288, 0, 0, NULL},
               {120, 0, "1", NULL, NULL, 0, 4096, 12288, 0, 0, NULL}, {90, 1, "1", NULL, NULL, 0, 4096, 12288, 0, 0, NULL},
               {90, 0, "1", "0", NULL, 0, 4096, 12288, 0, 0, NULL},   {90, 0, "1", NULL, "q4_k_wgs", 0, 4096, 12288, 0, 0, NULL},
               {90, 0, "1", NULL, "q4_k_wgs", 1, 4096, 12288, 1, 0, NULL},
               /* =mma: the _wgm kernels (the min term by tf32 wgmmas), R3W_SMEM_BYTES_KM */
               {90, 0, "mma", NULL, NULL, 0, 4096, 12288, 1, 0, NULL}, {90, 0, "mma", NULL, NULL, 1, 512, 1024, 1, 0, NULL},
               {90, 0, "mma", NULL, NULL, 2, 4096, 12288, 0, 0, NULL}, {120, 0, "mma", NULL, NULL, 0, 4096, 12288, 0, 0, NULL},
               {90, 1, "mma", NULL, NULL, 1, 4096, 12288, 0, 0, NULL}, {90, 0, "mma", "0", NULL, 0, 4096, 12288, 0, 0, NULL},
               {90, 0, "mma", NULL, "q4_k_wgm", 0, 4096, 12288, 0, 0, NULL}, {90, 0, "mma", NULL, "q4_k_wgm", 1, 4096, 12288, 1, 0, NULL},
               {90, 0, "mma", NULL, "q4_k_wgs", 0, 4096, 12288, 1, 0, NULL},
               {90, 0, "pre", NULL, NULL, 0, 4096, 12288, 1, 1, NULL}, {90, 0, "pre", NULL, NULL, 1, 512, 1000, 1, 1, NULL},
               {90, 0, "pre", NULL, NULL, 2, 4096, 12288, 0, 0, NULL}, {120, 0, "pre", NULL, NULL, 0, 4096, 12288, 0, 0, NULL},
               {90, 1, "pre", NULL, NULL, 1, 4096, 12288, 0, 0, NULL}, {90, 0, "pre", "0", NULL, 0, 4096, 12288, 0, 0, NULL},
               {90, 0, "pre", NULL, "kq_wgw", 0, 4096, 12288, 1, 0, NULL}, {90, 0, "pre", NULL, "kq_widen_q5_k", 1, 4096, 12288, 1, 0, NULL},
               {90, 0, "pre", NULL, "q4_k_wgm", 0, 4096, 12288, 0, 0, NULL}, {90, 0, "pre", NULL, NULL, 1, 4096, 12288, 1, 0, "kr.widened"},
               {90, 0, "pre2", NULL, NULL, 0, 4096, 12288, 1, 2, NULL}, {90, 0, "pre2", NULL, NULL, 1, 300, 1000, 1, 2, NULL},
               {120, 0, "pre2", NULL, NULL, 1, 4096, 12288, 0, 0, NULL}, {90, 0, "pre2", NULL, NULL, 2, 4096, 12288, 0, 0, NULL},
               {90, 0, "pre2", NULL, "kq_prep2_q4_k", 0, 4096, 12288, 1, 0, NULL}, {90, 0, "pre2", NULL, "kq_wgw2", 1, 4096, 12288, 1, 0, NULL},
               {90, 0, "pre2", NULL, NULL, 0, 4096, 12288, 1, 0, "kr.tokens"},
               /* =auto: =pre2 from 1024 tokens, the records tiles below */
               {90, 0, "auto", NULL, NULL, 0, 4096, 12288, 1, 2, NULL}, {90, 0, "auto", NULL, NULL, 1, 1024, 5120, 1, 2, NULL},
               {90, 0, "auto", NULL, NULL, 0, 1023, 5120, 0, 0, NULL}, {90, 0, "auto", NULL, NULL, 1, 512, 12288, 0, 0, NULL},
               {120, 0, "auto", NULL, NULL, 0, 4096, 12288, 0, 0, NULL},
               /* unset: auto */
               {90, 0, NULL, NULL, NULL, 1, 4096, 5120, 1, 2, NULL}, {90, 0, NULL, NULL, NULL, 0, 1000, 5120, 0, 0, NULL},
               {120, 0, NULL, NULL, NULL, 0, 4096, 12288, 0, 0, NULL}, {90, 1, NULL, NULL, NULL, 1, 4096, 12288, 0, 0, NULL},
               {90, 0, NULL, "0", NULL, 0, 4096, 12288, 0, 0, NULL}, {90, 0, NULL, NULL, NULL, 0, 4096, 12288, 1, 0, "kr.widened"},
               {90, 0, NULL, NULL, "kq_prep2_q5_k", 1, 4096, 12288, 1, 0, NULL}};
    static const memra_format kwf[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const char *const kwn[] = {"memra_k_gemm_kr_q4_k_wgs", "memra_k_gemm_kr_q5_k_wgs", ""};
    static const char *const kwm[] = {"memra_k_gemm_kr_q4_k_wgm", "memra_k_gemm_kr_q5_k_wgm", ""};
    static const char *const kwd[2][3] = {{"memra_k_kq_widen_q4_k", "memra_k_kq_widen_q5_k", ""},
                                          {"memra_k_kq_prep2_q4_k", "memra_k_kq_prep2_q5_k", ""}};
    for (size_t i = 0; i < sizeof kwc / sizeof kwc[0]; i++) {
        g_kr_wg_knob = kwc[i].knob, g_kr_sums_knob = kwc[i].sums, g_missing_kernel = kwc[i].missing;
        g_no_tmap = kwc[i].no_tmap, g_scratch_refuse = kwc[i].refuse, g_n_warn = 0;
        g_mmq_wg_sd_knob = "1"; /* the unpinned =pre2 tile, _wgw2 (the pinned default's: below) */
        if (!open_mod(so, kwc[i].cc, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(kwc[i].m, kwc[i].n, 5120);
        a2.w_format = (int32_t)kwf[kwc[i].f];
        g_tmap_calls = 0;
        const memra_status st2 = m.desc->ops->gemm_kr(&c2, &a2);
        const int dflt = kwc[i].knob == NULL || strcmp(kwc[i].knob, "auto") == 0;
        const int pre = dflt || strncmp(kwc[i].knob, "pre", 3) == 0;
        const int mma = pre || strcmp(kwc[i].knob, "mma") == 0;
        /* the warnings of the open and the call: none under the default; one at least where an explicit knob
         * cannot apply on this device */
        const int must_warn = !dflt && (kwc[i].cc != 90 || kwc[i].no_tmap) && strcmp(kwc[i].knob, "0") != 0;
        const int warn_ok = dflt ? g_n_warn == 0 : must_warn ? g_n_warn > 0 : 1;
        /* (pre) the pass first, its grid (pre2: the token tiles after the row tiles), then the tile at launch 1 */
        const int wide = g_n_launched >= 2 && strcmp(g_launched[0], kwd[0][kwc[i].f]) == 0   ? 1
                         : g_n_launched >= 2 && strcmp(g_launched[0], kwd[1][kwc[i].f]) == 0 ? 2
                                                                                           : 0;
        const int t = wide ? 1 : 0;
        const unsigned wgx = (unsigned)(kwc[i].n + 127) / 128 + (wide == 2 ? (unsigned)(kwc[i].m + 127) / 128 : 0u);
        const int wide_ok = !wide || (g_grid_x[0] == wgx && g_grid_y[0] == 5120 / 128 && g_grid_z[0] == 1 &&
                                      g_block_x[0] == KW_THREADS && g_smem[0] == 0);
        const char *got = g_n_launched > t ? g_launched[t] : "";
        const int is_wg = strcmp(got, wide == 2   ? "memra_k_gemm_kr_kq_wgw2"
                                      : wide == 1 ? "memra_k_gemm_kr_kq_wgw"
                                                  : (mma ? kwm : kwn)[kwc[i].f]) == 0;
        const int shape_ok = !is_wg || (g_grid_x[t] == (unsigned)(kwc[i].m + 127) / 128 &&
                                        g_grid_y[t] == (unsigned)(kwc[i].n + 127) / 128 && g_block_x[t] == 384 &&
                                        g_smem[t] == (unsigned)(mma ? R3W_SMEM_BYTES_KM : R3W_SMEM_BYTES_KQ) &&
                                        g_tmap_calls == 1 &&
                                        g_tmap_rank[0] == 3 && g_tmap_box[0] == 128 && g_tmap_box0[0] == 128 &&
                                        g_tmap_swz[0] == 3 && (g_grid_z[t] == 1) == (g_n_launched == t + 1));
        const int good = st2 == MEMRA_STATUS_OK && g_n_launched >= 1 && is_wg == kwc[i].want && shape_ok &&
                         wide == kwc[i].wide && wide_ok && (is_wg || strstr(got, "memra_k_gemm_kr_") == got) && warn_ok;
        printf("  KR_WG=%s KR_SUMS=%s cc %d%s%s%s%s gemm_kr %s %d x %d x 5120: %s%s on %u x %u x %u (%u threads), %d maps, "
               "%d warnings  %s\n",
               kwc[i].knob ? kwc[i].knob : "unset", kwc[i].sums ? kwc[i].sums : "unset", kwc[i].cc,
               kwc[i].missing ? ", image without " : "", kwc[i].missing ? kwc[i].missing : "",
               kwc[i].no_tmap ? ", no tensor maps" : "", kwc[i].refuse ? ", no scratch for the image" : "",
               kwc[i].f == 0 ? "q4_k" : kwc[i].f == 1 ? "q5_k" : "q6_k", kwc[i].m, kwc[i].n, wide == 2 ? "weight and tokens prepared, then " : wide ? "widened, then " : "",
               got, g_grid_x[t], g_grid_y[t], g_grid_z[t], g_block_x[t], g_tmap_calls, g_n_warn, good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_kr_wg_knob = "0", g_kr_sums_knob = NULL, g_missing_kernel = NULL, g_no_tmap = 0, g_scratch_refuse = NULL;
    g_mmq_wg_sd_knob = NULL;
    /* MEMRA_MMQ_WG_SEED=pin (or unset, where pin is mmq.h's default) under the default KR_WG (=pre2 from 1024 tokens): the
     * prepared tile's pinned twin _wgw2f after the preparing pass; without it in the image, the _wgm tile (the
     * same results); SEED=1: _wgw2 */
    static const struct {
        int f;
        const char *missing, *want, *seed;
    } kpc[] = {{0, NULL, "memra_k_gemm_kr_kq_wgw2f", "pin"}, {1, NULL, "memra_k_gemm_kr_kq_wgw2f", "pin"},
               {0, "kq_wgw2f", "memra_k_gemm_kr_q4_k_wgm", "pin"}, {0, NULL, "memra_k_gemm_kr_kq_wgw2" PIN_SFX, NULL},
               {1, NULL, "memra_k_gemm_kr_kq_wgw2" PIN_SFX, NULL}, {0, "kq_wgw2" PIN_SFX, "memra_k_gemm_kr_q4_k_wgm", NULL},
               {1, NULL, "memra_k_gemm_kr_kq_wgw2", "1"}};
    for (size_t i = 0; i < sizeof kpc / sizeof kpc[0]; i++) {
        g_kr_wg_knob = NULL, g_mmq_wg_sd_knob = kpc[i].seed, g_missing_kernel = kpc[i].missing;
        if (!open_mod(so, 90, &m)) return 0;
        memra_call c2 = call_of(&m);
        memra_gemm_args a2 = gemm(4096, 12288, 5120);
        a2.w_format = (int32_t)kwf[kpc[i].f];
        const memra_status st2 = m.desc->ops->gemm_kr(&c2, &a2);
        const int t = kpc[i].missing ? 0 : 1;
        const int good = st2 == MEMRA_STATUS_OK && g_n_launched == t + 1 && strcmp(g_launched[t], kpc[i].want) == 0 &&
                         (t == 0 || strcmp(g_launched[0], kwd[1][kpc[i].f]) == 0);
        printf("  WG_SEED=%s KR_WG=unset%s%s cc 90 gemm_kr %s 4096 x 12288 x 5120: %d launches, %s  %s\n",
               kpc[i].seed ? kpc[i].seed : "unset", kpc[i].missing ? ", image without " : "", kpc[i].missing ? kpc[i].missing : "", kpc[i].f ? "q5_k" : "q4_k",
               g_n_launched, g_n_launched > t ? g_launched[t] : "-", good ? "ok" : "FAIL");
        ok &= good;
        g_n_launched = 0;
        ok &= close_mod(&m, 1);
    }
    g_kr_wg_knob = "0", g_mmq_wg_sd_knob = NULL, g_missing_kernel = NULL;
    /* MEMRA_MMQ_ONE=1: the one-CTA builds, gemm_q8_0r's _bo on cc 9.0 and 12.0 (beside the bulk
     * tiles), gemm_kr's _to (Q4_K TC) and _o (Q5_K, Q6_K per-32) at their default folds; Q5_K on
     * the TC fold (KR_TC=1) and the cp.async tiles (BULK=0) keep their two-CTA kernels; unset and
     * q6_k: Q6_K alone at one CTA; 0: no one-CTA kernel anywhere. MEMRA_MMQ_KR_SUMS (unset: on) puts
     * Q4_K's (TC fold) and Q5_K's (either fold) two-CTA tiles on the sum plane (_tx, _x); 0 keeps the MMA sums.
     * MEMRA_MMQ_KR_BULK (unset: on) puts the TF32-fold sum-plane tiles on the bulk copies (_txb) on cc 9.0
     * only; with it 0, with the sum plane off, or on cc 12.0, the _tx / _t tiles serve. MEMRA_MMQ_KR6_BULK
     * (unset: on) puts Q6_K's one-CTA tiles on them (_ob) on cc 9.0.
     * want: the suffix each call's tile name must end in */
    static const struct {
        int cc;
        const char *one, *tc, *bulk, *sums, *krb, *want[4]; /* gemm_q8_0r, gemm_kr q4_k, q5_k, q6_k */
    } ones[] = {{90, "1", NULL, NULL, NULL, NULL, {"bo", "to", "txb", "ob"}},    {120, "1", NULL, NULL, NULL, NULL, {"bo", "to", "tx", "o"}},
                {90, "1", "q4_k", NULL, NULL, NULL, {"bo", "to", "o", "ob"}},     {90, "1", "q4_k", "0", NULL, NULL, {"", "to", "o", "ob"}},
                {90, NULL, NULL, NULL, NULL, NULL, {"b", "txb", "txb", "ob"}},   {90, "q6_k", NULL, NULL, NULL, NULL, {"b", "txb", "txb", "ob"}},
                {120, NULL, NULL, NULL, NULL, NULL, {"b", "tx", "tx", "o"}},    {90, "0", NULL, NULL, NULL, NULL, {"b", "txb", "txb", ""}},
                {90, NULL, NULL, NULL, "0", NULL, {"b", "t", "t", "ob"}},        {90, NULL, "1", NULL, "1", NULL, {"b", "txb", "txb", "ob"}},
                {90, NULL, "0", NULL, NULL, NULL, {"b", "", "x", "ob"}},         {90, NULL, "q4_k", NULL, NULL, NULL, {"b", "txb", "x", "ob"}},
                {90, NULL, "q4_k", NULL, "0", NULL, {"b", "t", "", "ob"}},
                {90, NULL, NULL, NULL, NULL, "1", {"b", "txb", "txb", "ob"}},
                {90, NULL, NULL, NULL, NULL, "0", {"b", "tx", "tx", "ob"}},
                {120, NULL, NULL, NULL, NULL, "1", {"b", "tx", "tx", "o"}},
                {90, NULL, NULL, NULL, "0", "1", {"b", "t", "t", "ob"}},
                {90, NULL, "q4_k", NULL, NULL, "1", {"b", "txb", "x", "ob"}},
                {90, NULL, "q4_k", NULL, NULL, "0", {"b", "tx", "x", "ob"}}};
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) {
        g_mmq_one_knob = ones[i].one, g_kr_tc_knob = ones[i].tc, g_mmq_bulk_knob = ones[i].bulk;
        g_kr_sums_knob = ones[i].sums, g_kr_bulk_knob = ones[i].krb;
        if (!open_mod(so, ones[i].cc, &m)) return 0;
        for (int f = -1; f < 3; f++) {
            memra_call c2 = call_of(&m);
            memra_gemm_args a2 = gemm(4096, 12288, 5120);
            if (f >= 0) a2.w_format = (int32_t)kq[f];
            const memra_status st2 = f < 0 ? m.desc->ops->gemm_q8_0r(&c2, &a2) : m.desc->ops->gemm_kr(&c2, &a2);
            const char *got = g_n_launched > 0 ? g_launched[0] : "";
            char stem[64];
            snprintf(stem, sizeof stem, "%s", f < 0 ? "memra_k_gemm_q8_0r_mt" : kq_tile[f]);
            const char *rest = tile_suffix(got, stem); /* then exactly the suffix */
            const int good = st2 == MEMRA_STATUS_OK && g_n_launched == 1 && rest != NULL &&
                             strcmp(rest, ones[i].want[f + 1]) == 0;
            printf("  ONE=%s KR_TC=%s BULK=%s KR_SUMS=%s KR_BULK=%s cc %d %s: %s, want a tile ending \"%s\"  %s\n",
                   ones[i].one ? ones[i].one : "unset", ones[i].tc ? ones[i].tc : "unset",
                   ones[i].bulk ? ones[i].bulk : "unset", ones[i].sums ? ones[i].sums : "unset",
                   ones[i].krb ? ones[i].krb : "unset", ones[i].cc,
                   f < 0 ? "gemm_q8_0r" : f == 0 ? "gemm_kr q4_k" : f == 1 ? "gemm_kr q5_k" : "gemm_kr q6_k", got,
                   ones[i].want[f + 1], good ? "ok" : "FAIL");
            ok &= good;
            g_n_launched = 0;
        }
        ok &= close_mod(&m, 1);
    }
    g_mmq_one_knob = NULL, g_kr_tc_knob = NULL, g_mmq_bulk_knob = NULL, g_kr_sums_knob = NULL, g_kr_bulk_knob = NULL;
    return ok;
}

/* gemm_experts with lane gemm_fp8_blk on the fp8blk module: m rows over E experts, n = 300,
 * k = 256 (2 blocks of 128), x_scale xsc: the routing kernel (1 x 1024), the quantiser in expert
 * order `quant` on ceil(2 m / 32) blocks of 256, the 128-row grouped tile on 3 x gy (256 threads;
 * gy = 0: not launched, no 128-row tile can exist) and the 64-row remainder tile on 3 x gy2 (128
 * threads), gy and gy2 the worst-case tile counts (min(ceil(m / 128) + E, m / 65) and min(E, m));
 * all plain launches. */
static int fp8blk_experts_launch(mod *m, int rows, int E, float xsc, const char *quant, unsigned gy, unsigned gy2)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(rows, 300, 256);
    a.x_scale = xsc;
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8_blk, .n_experts = E,
                                  .ids = 0x60000000};
    const memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    const unsigned qx = (unsigned)((2 * rows + 31) / 32);
    const int nl = gy ? 4 : 3, l64 = nl - 1;
    int grid = g_n_launched == nl && g_grid_x[0] == 1 && g_grid_y[0] == 1 && g_block_x[0] == 1024 &&
               g_grid_x[1] == qx && g_grid_y[1] == 1 && g_block_x[1] == 256 && g_grid_x[l64] == 3 &&
               g_grid_y[l64] == gy2 && g_block_x[l64] == 128;
    if (gy) grid &= g_grid_x[2] == 3 && g_grid_y[2] == gy && g_block_x[2] == 256;
    if (g_n_launched == nl) {
        printf("    grids: route %u x %u (%u), quant %u x %u (%u)", g_grid_x[0], g_grid_y[0], g_block_x[0], g_grid_x[1],
               g_grid_y[1], g_block_x[1]);
        for (int i = 2; i < nl; i++) printf(", grouped %u x %u (%u)", g_grid_x[i], g_grid_y[i], g_block_x[i]);
        printf("; want 1 x 1 (1024), %u x 1 (256)", qx);
        if (gy) printf(", 3 x %u (256)", gy);
        printf(", 3 x %u (128)  %s\n", gy2, grid ? "ok" : "FAIL");
    }
    char what[64];
    snprintf(what, sizeof what, "gemm_experts fp8_blk m %d E %d", rows, E);
    const char *want[4] = {"memra_k_fp8blk_experts_route", quant, "memra_k_fp8blk_experts_wgmma",
                           "memra_k_fp8blk_experts_wgmma64"};
    if (!gy) want[2] = want[3];
    const int exact64 = g_n_launched == nl && strcmp(g_launched[l64], "memra_k_fp8blk_experts_wgmma64") == 0 &&
                        (!gy || strcmp(g_launched[2], "memra_k_fp8blk_experts_wgmma") == 0);
    return launched_exact(what, st, nl, want, (const int[]){0, 0, 0, 0}) && grid && exact64;
}

/* One gemm_experts call on lane gemm_fp8_blk: rows x 300 x 256 over 8 experts (ids on the device). */
static memra_status fp8blk_experts_call(mod *m, int rows)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(rows, 300, 256);
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8_blk, .n_experts = 8,
                                  .ids = 0x60000000};
    return m->desc->ops->gemm_experts(&c, &a, &ex);
}

/* MEMRA_FP8BLK_XE_WIDE=1: the 128-row tiles on the 128 x 256 kernel, ceil(n / 256) = 2 columns
 * of them for n = 300, the 64-row remainder tile as
 * before on 3 columns; m = 300 rows over 8 experts. */
static int fp8blk_experts_wide(mod *m)
{
    const memra_status st = fp8blk_experts_call(m, 300);
    const int grid = g_n_launched == 4 && g_grid_x[2] == 2 && g_grid_y[2] == 300 / 65 && g_block_x[2] == 256 &&
                     g_grid_x[3] == 3 && g_grid_y[3] == 8 && g_block_x[3] == 128;
    printf("    grids (wide): grouped %u x %u (%u), %u x %u (%u); want 2 x %d (256), 3 x 8 (128)  %s\n", g_grid_x[2],
           g_grid_y[2], g_block_x[2], g_grid_x[3], g_grid_y[3], g_block_x[3], 300 / 65, grid ? "ok" : "FAIL");
    return launched_exact("gemm_experts fp8_blk wide", st, 4,
                          (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted",
                                           "memra_k_fp8blk_experts_wgmma_wide", "memra_k_fp8blk_experts_wgmma64"},
                          (const int[]){0, 0, 0, 0}) &&
           grid;
}

/* MEMRA_FP8BLK_XE_ONE=1: where the experts average 128 rows or more (m = 1024 over 8) one table
 * of 128-row tiles on the tile-major kernel, grid (ceil(m / 128) + E = 16 tiles, ceil(n / 128) = 3
 * columns), no 64-row launch; below that (m = 300 over 8) the two tables as without it. */
static int fp8blk_experts_one(mod *m)
{
    const memra_status st = fp8blk_experts_call(m, 1024);
    const int grid = g_n_launched == 3 && g_grid_x[2] == 16 && g_grid_y[2] == 3 && g_block_x[2] == 256;
    printf("    grids (one table): grouped %u x %u (%u); want 16 x 3 (256)  %s\n", g_grid_x[2], g_grid_y[2],
           g_block_x[2], grid ? "ok" : "FAIL");
    int ok = launched_exact("gemm_experts fp8_blk one table", st, 3,
                            (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted",
                                             "memra_k_fp8blk_experts_wgmma_t"},
                            (const int[]){0, 0, 0}) &&
             grid;
    ok &= fp8blk_experts_launch(m, 300, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 300 / 65, 8);
    return ok;
}

/* MEMRA_FP8BLK_XE_PT=1, lane gemm_fp8 (per-tensor e4m3 experts), m = 300 over 8: the routing,
 * the experts' maxima (8 rows a block: 38 blocks), their expansion to rows (2 blocks of 256), the
 * quantiser at those maxima, the per-tensor tile on one tile-major table (min(ceil(300 / 128) + 8,
 * 300) = 11 tiles x 3 columns); with a static x_scale the given quantiser instead of the three;
 * without w_scales INVALID_ARGUMENT. With MEMRA_FP8BLK_XE_PT=0 (pt_on 0) the lane declines by name. */
static int fp8blk_experts_refused(mod *m, const char *what, memra_gemm_args a, memra_gemm_experts_args ex,
                                  memra_status want);
static int fp8blk_experts_pt(mod *m, int pt_on)
{
    memra_call c = call_of(m);
    memra_gemm_args a = gemm(300, 300, 256);
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8, .n_experts = 8,
                                  .ids = 0x60000000, .w_scales = 0x68000000};
    if (!pt_on) return declined("gemm_experts fp8 lane (no knob)", m->desc->ops->gemm_experts(&c, &a, &ex), &c,
                                "MEMRA_FP8BLK_XE_PT=0");
    memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    int grid = g_n_launched == 5 && g_grid_x[1] == 38 && g_block_x[1] == 256 && g_grid_x[2] == 2 &&
               g_grid_x[4] == 11 && g_grid_y[4] == 3 && g_block_x[4] == 256;
    printf("    grids (per-tensor): amax %u (%u), expand %u, grouped %u x %u (%u); want 38 (256), 2, 11 x 3 (256)  %s\n",
           g_grid_x[1], g_block_x[1], g_grid_x[2], g_grid_x[4], g_grid_y[4], g_block_x[4], grid ? "ok" : "FAIL");
    int ok = launched_exact("gemm_experts fp8 lane", st, 5,
                            (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_experts_amax",
                                             "memra_k_fp8blk_experts_expand", "memra_k_fp8blk_quant_sorted_amax",
                                             "memra_k_fp8blk_experts_wgmma_pt"},
                            (const int[]){0, 0, 0, 0, 0}) &&
             grid;
    c = call_of(m);
    a.x_scale = 0.02f;
    st = m->desc->ops->gemm_experts(&c, &a, &ex);
    ok &= launched_exact("gemm_experts fp8 lane, static x_scale", st, 3,
                         (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted_given",
                                          "memra_k_fp8blk_experts_wgmma_pt"},
                         (const int[]){0, 0, 0});
    a.x_scale = 0.0f;
    ex.w_scales = 0;
    ok &= fp8blk_experts_refused(m, "gemm_experts fp8, no w_scales", a, ex, MEMRA_STATUS_INVALID_ARGUMENT);
    return ok;
}

/* A gemm_experts call that must fail with `want` and launch nothing. */
static int fp8blk_experts_refused(mod *m, const char *what, memra_gemm_args a, memra_gemm_experts_args ex,
                                  memra_status want)
{
    memra_call c = call_of(m);
    const memra_status st = m->desc->ops->gemm_experts(&c, &a, &ex);
    const int ok = st == want && g_n_launched == 0;
    printf("  %-28s status %d (want %d), %d launches  %s\n", what, (int)st, (int)want, g_n_launched, ok ? "ok" : "FAIL");
    g_n_launched = 0;
    return ok;
}

/* gemm_experts on the fp8blk module (issue 30): picks, grids, declines and refusals. */
static int fp8blk_experts(mod *m)
{
    int ok = 1;
    ok &= resolved("memra_k_fp8blk_experts_route") && resolved("memra_k_fp8blk_quant_sorted") &&
          resolved("memra_k_fp8blk_quant_sorted_given") && resolved("memra_k_fp8blk_experts_wgmma") &&
          resolved("memra_k_fp8blk_experts_wgmma64");
    ok &= fp8blk_experts_launch(m, 300, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 300 / 65, 8);
    ok &= fp8blk_experts_launch(m, 5, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 0, 5); /* no 128-row tile */
    ok &= fp8blk_experts_launch(m, 4096, 128, 0.02f, "memra_k_fp8blk_quant_sorted_given", 4096 / 65, 128);
    ok &= fp8blk_experts_launch(m, 100000, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 782 + 8, 8);
    memra_gemm_args a = gemm(300, 300, 256);
    a.x_amax = 0x60000000; /* ignored (module.h): the own pass */
    memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8_blk, .n_experts = 8,
                                  .ids = 0x70000000};
    memra_call c = call_of(m);
    ok &= launched_exact("gemm_experts x_amax ignored", m->desc->ops->gemm_experts(&c, &a, &ex), 4,
                         (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted",
                                          "memra_k_fp8blk_experts_wgmma", "memra_k_fp8blk_experts_wgmma64"},
                         (const int[]){0, 0, 0, 0});
    a.x_amax = 0;
    ex.lane = MEMRA_OP_gemm_q8_0r;
    c = call_of(m);
    ok &= declined("gemm_experts q8_0r lane", m->desc->ops->gemm_experts(&c, &a, &ex), &c, "gemm_fp8_blk and gemm_fp8 lanes only");
    ex.lane = MEMRA_OP_gemm_fp8_blk, ex.n_experts = 5000;
    c = call_of(m);
    ok &= declined("gemm_experts 5000 experts", m->desc->ops->gemm_experts(&c, &a, &ex), &c, "4096 experts");
    ex.n_experts = 8;
    memra_gemm_args b = a;
    b.k = 24;
    c = call_of(m);
    ok &= declined("gemm_experts k = 24", m->desc->ops->gemm_experts(&c, &b, &ex), &c, "multiple of 16");
    b = a, b.x = 0x30000008;
    c = call_of(m);
    ok &= declined("gemm_experts x misaligned", m->desc->ops->gemm_experts(&c, &b, &ex), &c, "aligned");
    b = a, b.w_scale_grid = 0;
    ok &= fp8blk_experts_refused(m, "gemm_experts no grid table", b, ex, MEMRA_STATUS_INVALID_ARGUMENT);
    b = a, b.x_scale = -1.0f;
    ok &= fp8blk_experts_refused(m, "gemm_experts x_scale -1", b, ex, MEMRA_STATUS_INVALID_ARGUMENT);
    memra_gemm_experts_args bx = ex;
    bx.ids = 0;
    ok &= fp8blk_experts_refused(m, "gemm_experts ids NULL", a, bx, MEMRA_STATUS_INVALID_ARGUMENT);
    bx = ex, bx.n_experts = 0;
    ok &= fp8blk_experts_refused(m, "gemm_experts 0 experts", a, bx, MEMRA_STATUS_INVALID_ARGUMENT);
    b = a, b.m = 0;
    ok &= fp8blk_experts_refused(m, "gemm_experts m = 0", b, ex, MEMRA_STATUS_OK);
    return ok;
}

/* The tensor-map grouped launch's kernels, exactly: the routing, the quantiser in expert order, the
 * experts' maps, then `tile` and, where not NULL, `after` (none with PDL) */
static int fp8blk_tma_launched(const char *what, memra_status st, const char *tile, const char *after)
{
    /* the tile exactly (launched() matches prefixes: experts_tma would pass for experts_tma_pf4) */
    const int exact = g_n_launched > 3 && strcmp(g_launched[3], tile) == 0;
    if (!exact) printf("  %-28s tile launch %s, want exactly %s  FAIL\n", what, g_n_launched > 3 ? g_launched[3] : "none", tile);
    return exact && launched_exact(what, st, after ? 5 : 4,
                          (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted",
                                           "memra_k_fp8blk_experts_maps", tile, after},
                          (const int[]){0, 0, 0, 0, 0});
}

/* The tensor-map grouped block-128 launch (MEMRA_FP8BLK_XE_TMA unset): the routing, the quantiser
 * in expert order, the experts' weight maps (a warp an expert: ceil(8 / 4) = 2 blocks of 128) and
 * `tile` on one table of min(ceil(rows / 128) + 8, rows) row tiles (11 for 300 rows, 321 for
 * 40000) x ceil(300 / 256) = 2 column tiles, or ceil(300 / 128) = 3 for the 128-wide tiles
 * (_n128, _n128p), 384 threads, two maps encoded. By default (MEMRA_FP8BLK_XE_N128 and _GS unset)
 * 300 rows take _n128 (11 x 2 = 22 CTAs of 256 columns: under 4 x 132 SMs) and 40000 rows _gs
 * (321 x 2 = 642) */
static int fp8blk_experts_tma(mod *m, int rows, const char *tile)
{
    g_tmap_calls = 0;
    const memra_status st = fp8blk_experts_call(m, rows);
    const unsigned cols = strstr(tile, "_n128") != NULL ? 3 : 2;
    const unsigned tiles = (unsigned)((rows + 127) / 128 + 8 < rows ? (rows + 127) / 128 + 8 : rows);
    const int grid = g_n_launched == 4 && g_grid_x[2] == 2 && g_block_x[2] == 128 && g_grid_x[3] == tiles &&
                     g_grid_y[3] == cols && g_block_x[3] == 384 && g_tmap_calls == 2;
    printf("    grids (tensor maps, %d rows): maps %u (%u), grouped %u x %u (%u), %d maps encoded; want 2 (128), "
           "%u x %u (384), 2  %s\n",
           rows, g_grid_x[2], g_block_x[2], g_grid_x[3], g_grid_y[3], g_block_x[3], g_tmap_calls, tiles, cols,
           grid ? "ok" : "FAIL");
    char what[64];
    snprintf(what, sizeof what, "gemm_experts fp8_blk tma %d rows", rows);
    return fp8blk_tma_launched(what, st, tile, NULL) && grid;
}

/* MEMRA_FP8BLK_XE_PERSIST=1: the persistent tile `tile` on gx CTAs (min(row tiles x column tiles,
 * 132 SMs)), grid.y 1, after the same routing, quantiser and maps launches */
static int fp8blk_experts_persist(mod *m, int rows, const char *tile, unsigned gx)
{
    g_tmap_calls = 0;
    const memra_status st = fp8blk_experts_call(m, rows);
    const int grid = g_n_launched == 4 && g_grid_x[3] == gx && g_grid_y[3] == 1 && g_grid_z[3] == 1 &&
                     g_block_x[3] == 384 && g_tmap_calls == 2;
    printf("    grids (persistent, %d rows): grouped %u x %u x %u (%u), %d maps encoded; want %u x 1 x 1 (384), 2  %s\n",
           rows, g_grid_x[3], g_grid_y[3], g_grid_z[3], g_block_x[3], g_tmap_calls, gx, grid ? "ok" : "FAIL");
    char what[64];
    snprintf(what, sizeof what, "gemm_experts fp8_blk persist %d rows", rows);
    return fp8blk_tma_launched(what, st, tile, NULL) && grid;
}

/* MEMRA_FP8BLK_XE_TALL=1: the routing into 256-row tiles, the quantiser, the maps (x's box 256
 * rows, the weights' 128; encoded twice: checked before the routing, then for the launch) and the
 * 256 x 128 persistent tile on min((ceil(rows / 256) + 8) x ceil(300 / 128), 132) CTAs: 300 rows
 * (2 + 8) x 3 = 30, 40000 rows (157 + 8) x 3 = 495 -> 132 */
static int fp8blk_experts_tall(mod *m, int rows, unsigned gx)
{
    g_tmap_calls = 0;
    memset(g_tmap_box, 0, sizeof g_tmap_box);
    const memra_status st = fp8blk_experts_call(m, rows);
    const int grid = g_n_launched == 4 && g_grid_x[3] == gx && g_grid_y[3] == 1 && g_grid_z[3] == 1 &&
                     g_block_x[3] == 384 && g_tmap_calls == 4 && g_tmap_box[0] == 256 && g_tmap_box[1] == 128 &&
                     g_tmap_box[2] == 256 && g_tmap_box[3] == 128;
    printf("    grids (tall, %d rows): grouped %u x %u x %u (%u), %d maps encoded, boxes %u / %u / %u / %u rows; want "
           "%u x 1 x 1 (384), 4, 256 / 128 / 256 / 128  %s\n",
           rows, g_grid_x[3], g_grid_y[3], g_grid_z[3], g_block_x[3], g_tmap_calls, g_tmap_box[0], g_tmap_box[1],
           g_tmap_box[2], g_tmap_box[3], gx, grid ? "ok" : "FAIL");
    char what[64];
    snprintf(what, sizeof what, "gemm_experts fp8_blk tall %d rows", rows);
    /* the tile exactly (launched() matches prefixes and clears the record) */
    const int exact = g_n_launched > 3 && strcmp(g_launched[3], "memra_k_fp8blk_experts_tma_tall") == 0;
    return launched_exact(what, st, 4,
                          (const char *[]){"memra_k_fp8blk_experts_route_tall", "memra_k_fp8blk_quant_sorted",
                                           "memra_k_fp8blk_experts_maps", "memra_k_fp8blk_experts_tma_tall"},
                          (const int[]){0, 0, 0, 0}) &&
           exact && grid;
}

/* MEMRA_FP8BLK_XE_TMA64=1: the two tables, the 128-row one on the tensor-map tile (min(ceil(300 /
 * 128) + 8, 300 / 65) = 4 tiles x 2 columns of 256), the 64-row remainders on the cp.async tile
 * (ceil(300 / 128) = 3 columns x min(8, 300) = 8 tiles, 128 threads) */
static int fp8blk_experts_tma64(mod *m)
{
    const memra_status st = fp8blk_experts_call(m, 300);
    const int grid = g_n_launched == 5 && g_grid_x[3] == 4 && g_grid_y[3] == 2 && g_block_x[3] == 384 &&
                     g_grid_x[4] == 3 && g_grid_y[4] == 8 && g_block_x[4] == 128;
    printf("    grids (tensor maps + 64-row table): %u x %u (%u), %u x %u (%u); want 4 x 2 (384), 3 x 8 (128)  %s\n",
           g_grid_x[3], g_grid_y[3], g_block_x[3], g_grid_x[4], g_grid_y[4], g_block_x[4], grid ? "ok" : "FAIL");
    return fp8blk_tma_launched("gemm_experts fp8_blk tma64", st, "memra_k_fp8blk_experts_tma_gs",
                               "memra_k_fp8blk_experts_wgmma64") &&
           grid;
}

/* MEMRA_FP8BLK_XE_SPLIT=N: the tensor-map tile's split entry point on min(N, ceil(256 / 128) = 2) k slices (grid.z),
 * then memra_k_fp8blk_experts_sum over ceil(300 / 256) = 2 x min(300, 1024) = 300 blocks of 256;
 * with MEMRA_FP8BLK_XE_TMA64=1 (two tables) no split */
static int fp8blk_experts_split(mod *m, int tma64)
{
    if (tma64) { /* fp8blk_experts_tma64's launches, the tensor-map tile unsplit */
        const int launches = fp8blk_experts_tma64(m), z1 = g_grid_z[3] == 1;
        printf("    split with the 64-row table: grouped grid.z %u, want 1  %s\n", g_grid_z[3], z1 ? "ok" : "FAIL");
        return launches && z1;
    }
    const memra_status st = fp8blk_experts_call(m, 300);
    const int grid = g_n_launched == 5 && g_grid_x[3] == 11 && g_grid_y[3] == 2 && g_grid_z[3] == 2 &&
                     g_block_x[3] == 384 && g_grid_x[4] == 2 && g_grid_y[4] == 300 && g_block_x[4] == 256;
    printf("    grids (split): grouped %u x %u x %u (%u), sum %u x %u (%u); want 11 x 2 x 2 (384), 2 x 300 (256)  %s\n",
           g_grid_x[3], g_grid_y[3], g_grid_z[3], g_block_x[3], g_grid_x[4], g_grid_y[4], g_block_x[4],
           grid ? "ok" : "FAIL");
    return fp8blk_tma_launched("gemm_experts fp8_blk tma split", st, "memra_k_fp8blk_experts_tma_split",
                               "memra_k_fp8blk_experts_sum") &&
           grid;
}

/* MEMRA_FP8BLK_XE_PF=4|8: the tensor-map tile's prefetching entry point on fp8blk_experts_tma's grid
 * (11 x 2, 384 threads, one table); any other distance keeps the plain tile, and a split wins over it.
 * pf "gs": MEMRA_FP8BLK_XE_GS=1's entry point on the same grid */
static int fp8blk_experts_pf(mod *m, const char *pf, int split)
{
    if (split) return fp8blk_experts_split(m, 0);
    const int gs = strcmp(pf, "gs") == 0;
    if (!gs && strcmp(pf, "4") != 0 && strcmp(pf, "8") != 0) /* no prefetch tile: the default choice */
        return fp8blk_experts_tma(m, 300, "memra_k_fp8blk_experts_tma_n128");
    const memra_status st = fp8blk_experts_call(m, 300);
    const int grid = g_n_launched == 4 && g_grid_x[3] == 11 && g_grid_y[3] == 2 && g_grid_z[3] == 1 &&
                     g_block_x[3] == 384;
    printf("    grids (prefetch %s): grouped %u x %u x %u (%u); want 11 x 2 x 1 (384)  %s\n", pf, g_grid_x[3],
           g_grid_y[3], g_grid_z[3], g_block_x[3], grid ? "ok" : "FAIL");
    return fp8blk_tma_launched("gemm_experts fp8_blk tma prefetch", st,
                               gs                     ? "memra_k_fp8blk_experts_tma_gs"
                               : strcmp(pf, "4") == 0 ? "memra_k_fp8blk_experts_tma_pf4"
                                                      : "memra_k_fp8blk_experts_tma_pf8",
                               NULL) &&
           grid;
}

static int case_fp8blk(const char *so)
{
    mod m;
    /* the tensor-map grouped tile is the default; off here, so that the cases below see the
     * cp.async tiles they name (its own case at the end) */
    g_xe_tma_knob = "0";
    g_xe_pt_knob = "0"; /* lane gemm_fp8 off in this instance: declined by name below */
    const int opened = open_mod(so, 90, &m);
    g_xe_pt_knob = NULL;
    if (!opened) return 0;
    int ok = 1;
    memra_call c = call_of(&m);
    memra_gemm_args a = gemm(64, 256, 512);
    /* cc 9.0: the warp-specialised warpgroup kernel on tensor maps of the sm_90a image serves */
    ok &= launched("gemm_fp8_blk", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_tma"}, (const int[]){0, 0});
    ok &= fp8blk_given(&m, "memra_k_fp8blk_wgmma_tma");
    ok &= fp8blk_experts(&m);
    ok &= fp8blk_experts_pt(&m, 0); /* lane gemm_fp8 declines with MEMRA_FP8BLK_XE_PT=0 (set below) */
    a.k = 24;
    c = call_of(&m);
    ok &= declined("gemm_fp8_blk k = 24", m.desc->ops->gemm_fp8_blk(&c, &a), &c, "multiple of 16");
    /* a block-128 weight's load-time kernel from this module's own fp8_weight image, so that it
     * serves such weights with the sm90 module disabled */
    c = call_of(&m);
    ok &= launched("fp8_nan_count (fp8blk)", m.desc->ops->fp8_nan_count(&c, 0x1000, 1 << 20, 0x2000), 1,
                   (const char *[]){"memra_k_fp8_nan_count"}, (const int[]){0});
    ok &= close_mod(&m, 2); /* fp8_weight, fp8blk */
    g_xe_wide_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_wide(&m);
    ok &= close_mod(&m, 2);
    g_xe_wide_knob = NULL;
    g_xe_one_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_one(&m);
    ok &= close_mod(&m, 2);
    g_xe_one_knob = NULL;
    g_xe_pt_knob = NULL; /* the default: on */
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_pt(&m, 1);
    ok &= close_mod(&m, 2);
    /* MEMRA_FP8BLK_WGMMA=0: the mma.sync kernel (the sm_120 design) serves cc 9.0 */
    g_wgmma_knob = "0";
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    a = gemm(64, 256, 512);
    ok &= launched("gemm_fp8_blk (MEMRA_FP8BLK_WGMMA=0)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_gemm"}, (const int[]){0, 0});
    ok &= fp8blk_given(&m, "memra_k_fp8blk_gemm");
    {   /* the grouped tile is a warpgroup kernel: with the mma.sync kernel serving, gemm_experts declines */
        memra_gemm_args ga = gemm(300, 300, 256);
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8_blk, .n_experts = 8,
                                      .ids = 0x60000000};
        c = call_of(&m);
        ok &= declined("gemm_experts (WGMMA=0)", m.desc->ops->gemm_experts(&c, &ga, &ex), &c, "warpgroup kernels");
    }
    ok &= close_mod(&m, 2);
    /* MEMRA_FP8BLK_WGMMA=mbwide: the 128 x 256 tile where it fills four waves of the SMs (here 32 x 48
     * tiles), else 128 x 128; and with MEMRA_FP8BLK_WGMMA=wide at every shape */
    g_wgmma_knob = "mbwide";
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    a = gemm(4096, 12288, 5120);
    ok &= launched("gemm_fp8_blk 4096 x 12288 (mbwide)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_wide"}, (const int[]){0, 0});
    c = call_of(&m);
    a = gemm(64, 256, 512);
    ok &= launched("gemm_fp8_blk 64 x 256 (mbwide)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_mb"}, (const int[]){0, 0});
    ok &= close_mod(&m, 2);
    /* the default without the driver's tensor-map encoder: the mbwide choice */
    g_wgmma_knob = NULL;
    g_no_tmap = 1;
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    a = gemm(4096, 12288, 5120);
    ok &= launched("gemm_fp8_blk 4096 x 12288 (no tensor maps)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_wide"}, (const int[]){0, 0});
    ok &= close_mod(&m, 2);
    g_no_tmap = 0;
    g_wgmma_knob = "wide";
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    a = gemm(64, 256, 512);
    ok &= launched("gemm_fp8_blk (MEMRA_FP8BLK_WGMMA=wide)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_wide"}, (const int[]){0, 0});
    ok &= fp8blk_experts_launch(&m, 300, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 300 / 65, 8); /* any warpgroup mode */
    ok &= close_mod(&m, 2);
    /* MEMRA_FP8BLK_WGMMA=tma: the warp-specialised kernel on tensor maps (two encoded per call); without
     * cuTensorMapEncodeTiled the 128 x 128 mbarrier kernel */
    g_wgmma_knob = "tma";
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    a = gemm(64, 256, 512);
    g_tmap_calls = 0;
    ok &= launched("gemm_fp8_blk (MEMRA_FP8BLK_WGMMA=tma)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_tma"}, (const int[]){0, 0});
    if (g_tmap_calls != 2) {
        printf("  tma: %d tensor maps encoded, want 2  FAIL\n", g_tmap_calls);
        ok = 0;
    }
    ok &= close_mod(&m, 2);
    g_no_tmap = 1;
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    ok &= launched("gemm_fp8_blk (tma, no tensor maps)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma_mb"}, (const int[]){0, 0});
    ok &= close_mod(&m, 2);
    g_no_tmap = 0;
    /* MEMRA_FP8BLK_WGMMA=bar: the warpgroups in step through CTA barriers */
    g_wgmma_knob = "bar";
    if (!open_mod(so, 90, &m)) return 0;
    c = call_of(&m);
    ok &= launched("gemm_fp8_blk (MEMRA_FP8BLK_WGMMA=bar)", m.desc->ops->gemm_fp8_blk(&c, &a), 2,
                   (const char *[]){"memra_k_fp8blk_quant", "memra_k_fp8blk_wgmma"}, (const int[]){0, 0});
    ok &= close_mod(&m, 2);
    g_wgmma_knob = NULL;
    g_xe_tma_knob = NULL; /* the default: the tensor-map tile */
    g_fxe_persist_knob = "0"; /* the one-tile-a-CTA tiles; the persistent ones below */
    /* the width and scale path per setting, at 300 rows (a 22-CTA grid of 256-wide tiles) and at
     * 40000 (642 CTAs): the default 128 wide below 4 x 132 CTAs and the grid scales' tile above;
     * N128=1 128 wide at both; N128=0 256 wide at both; N128=0 GS=0 the plain 256-wide tile;
     * PIPE=1 the pipelined 128-wide tile; an unknown N128 value is auto */
    static const struct {
        const char *n128, *gs, *pipe, *tile300, *tile40000;
    } widths[] = {
        {NULL, NULL, NULL, "memra_k_fp8blk_experts_tma_n128", "memra_k_fp8blk_experts_tma_gs"},
        {"auto", NULL, NULL, "memra_k_fp8blk_experts_tma_n128", "memra_k_fp8blk_experts_tma_gs"},
        {"1", NULL, NULL, "memra_k_fp8blk_experts_tma_n128", "memra_k_fp8blk_experts_tma_n128"},
        {"0", NULL, NULL, "memra_k_fp8blk_experts_tma_gs", "memra_k_fp8blk_experts_tma_gs"},
        {"0", "0", NULL, "memra_k_fp8blk_experts_tma", "memra_k_fp8blk_experts_tma"},
        {NULL, "0", NULL, "memra_k_fp8blk_experts_tma_n128", "memra_k_fp8blk_experts_tma"},
        {NULL, NULL, "1", "memra_k_fp8blk_experts_tma_n128p", "memra_k_fp8blk_experts_tma_n128p"},
    };
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        g_xe_n128_knob = widths[i].n128;
        g_fxe_gs_knob = widths[i].gs;
        g_fxe_pipe_knob = widths[i].pipe;
        printf("  N128=%s GS=%s PIPE=%s\n", widths[i].n128 ? widths[i].n128 : "unset",
               widths[i].gs ? widths[i].gs : "unset", widths[i].pipe ? widths[i].pipe : "unset");
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_tma(&m, 300, widths[i].tile300);
        ok &= fp8blk_experts_tma(&m, 40000, widths[i].tile40000);
        ok &= close_mod(&m, 2);
    }
    g_xe_n128_knob = NULL;
    g_fxe_gs_knob = NULL;
    g_fxe_pipe_knob = NULL;
    /* MEMRA_FP8BLK_XE_PERSIST unset (the default), =1 and an unknown value (on unless 0), each with
     * N128 unset (both widths, chosen per call as above), =1 and =0; with PIPE=1 the pipelined tile
     * (no persistent form) */
    static const struct {
        const char *n128, *pipe, *tile300, *tile40000;
        unsigned gx300, gx40000;
    } pers[] = {
        {NULL, NULL, "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_gsp", 33, 132},
        {"1", NULL, "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_n128gp", 33, 132},
        {"0", NULL, "memra_k_fp8blk_experts_tma_gsp", "memra_k_fp8blk_experts_tma_gsp", 22, 132},
    };
    static const char *const persist_knobs[3] = {NULL, "1", "yes"};
    for (int p = 0; p < 3; p++) {
        g_fxe_persist_knob = persist_knobs[p];
        for (size_t i = 0; i < sizeof pers / sizeof pers[0]; i++) {
            g_xe_n128_knob = pers[i].n128;
            printf("  PERSIST=%s N128=%s\n", persist_knobs[p] ? persist_knobs[p] : "unset",
                   pers[i].n128 ? pers[i].n128 : "unset");
            if (!open_mod(so, 90, &m)) return 0;
            ok &= fp8blk_experts_persist(&m, 300, pers[i].tile300, pers[i].gx300);
            ok &= fp8blk_experts_persist(&m, 40000, pers[i].tile40000, pers[i].gx40000);
            ok &= close_mod(&m, 2);
        }
    }
    g_fxe_persist_knob = "1";
    g_xe_n128_knob = NULL;
    g_fxe_pipe_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_tma(&m, 300, "memra_k_fp8blk_experts_tma_n128p");
    ok &= close_mod(&m, 2);
    g_fxe_pipe_knob = NULL;
    /* MEMRA_FP8BLK_XE_L2=1 / 2: the hinted persistent tiles of each width; 3 (not a setting) the plain
     * ones; an image without the hinted tiles the plain ones; with PERSIST=0 the one-tile-a-CTA tiles */
    static const struct {
        const char *l2, *persist, *missing, *tile300, *tile40000;
        unsigned gx300;
    } l2s[] = {
        {"1", NULL, NULL, "memra_k_fp8blk_experts_tma_n128gph1", "memra_k_fp8blk_experts_tma_gsph1", 33},
        {"2", NULL, NULL, "memra_k_fp8blk_experts_tma_n128gph2", "memra_k_fp8blk_experts_tma_gsph2", 33},
        {"3", NULL, NULL, "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_gsp", 33},
        {"1", NULL, "gph1", "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_gsph1", 33},
        {"2", "0", NULL, "memra_k_fp8blk_experts_tma_n128", "memra_k_fp8blk_experts_tma_gs", 0},
    };
    for (size_t i = 0; i < sizeof l2s / sizeof l2s[0]; i++) {
        g_fxe_l2_knob = l2s[i].l2;
        g_fxe_persist_knob = l2s[i].persist;
        g_missing_kernel = l2s[i].missing;
        printf("  L2=%s PERSIST=%s%s%s\n", l2s[i].l2, l2s[i].persist ? l2s[i].persist : "unset",
               l2s[i].missing ? ", image without " : "", l2s[i].missing ? l2s[i].missing : "");
        if (!open_mod(so, 90, &m)) return 0;
        if (l2s[i].gx300 != 0) {
            ok &= fp8blk_experts_persist(&m, 300, l2s[i].tile300, l2s[i].gx300);
            ok &= fp8blk_experts_persist(&m, 40000, l2s[i].tile40000, 132);
        } else {
            ok &= fp8blk_experts_tma(&m, 300, l2s[i].tile300);
            ok &= fp8blk_experts_tma(&m, 40000, l2s[i].tile40000);
        }
        ok &= close_mod(&m, 2);
    }
    g_fxe_l2_knob = NULL;
    g_missing_kernel = NULL;
    g_fxe_persist_knob = NULL;
    /* MEMRA_FP8BLK_XE_RASTER: the persistent tiles' raster group (their last argument): N N, auto (and unset: the
     * default) 8 where the mean expert has 384 rows or more (40000 rows over 8 experts; 300 rows: 0), 0 none; on the
     * L2-hinted tiles too */
    static const struct {
        const char *knob, *l2;
        int rg300, rg40000;
    } ras[] = {{NULL, NULL, 0, 8}, {"5", NULL, 5, 5}, {"auto", NULL, 0, 8}, {"auto", "1", 0, 8}, {"0", NULL, 0, 0}};
    for (size_t i = 0; i < sizeof ras / sizeof ras[0]; i++) {
        g_fxe_raster_knob = ras[i].knob, g_fxe_l2_knob = ras[i].l2;
        if (!open_mod(so, 90, &m)) return 0;
        int got[2];
        for (int r = 0; r < 2; r++) {
            g_fxe_rg = -1;
            (void)fp8blk_experts_call(&m, r ? 40000 : 300);
            g_n_launched = 0;
            got[r] = g_fxe_rg;
        }
        const int good = got[0] == ras[i].rg300 && got[1] == ras[i].rg40000;
        printf("  XE_RASTER=%s%s: the persistent tile's group %d at 300 rows, %d at 40000 (want %d, %d)  %s\n",
               ras[i].knob ? ras[i].knob : "unset", ras[i].l2 ? ", L2=1" : "", got[0], got[1], ras[i].rg300,
               ras[i].rg40000, good ? "ok" : "FAIL");
        ok &= good;
        ok &= close_mod(&m, 2);
    }
    g_fxe_raster_knob = NULL, g_fxe_l2_knob = NULL;
    /* MEMRA_FP8BLK_XE_CTAS=5: the persistent grid capped at 5 CTAs (300 rows: 33 tiles; 40000: every SM otherwise);
     * 500 (over the SMs): one an SM */
    static const struct {
        const char *knob;
        unsigned gx300, gx40000;
    } caps5[] = {{"5", 5, 5}, {"500", 33, 132}};
    for (size_t i = 0; i < sizeof caps5 / sizeof caps5[0]; i++) {
        g_fxe_ctas_knob = caps5[i].knob;
        printf("  XE_CTAS=%s\n", caps5[i].knob);
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_persist(&m, 300, "memra_k_fp8blk_experts_tma_n128gp", caps5[i].gx300);
        ok &= fp8blk_experts_persist(&m, 40000, "memra_k_fp8blk_experts_tma_gsp", caps5[i].gx40000);
        ok &= close_mod(&m, 2);
    }
    g_fxe_ctas_knob = NULL;
    /* MEMRA_FP8BLK_XE_HALF=1: the 256-wide persistent tile as _gsp_half (the 128-wide one unchanged: 300 rows take it
     * by the width rule, 256 wide under N128=0); with L2=1 the hinted tile; an image without _gsp_half: _gsp */
    static const struct {
        const char *n128, *l2, *missing, *tile300, *tile40000;
        unsigned gx300;
        int warns; /* at load: the hinted tile or a missing twin says the knob did not apply */
    } halves[] = {
        {NULL, NULL, NULL, "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_gsp_half", 33, 0},
        {"0", NULL, NULL, "memra_k_fp8blk_experts_tma_gsp_half", "memra_k_fp8blk_experts_tma_gsp_half", 22, 0},
        {NULL, "1", NULL, "memra_k_fp8blk_experts_tma_n128gph1", "memra_k_fp8blk_experts_tma_gsph1", 33, 1},
        {NULL, NULL, "_gsp_half", "memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_gsp", 33, 1},
    };
    g_fxe_half_knob = "1";
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
        g_xe_n128_knob = halves[i].n128, g_fxe_l2_knob = halves[i].l2, g_missing_kernel = halves[i].missing;
        printf("  XE_HALF=1 N128=%s L2=%s%s%s\n", halves[i].n128 ? halves[i].n128 : "unset",
               halves[i].l2 ? halves[i].l2 : "unset", halves[i].missing ? ", image without " : "",
               halves[i].missing ? halves[i].missing : "");
        const int w0 = g_n_warn;
        if (!open_mod(so, 90, &m)) return 0;
        const int wl = g_n_warn - w0;
        printf("    warnings at load: %d (want %d)  %s\n", wl, halves[i].warns, wl == halves[i].warns ? "ok" : "FAIL");
        ok &= wl == halves[i].warns;
        ok &= fp8blk_experts_persist(&m, 300, halves[i].tile300, halves[i].gx300);
        ok &= fp8blk_experts_persist(&m, 40000, halves[i].tile40000, 132);
        ok &= close_mod(&m, 2);
    }
    g_fxe_half_knob = NULL, g_xe_n128_knob = NULL, g_fxe_l2_knob = NULL, g_missing_kernel = NULL;
    /* MEMRA_FP8BLK_XE_QU: the quantiser in expert order with 4 items a warp (unset, "4") or 8 (_sorted8: 300 rows x
     * 2 k blocks = 600 items, 8 warps a block: 10 blocks where 4 items take 19); a static scale keeps
     * _sorted_given's 4 items; an image without _sorted8 warns at load and keeps the 4-item one */
    static const struct {
        const char *knob, *missing, *quant;
        float xsc;
        unsigned gx;
        int warns;
    } qus[] = {
        {NULL, NULL, "memra_k_fp8blk_quant_sorted", 0.0f, 19, 0},
        {"4", NULL, "memra_k_fp8blk_quant_sorted", 0.0f, 19, 0},
        {"8", NULL, "memra_k_fp8blk_quant_sorted8", 0.0f, 10, 0},
        {"8", NULL, "memra_k_fp8blk_quant_sorted_given", 0.5f, 19, 0},
        {"8", "_sorted8", "memra_k_fp8blk_quant_sorted", 0.0f, 19, 1},
    };
    for (size_t i = 0; i < sizeof qus / sizeof qus[0]; i++) {
        g_fxe_qu_knob = qus[i].knob, g_missing_kernel = qus[i].missing;
        const int w0 = g_n_warn;
        if (!open_mod(so, 90, &m)) return 0;
        const int wl = g_n_warn - w0;
        memra_call qc = call_of(&m);
        memra_gemm_args qa = gemm(300, 300, 256);
        qa.x_scale = qus[i].xsc;
        memra_gemm_experts_args ex = {.struct_size = sizeof ex, .lane = MEMRA_OP_gemm_fp8_blk, .n_experts = 8,
                                      .ids = 0x60000000};
        const memra_status st = m.desc->ops->gemm_experts(&qc, &qa, &ex);
        const int g = st == MEMRA_STATUS_OK && g_n_launched >= 3 && strcmp(g_launched[1], qus[i].quant) == 0 &&
                      g_grid_x[1] == qus[i].gx && g_block_x[1] == 256 && wl == qus[i].warns;
        printf("  XE_QU=%s%s%s, x_scale %g: %s grid %u (256), %d warnings  %s\n", qus[i].knob ? qus[i].knob : "unset",
               qus[i].missing ? ", image without " : "", qus[i].missing ? qus[i].missing : "", (double)qus[i].xsc,
               g_n_launched > 1 ? g_launched[1] : "-", g_grid_x[1], wl, g ? "ok" : "FAIL");
        ok &= g;
        g_n_launched = 0;
        ok &= close_mod(&m, 2);
    }
    g_fxe_qu_knob = NULL, g_missing_kernel = NULL;
    /* MEMRA_FP8BLK_XE_TALL=1: the tall tile at both sizes, whatever the width, persistence or L2
     * setting; a split asked for wins (its own tile); an image without the tall tile: the default's
     * 128-row tiles */
    g_fxe_tall_knob = "1";
    static const char *const tall_n128[3] = {NULL, "1", "0"};
    for (int i = 0; i < 3; i++) {
        g_xe_n128_knob = tall_n128[i];
        g_fxe_persist_knob = i == 2 ? "0" : NULL;
        g_fxe_l2_knob = i == 1 ? "1" : NULL;
        printf("  TALL=1 N128=%s PERSIST=%s L2=%s\n", tall_n128[i] ? tall_n128[i] : "unset", i == 2 ? "0" : "unset",
               i == 1 ? "1" : "unset");
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_tall(&m, 300, 30);
        ok &= fp8blk_experts_tall(&m, 40000, 132);
        ok &= close_mod(&m, 2);
    }
    g_xe_n128_knob = NULL;
    g_fxe_persist_knob = NULL;
    g_fxe_l2_knob = NULL;
    g_missing_kernel = "_tall";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_persist(&m, 300, "memra_k_fp8blk_experts_tma_n128gp", 33);
    ok &= close_mod(&m, 2);
    g_missing_kernel = NULL;
    /* the maps' scratch refused (a capture without a reservation for it): the 128-row routing and the
     * cp.async tile, never the 256-row table (the fallback reads 128-row tiles) */
    g_scratch_refuse = "fp8blk.experts.maps";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= launched_exact("gemm_experts fp8_blk tall, no maps", fp8blk_experts_call(&m, 300), 3,
                         (const char *[]){"memra_k_fp8blk_experts_route", "memra_k_fp8blk_quant_sorted",
                                          "memra_k_fp8blk_experts_wgmma"},
                         (const int[]){0, 0, 0});
    ok &= close_mod(&m, 2);
    g_scratch_refuse = NULL;
    g_fxe_tall_knob = NULL;
    g_fxe_persist_knob = "1";
    /* an image without the persistent tiles: the one-tile-a-CTA ones (a warning where =1 was asked),
     * by default and with =1 */
    g_missing_kernel = "gsp";
    g_xe_n128_knob = "0";
    for (int p = 0; p < 2; p++) {
        g_fxe_persist_knob = p == 0 ? NULL : "1";
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_tma(&m, 300, "memra_k_fp8blk_experts_tma_gs");
        ok &= close_mod(&m, 2);
    }
    g_missing_kernel = NULL;
    g_xe_n128_knob = NULL;
    g_fxe_persist_knob = "0"; /* the cases below are on the one-tile-a-CTA tiles */
    /* MEMRA_FP8BLK_XE_TMA64=1: fp8blk_experts_tma64 */
    g_xe_tma64_knob = "1";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_tma64(&m);
    ok &= close_mod(&m, 2);
    g_xe_tma64_knob = NULL;
    /* MEMRA_FP8BLK_XE_SPLIT: 2, 5 (clamped to the 2 k blocks), and with the 64-row table (no split) */
    static const char *const splits[3] = {"2", "5", "2"};
    for (int i = 0; i < 3; i++) {
        g_fxe_split_knob = splits[i];
        g_xe_tma64_knob = i == 2 ? "1" : NULL;
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_split(&m, i == 2);
        ok &= close_mod(&m, 2);
    }
    /* the split's scratch refused (a capture without a reservation for it): the call runs unsplit */
    g_xe_tma64_knob = NULL;
    g_fxe_split_knob = "2";
    g_scratch_refuse = "fp8blk.experts.splitk";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_tma(&m, 300, "memra_k_fp8blk_experts_tma_gs"); /* the split asked: 256 wide kept */
    ok &= close_mod(&m, 2);
    g_scratch_refuse = NULL;
    g_fxe_split_knob = NULL;
    g_xe_tma64_knob = NULL;
    /* MEMRA_FP8BLK_XE_PF: 4 and 8 take the prefetching tile, 3 the plain one, 4 with a split of 2 the split */
    static const char *const pfs[4] = {"4", "8", "3", "4"};
    for (int i = 0; i < 4; i++) {
        g_fxe_pf_knob = pfs[i];
        g_fxe_split_knob = i == 3 ? "2" : NULL;
        if (!open_mod(so, 90, &m)) return 0;
        ok &= fp8blk_experts_pf(&m, pfs[i], i == 3);
        ok &= close_mod(&m, 2);
    }
    g_fxe_pf_knob = NULL;
    g_fxe_split_knob = NULL;
    /* MEMRA_FP8BLK_XE_GS=1 with the 256-wide tile kept (N128=0): the tile with the grid's scales
     * through the stages on the 300-row call */
    g_fxe_gs_knob = "1";
    g_xe_n128_knob = "0";
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_pf(&m, "gs", 0);
    ok &= close_mod(&m, 2);
    g_fxe_gs_knob = NULL;
    g_xe_n128_knob = NULL;
    g_no_tmap = 1; /* without the encoder: the cp.async tiles */
    if (!open_mod(so, 90, &m)) return 0;
    ok &= fp8blk_experts_launch(&m, 300, 8, 0.0f, "memra_k_fp8blk_quant_sorted", 300 / 65, 8);
    ok &= close_mod(&m, 2);
    g_no_tmap = 0;
    g_fxe_persist_knob = NULL;
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s sm90|sm120|sm120_on_sm90|mmq|fp8blk|w16 SM90.so SM120.so MMQ.so FP8BLK.so W16.so\n",
                argv[0]);
        return 2;
    }
    const char *c = argv[1];
    int ok = strcmp(c, "sm90") == 0            ? case_sm90(argv[2])
             : strcmp(c, "sm120") == 0         ? case_sm120(argv[3], 120)
             : strcmp(c, "sm120_on_sm90") == 0 ? case_sm120(argv[3], 90)
             : strcmp(c, "mmq") == 0           ? case_mmq(argv[4]) && h16_cases(argv[4]) && mmq_one_pad(argv[4]) && mmq_sk(argv[4]) &&
                                                   mmq_quant_lean(argv[4])
             : strcmp(c, "fp8blk") == 0        ? case_fp8blk(argv[5])
             : strcmp(c, "w16") == 0           ? case_w16(argv[6])
                                               : -1;
    if (ok < 0) {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
