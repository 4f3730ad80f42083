/* Weights: validation at create, per-device operands built once at prepare,
 * and memra_matmul's lane policy (memra_weight_plan_get reports it).
 *
 * The host bytes (w->data) are a copy, or borrowed (memra_weight_create_borrowed:
 * a model file's mapping) and released through the callback at destroy. They
 * are read at prepare (the upload) and when Q8_0 blocks are made again after
 * records replaced them; nothing writes them.
 *
 * The MMQ floor's weight operand (quant_q8_1 + gemm_q8_0, or gemm_q8_0r):
 *  - Q8_0 blocks are 34 bytes, 2-byte aligned; the Q8_0 record layout
 *    (memra_q8_0r_bytes, module.h) holds the same values 16-byte aligned.
 *  - A Q8_0 weight that gets no f16 mirror on a device (over the budget) and a
 *    block-128 FP8 weight whose policy builds the Q8_0 slab are repacked into
 *    records at prepare (repack_q8_0) when the device's routing has a lane for
 *    both repack_q8_0 and gemm_q8_0r and MEMRA_Q8_0_RECORDS is not "0". The
 *    blocks the records came from (the raw Q8_0 copy, or the slab) are then
 *    freed: the floor serves exactly when memory is short, so the weight is
 *    not held twice. A repack that no lane takes (DECLINED / NOT_SUPPORTED),
 *    or no device memory for the records, leaves the blocks and no records;
 *    any other failure fails prepare.
 *  - matmul quantises the activation once, then runs gemm_q8_0r on the
 *    records. When that is DECLINED or NOT_SUPPORTED (the module that serves
 *    it was unloaded, MEMRA_DISABLE=gemm_q8_0r, a shape a kernel refuses), it
 *    makes the Q8_0 blocks again, once, under the weight's lock (raw Q8_0:
 *    uploaded from the host copy; FP8: the slab rebuilt from the e4m3 bytes)
 *    and runs gemm_q8_0 on them. Both ops have one numeric contract and one
 *    band; the two kernels fold in different orders, so the low bits may
 *    differ between them. Blocks made again are kept with the records
 *    (another thread may be reading either) until the weight is destroyed.
 *    Making them allocates and waits for the device, so it is refused with a
 *    clear error while the stream is being captured into a CUDA graph.
 *
 * The K-quant floor (quant_q8_1 + gemm_kr): a Q4_K, Q5_K or Q6_K weight that
 * gets no f16 mirror is repacked on the host at prepare into K records
 * (memra_kr_repack: the K-packed layout of module.h, the GGUF codes and
 * scales moved into planes, never widened: exactly the GGUF bytes; the kernel
 * widens them to int8 in its load stage) and uploaded, when in_f is a multiple of 256, the routing
 * has a gemm_kr lane and MEMRA_Q8_0_RECORDS is not "0"; the records replace
 * the raw copy. The last fall-back: when gemm_kr declines (or there are no
 * records) the call dequantises the whole weight into a transient f16 mirror
 * (the raw copy uploaded again once, under the lock, kept; refused during a
 * graph capture like the Q8_0 blocks above), and the ledger records that as
 * a core decline of dequant_f16 naming the reason.
 *
 * Locks are per (weight, device): w->lock[d] guards w->dev[d] alone, so a
 * prepare (or a lazy operand build) on one device never waits behind another
 * device's. A prepared weight_dev is marked `ready` (release order) last, and
 * matmul's prepare checks `ready` (acquire) without taking any lock: the hot
 * path takes no lock of the weight at all.
 *
 * Thread safety: matmul reads a weight_dev's operand pointers without the
 * device's lock. Prepare runs under that lock before any matmul reads them
 * (matmul calls memra_weight_prepare first); an operand made later (the lazy
 * slab or records, blocks made again) is complete before its pointer is
 * stored with release order (op_publish), unlocked readers load with acquire
 * order (op_load), and no operand is freed before the weight. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/routing/routing.h"
#include "core/weights/reserve_walk.h"
#include "core/weights/weights.h"
#include "memra/formats.h"

/* Atomic accesses to the operand pointers matmul reads without the lock. */
static memra_dptr op_load(const memra_dptr *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void op_publish(memra_dptr *p, memra_dptr v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

typedef struct weight_dev {
    int ready;           /* prepare completed (stored with release order, read lock-free) */
    int prepared;
    memra_dptr raw;      /* the weight's own bytes */
    memra_dptr grid;     /* block-128 grid (E4M3) */
    memra_dptr f16;      /* f16 mirror, 0 when none */
    uint64_t f16_bytes;  /* counted against the device budget */
    memra_dptr q8_0;     /* Q8_0 slab of a block-128 FP8 weight, 0 when none */
    memra_dptr q8_0r;    /* Q8_0 records (gemm_q8_0r) of the raw Q8_0 or of the slab, 0 when none */
    memra_dptr kr;       /* K records (gemm_kr) of a Q4_K / Q5_K / Q6_K weight, 0 when none */
    memra_dptr w16;      /* the W16 operand (gemm_w16) of a Q8_0 / Q4_0 / K-quant weight, 0 when none */
    uint64_t nan_codes;  /* e4m3 NaN codes (E4M3 only) */
    const char *mirror_note; /* why there is no mirror */
    /* ---- experts (MoE): see "expert weights" at the end of the file ---- */
    int mirror_mode;     /* an expert's f16 mirror: MIRROR_BUDGET (its own budget check), _RESERVED, _NONE */
    memra_dptr etab;     /* an expert weight's operand tables on the device (ET_* x n_experts), 0 when none */
    unsigned etab_ok;    /* bit ET_x: every expert holds that operand */
} weight_dev;

/* MIRROR_NO_LANE: an expert without a mirror whatever the budget (experts_floor_first, or a
 * device routing no grouped f16 lane: experts_f16_routed). MIRROR_W16: the same, and the expert takes the W16
 * operand in place of the floor's (its expert weight runs gemm_experts on lane gemm_w16: experts_w16). */
enum { MIRROR_BUDGET = 0, MIRROR_RESERVED = 1, MIRROR_NONE = 2, MIRROR_NO_LANE = 3, MIRROR_W16 = 4 };

/* A quantised weight's note without a mirror: why none (the budget, or an expert's grouped floor),
 * then its floor. */
#define NOTE_OVER "f16 mirror over MEMRA_F16_BUDGET_MB"
#define NOTE_NO_LANE "no f16 mirror: an expert on the grouped floor"
#define NOTE_XE_W16 "no f16 mirror: an expert on the grouped w16 tile"
#define NOTE_Q4_0                                                                                                     \
    "Q4_0 on the MMQ floor as Q8_0 records (exact: d kept, q - 8 as int8; 144 B per 128 values, Q4_0's 72)"
#define NOTE_KR                                                                                                       \
    "on the MMQ floor as K records (the GGUF codes and scales K-packed: the GGUF's bytes, widened in the kernel)"
#define NOTE_W16                                                                                                      \
    "gemm_w16 on the W16 operand (the GGUF's codes and scales re-laid out, turned into the f16 mirror's values in "  \
    "the tile's registers)"

struct memra_weight {
    memra_runtime *rt;
    memra_format format;
    int64_t out_f, in_f;
    void *data;          /* the host bytes: a copy, or borrowed (release set) */
    size_t size;
    memra_weight_release_fn release; /* borrowed bytes: called once at destroy */
    void *release_user;
    float scale;
    float *grid;
    size_t grid_count;
    float input_scale;   /* static activation scale (E4M3), 0 = none */
    char name[64];
    pthread_mutex_t lock[MEMRA__MAX_DEVICES]; /* lock[d] guards dev[d] */
    weight_dev dev[MEMRA__MAX_DEVICES];
    int32_t n_experts;      /* 0: a dense weight; else an expert weight of that many experts */
    memra_weight **experts; /* n_experts dense weights over the experts' bytes (borrowed from this one) */
    float *expert_scales;   /* E4M3 per-tensor: n_experts scales */
};

memra_format memra_weight_format(const memra_weight *w) { return w ? w->format : MEMRA_FORMAT_F32; }

/* Create over a copy of d->data (borrow == 0) or over d->data itself. */
static memra_status weight_create(memra_runtime *rt, const memra_weight_desc *d, int borrow,
                                  memra_weight_release_fn release, void *user, memra_weight **out_w)
{
    memra__clear_error();
    if (rt == NULL || d == NULL || out_w == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_create: NULL argument");
    if (d->struct_size < offsetof(memra_weight_desc, name))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "weight: desc.struct_size %u is too small", d->struct_size);
    const char *nm = (MEMRA_HAS_MEMBER(d, memra_weight_desc, name) && d->name) ? d->name : "weight";
    int bv = memra_format_block_values(d->format);
    if (bv == 0) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: unknown format %d", nm, (int)d->format);
    const char *fn = memra_format_name(d->format);
    if (d->out_f <= 0 || d->in_f <= 0 || d->out_f > (1 << 24) || d->in_f > (1 << 24))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: shape [%lld x %lld] out of range (1 .. 2^24 each)", nm,
                           (long long)d->out_f, (long long)d->in_f);
    if (d->in_f % bv != 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: in_f %lld is not a multiple of %s's block of %d", nm,
                           (long long)d->in_f, fn, bv);
    uint64_t want = (uint64_t)d->out_f * memra_format_row_bytes(d->format, d->in_f);
    if (d->data == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: data is NULL", nm);
    if (d->size != want)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: %zu bytes given, %s [%lld x %lld] needs %llu", nm,
                           d->size, fn, (long long)d->out_f, (long long)d->in_f, (unsigned long long)want);
    float scale = d->scale == 0.0f ? 1.0f : d->scale;
    if (!isfinite(scale) || scale < 0.0f)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: scale %g is not a finite positive number", nm,
                           (double)d->scale);
    if (d->format != MEMRA_FORMAT_E4M3 && (scale != 1.0f || d->grid != NULL))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: scales and grids apply to E4M3 weights only", nm);
    size_t gcount = 0;
    if (d->grid != NULL) {
        gcount = (size_t)(memra_fp8_grid_rows(d->out_f) * memra_fp8_grid_cols(d->in_f));
        if (d->grid_count != gcount)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "%s: block-128 grid has %zu floats; [%lld x %lld] needs [%lld x %lld] = %zu", nm,
                               d->grid_count, (long long)d->out_f, (long long)d->in_f,
                               (long long)memra_fp8_grid_rows(d->out_f), (long long)memra_fp8_grid_cols(d->in_f),
                               gcount);
        if (scale != 1.0f)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "%s: a per-tensor scale (%g) with a block-128 grid is ambiguous; fold it into the grid",
                               nm, (double)scale);
        for (size_t i = 0; i < gcount; i++)
            if (!isfinite(d->grid[i]) || d->grid[i] < 0.0f)
                return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: grid[%zu] = %g is not finite and >= 0", nm, i,
                                   (double)d->grid[i]);
    } else if (d->grid_count != 0) {
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: grid_count %zu with a NULL grid", nm, d->grid_count);
    }
    const float in_scale = MEMRA_HAS_MEMBER(d, memra_weight_desc, input_scale) ? d->input_scale : 0.0f;
    if (!isfinite(in_scale) || in_scale < 0.0f)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: input_scale %g is not a finite number >= 0", nm,
                           (double)in_scale);
    if (in_scale != 0.0f && d->format != MEMRA_FORMAT_E4M3)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: input_scale applies to E4M3 weights only", nm);
    memra_weight *w = calloc(1, sizeof *w);
    if (w == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", nm);
    w->data = borrow ? (void *)(uintptr_t)d->data : malloc(d->size);
    w->grid = gcount ? malloc(gcount * sizeof(float)) : NULL;
    if (w->data == NULL || (gcount && w->grid == NULL)) {
        if (!borrow) free(w->data);
        free(w->grid);
        free(w);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", nm, d->size);
    }
    if (!borrow) memcpy(w->data, d->data, d->size);
    w->release = borrow ? release : NULL;
    w->release_user = user;
    if (gcount) memcpy(w->grid, d->grid, gcount * sizeof(float));
    w->rt = rt;
    w->format = d->format;
    w->out_f = d->out_f;
    w->in_f = d->in_f;
    w->size = d->size;
    w->scale = scale;
    w->grid_count = gcount;
    w->input_scale = in_scale;
    snprintf(w->name, sizeof w->name, "%s", nm);
    for (int i = 0; i < MEMRA__MAX_DEVICES; i++) pthread_mutex_init(&w->lock[i], NULL);
    *out_w = w;
    return MEMRA_STATUS_OK;
}

memra_status memra_weight_create(memra_runtime *rt, const memra_weight_desc *d, memra_weight **out_w)
{
    return weight_create(rt, d, 0, NULL, NULL, out_w);
}

memra_status memra_weight_create_borrowed(memra_runtime *rt, const memra_weight_desc *d,
                                          memra_weight_release_fn release, void *user, memra_weight **out_w)
{
    if (release == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_create_borrowed: release is NULL");
    return weight_create(rt, d, 1, release, user, out_w);
}

static void weight_dev_free(memra_weight *w, int d)
{
    weight_dev *wd = &w->dev[d];
    memra_device *dev = w->rt->devices[d];
    if (!wd->prepared) return;
    memra_device_synchronize(dev);
    memra__dev_free(dev, wd->raw);
    memra__dev_free(dev, wd->grid);
    if (wd->f16 != wd->raw) memra__dev_free(dev, wd->f16);
    memra__dev_free(dev, wd->q8_0);
    memra__dev_free(dev, wd->q8_0r);
    memra__dev_free(dev, wd->kr);
    memra__dev_free(dev, wd->w16);
    memra__dev_free(dev, wd->etab);
    atomic_fetch_sub(&dev->f16_used, wd->f16_bytes);
    memset(wd, 0, sizeof *wd);
}

void memra_weight_destroy(memra_weight *w)
{
    if (w == NULL) return;
    for (int32_t e = 0; e < w->n_experts && w->experts != NULL; e++) memra_weight_destroy(w->experts[e]);
    free(w->experts);
    free(w->expert_scales);
    for (int d = 0; d < w->rt->n_devices; d++) weight_dev_free(w, d);
    for (int d = 0; d < MEMRA__MAX_DEVICES; d++) pthread_mutex_destroy(&w->lock[d]);
    if (w->release != NULL) w->release(w->release_user);
    else free(w->data);
    free(w->grid);
    free(w);
}

static uint64_t device_budget(memra_device *dev)
{
    return (uint64_t)atomic_load(&dev->f16_budget_mb) << 20;
}

static int has_lane(memra_device *dev, memra_op op)
{
    const char *names[1];
    return memra_routing_get(dev, op, names, 1) > 0;
}

static memra_status run_op(memra_device *dev, memra_op op, memra_op_args *a)
{
    a->struct_size = sizeof *a;
    return memra__dispatch(dev, op, a);
}

/* The Q8_0 slab of a block-128 FP8 weight (the host re-encode, bit for bit),
 * complete when this returns; not published. Caller holds w->lock[dev->index]. */
static memra_status make_slab(memra_weight *w, memra_device *dev, const weight_dev *wd, memra_dptr *out)
{
    size_t bytes = (size_t)w->out_f * (size_t)(w->in_f / 32) * MEMRA_Q8_0_BYTES;
    memra_dptr slab = 0;
    memra_status st = memra__dev_alloc(dev, bytes, &slab);
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args a = {.src = wd->raw, .aux = wd->grid, .rows = w->out_f, .cols = w->in_f, .dst = slab};
    st = run_op(dev, MEMRA_OP_fp8_blk_to_q8_0, &a);
    if (st == MEMRA_STATUS_OK) st = memra_device_synchronize(dev);
    if (st != MEMRA_STATUS_OK) {
        memra__dev_free(dev, slab);
        return st;
    }
    *out = slab;
    return MEMRA_STATUS_OK;
}

/* Build the Q8_0 slab and publish it only once it is complete (matmul reads
 * wd->q8_0 without the weight's lock). Caller holds w->lock[dev->index]. */
static memra_status build_slab(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    memra_dptr slab = 0;
    memra_status st = make_slab(w, dev, wd, &slab);
    if (st != MEMRA_STATUS_OK) return st;
    op_publish(&wd->q8_0, slab);
    return MEMRA_STATUS_OK;
}

/* Whether dev holds the MMQ floor's weight as Q8_0 records: a lane for both
 * repack_q8_0 and gemm_q8_0r, and MEMRA_Q8_0_RECORDS is not "0". */
static int records_wanted(memra_device *dev)
{
    if (!dev->rt->cfg.q8_0_records) return 0;
    return has_lane(dev, MEMRA_OP_repack_q8_0) && has_lane(dev, MEMRA_OP_gemm_q8_0r);
}

/* Repack the Q8_0 blocks at src ([out_f x in_f]) into records and publish
 * them as wd->q8_0r. OK: published. DECLINED: no records and nothing changed
 * (no lane took the repack, or no device memory for the records: the blocks
 * still serve). Any other status is an error. Caller holds w->lock[dev->index]. */
static memra_status build_records(memra_weight *w, memra_device *dev, weight_dev *wd, memra_dptr src)
{
    memra_dptr rec = 0;
    memra_status st = memra__dev_alloc(dev, (size_t)memra_q8_0r_bytes(w->out_f, w->in_f), &rec);
    if (st == MEMRA_STATUS_OUT_OF_MEMORY) {
        memra__log(MEMRA_LOG_INFO, "weight", "%s on %s: no memory for Q8_0 records; the MMQ floor reads Q8_0 blocks",
                   w->name, dev->label);
        return MEMRA_STATUS_DECLINED;
    }
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args a = {.src = src, .rows = w->out_f, .cols = w->in_f, .dst = rec};
    st = run_op(dev, MEMRA_OP_repack_q8_0, &a);
    if (st == MEMRA_STATUS_OK) st = memra_device_synchronize(dev);
    if (st != MEMRA_STATUS_OK) {
        memra__dev_free(dev, rec);
        if (st == MEMRA_STATUS_NOT_SUPPORTED) st = MEMRA_STATUS_DECLINED; /* routing changed since records_wanted */
        if (st == MEMRA_STATUS_DECLINED)
            MEMRA__DEBUG("weight", "%s on %s: no Q8_0 records (%s)", w->name, dev->label, memra_last_error());
        return st;
    }
    op_publish(&wd->q8_0r, rec);
    return MEMRA_STATUS_OK;
}

/* Records in place of blocks (see the top of the file): repack the blocks at
 * *blocks and, when that worked, free them and zero *blocks. Blocks stay on
 * DECLINED. Called by prepare and the lazy slab only, before *blocks is
 * published to matmul. Caller holds w->lock[dev->index]. */
static memra_status replace_with_records(memra_weight *w, memra_device *dev, weight_dev *wd, memra_dptr *blocks)
{
    if (!records_wanted(dev)) return MEMRA_STATUS_OK;
    memra_status st = build_records(w, dev, wd, *blocks);
    if (st == MEMRA_STATUS_DECLINED) return MEMRA_STATUS_OK;
    if (st != MEMRA_STATUS_OK) return st;
    memra__dev_free(dev, *blocks);
    *blocks = 0;
    return MEMRA_STATUS_OK;
}

/* A Q4_0 weight's blocks as Q8_0 blocks, exactly: each block keeps its f16 d
 * and stores q - 8 (in -8..7) as int8, so every value d * (q - 8) is the
 * same number. rows x cols (cols % 32 == 0) of Q4_0 at src; the result is
 * malloc'd (rows * cols / 32 * 34 bytes), NULL when out of memory. */
static uint8_t *q4_0_as_q8_0(const uint8_t *src, int64_t rows, int64_t cols)
{
    const size_t blocks = (size_t)rows * (size_t)(cols / 32);
    uint8_t *out = malloc(blocks * MEMRA_Q8_0_BYTES);
    if (out == NULL) return NULL;
    for (size_t b = 0; b < blocks; b++) {
        const uint8_t *q4 = src + b * MEMRA_Q4_0_BYTES;
        uint8_t *q8 = out + b * MEMRA_Q8_0_BYTES;
        q8[0] = q4[0], q8[1] = q4[1]; /* d, f16, unchanged */
        for (int j = 0; j < 16; j++) {
            q8[2 + j] = (uint8_t)(int8_t)((q4[2 + j] & 0x0F) - 8);
            q8[2 + 16 + j] = (uint8_t)(int8_t)((q4[2 + j] >> 4) - 8);
        }
    }
    return out;
}

/* A Q4_0 weight without a mirror on the MMQ floor: its blocks converted
 * exactly to Q8_0 blocks on the host, uploaded, repacked into records
 * (repack_q8_0) and the converted blocks freed; the raw Q4_0 copy stays for
 * the per-call dequantisation fall-back. OK: records published; DECLINED:
 * none (no lane, no memory), nothing changed. Caller holds w->lock. */
static memra_status q4_0_records(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    if (w->in_f % 32 != 0 || !records_wanted(dev)) return MEMRA_STATUS_DECLINED;
    uint8_t *blocks = q4_0_as_q8_0(w->data, w->out_f, w->in_f);
    if (blocks == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of host memory converting Q4_0", w->name);
    const size_t bytes = (size_t)w->out_f * (size_t)(w->in_f / 32) * MEMRA_Q8_0_BYTES;
    memra_dptr tmp = 0;
    memra_status st = memra__dev_alloc(dev, bytes, &tmp);
    if (st == MEMRA_STATUS_OUT_OF_MEMORY) st = MEMRA_STATUS_DECLINED;
    if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, tmp, blocks, bytes);
    free(blocks);
    if (st == MEMRA_STATUS_OK) st = build_records(w, dev, wd, tmp);
    memra__dev_free(dev, tmp);
    return st;
}

static int is_kquant(memra_format f)
{
    return f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K || f == MEMRA_FORMAT_Q6_K;
}

/* Whether dev serves w (a K-quant) on the floor from K records. */
static int kr_wanted(const memra_weight *w, memra_device *dev)
{
    return is_kquant(w->format) && w->in_f % MEMRA_QK_K == 0 && dev->rt->cfg.q8_0_records &&
           has_lane(dev, MEMRA_OP_gemm_kr);
}

/* An operand made on the host from the weight's blocks by `repack` (memra_kr_repack, memra_w16_repack:
 * `bytes` at dst), uploaded and published at *slot. OK: published; DECLINED: no device memory for it (logged
 * with `then`, what serves instead), nothing changed; another status: the failure. Caller holds w->lock. */
static memra_status upload_repacked(memra_weight *w, memra_device *dev, uint64_t bytes,
                                    int (*repack)(memra_format, const void *, int64_t, int64_t, void *),
                                    const char *what, const char *then, memra_dptr *slot)
{
    uint8_t *host = malloc((size_t)bytes);
    if (host == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of host memory for %s", w->name, what);
    if (repack(w->format, w->data, w->out_f, w->in_f, host) != 0) {
        free(host);
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "%s: %s of %s refused", w->name, what, memra_format_name(w->format));
    }
    memra_dptr op = 0;
    memra_status st = memra__dev_alloc(dev, (size_t)bytes, &op);
    if (st == MEMRA_STATUS_OUT_OF_MEMORY) {
        free(host);
        memra__log(MEMRA_LOG_INFO, "weight", "%s on %s: no memory for %s; %s", w->name, dev->label, what, then);
        return MEMRA_STATUS_DECLINED;
    }
    if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, op, host, (size_t)bytes);
    free(host);
    if (st != MEMRA_STATUS_OK) {
        memra__dev_free(dev, op);
        return st;
    }
    op_publish(slot, op);
    return MEMRA_STATUS_OK;
}

/* A K-quant weight without a mirror on the floor: repacked on the host into
 * K records, uploaded and published as wd->kr. OK: published; DECLINED:
 * none (not wanted, no device memory), nothing changed. Caller holds w->lock. */
static memra_status kr_records(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    if (!kr_wanted(w, dev)) return MEMRA_STATUS_DECLINED;
    return upload_repacked(w, dev, memra_kr_bytes(w->format, w->out_f, w->in_f), memra_kr_repack, "K records",
                           "per-call dequantisation", &wd->kr);
}

/* Whether dev serves w (Q8_0, Q4_0 or a K-quant without a mirror) with gemm_w16 on the W16 operand:
 * MEMRA_W16 not 0 (the default 0 loads no w16 kernels: DESIGN.md's dispatcher puts such a weight on the
 * integer floor), then memra_device_w16_set, else MEMRA_W16's rule (auto: on a GPU; the host device keeps its
 * integer floor unless MEMRA_W16=1), a module routes gemm_w16, and in_f is a multiple of the tile's 64-column
 * step. */
static int w16_wanted(const memra_weight *w, memra_device *dev)
{
    const int api = atomic_load(&dev->w16), cfg = dev->rt->cfg.w16;
    /* MEMRA_W16=0 (the default) loads no w16 kernels: never, whatever memra_device_w16_set says */
    const int on = cfg != 0 && (api >= 0 ? api : cfg == 1 || !dev->is_host);
    return on && memra_w16_bytes(w->format, w->out_f, w->in_f) != 0 && w->in_f % 64 == 0 &&
           has_lane(dev, MEMRA_OP_gemm_w16);
}

/* The W16 operand of a weight without a mirror: repacked on the host (memra_w16_repack), uploaded and
 * published as wd->w16. OK: published; DECLINED: none (not wanted, no device memory: the error cleared, the
 * floor serves), nothing changed. Caller holds w->lock. */
static memra_status w16_operand(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    if (!w16_wanted(w, dev)) return MEMRA_STATUS_DECLINED;
    const memra_status st = upload_repacked(w, dev, memra_w16_bytes(w->format, w->out_f, w->in_f), memra_w16_repack,
                                            "the W16 operand", "the MMQ floor serves", &wd->w16);
    if (st == MEMRA_STATUS_DECLINED) memra__clear_error();
    return st;
}

/* The MMQ floor's operand of a block-128 FP8 weight: the slab, or its records
 * (the slab freed). Caller holds w->lock[dev->index]. */
static memra_status build_fp8_mmq(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    memra_dptr slab = 0;
    memra_status st = make_slab(w, dev, wd, &slab);
    if (st == MEMRA_STATUS_OK) st = replace_with_records(w, dev, wd, &slab);
    if (st != MEMRA_STATUS_OK) {
        memra__dev_free(dev, slab);
        return st;
    }
    if (slab != 0) op_publish(&wd->q8_0, slab);
    return MEMRA_STATUS_OK;
}

/* The weight's own bytes uploaded again (after records replaced them) and
 * published. Caller holds w->lock[dev->index]. */
static memra_status upload_raw(memra_weight *w, memra_device *dev, weight_dev *wd)
{
    memra_dptr p = 0;
    memra_status st = memra__dev_alloc(dev, w->size, &p);
    if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, p, w->data, w->size);
    if (st != MEMRA_STATUS_OK) {
        memra__dev_free(dev, p);
        return st;
    }
    op_publish(&wd->raw, p);
    return MEMRA_STATUS_OK;
}

static memra_status prepare_locked(memra_weight *w, memra_device *dev)
{
    weight_dev *wd = &w->dev[dev->index];
    if (wd->prepared) return MEMRA_STATUS_OK;
    memra_status st = memra__dev_alloc(dev, w->size, &wd->raw);
    if (st != MEMRA_STATUS_OK) return MEMRA__FAIL(st, "preparing %s on %s: %s", w->name, dev->label, memra_last_error());
    wd->prepared = 1; /* from here weight_dev_free releases what exists */
    st = memra__dev_upload(dev, wd->raw, w->data, w->size);
    if (st == MEMRA_STATUS_OK && w->grid != NULL) {
        st = memra__dev_alloc(dev, w->grid_count * sizeof(float), &wd->grid);
        if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, wd->grid, w->grid, w->grid_count * sizeof(float));
    }
    if (st != MEMRA_STATUS_OK) goto fail;

    if (w->format == MEMRA_FORMAT_E4M3) {
        /* The NaN verdict: a tensor with NaN codes never rides an FP8 lane. */
        memra_dptr cnt;
        st = memra__dev_alloc(dev, sizeof(uint64_t), &cnt);
        if (st != MEMRA_STATUS_OK) goto fail;
        uint64_t zero = 0;
        st = memra__dev_upload(dev, cnt, &zero, sizeof zero);
        memra_op_args a = {.src = wd->raw, .n = (int64_t)w->size, .dst = cnt};
        if (st == MEMRA_STATUS_OK) st = run_op(dev, MEMRA_OP_fp8_nan_count, &a);
        if (st == MEMRA_STATUS_OK) st = memra__dev_download(dev, &wd->nan_codes, cnt, sizeof wd->nan_codes);
        memra__dev_free(dev, cnt);
        if (st != MEMRA_STATUS_OK) goto fail;
        if (w->grid != NULL && w->in_f % 32 == 0 &&
            (dev->profile->fp8_blk_slab || wd->nan_codes > 0 || !has_lane(dev, MEMRA_OP_gemm_fp8_blk))) {
            st = build_fp8_mmq(w, dev, wd);
            if (st != MEMRA_STATUS_OK) goto fail;
        }
        return MEMRA_STATUS_OK;
    }

    /* BF16 rides gemm_bf16 on its own bytes: an f16 mirror would lose bf16's exponent range. */
    if (w->format == MEMRA_FORMAT_BF16) {
        wd->mirror_note = "bf16 is served by gemm_bf16 (no f16 mirror)";
        return MEMRA_STATUS_OK;
    }

    /* Quantised and plain formats: the f16 mirror, first come first served. */
    uint64_t mbytes = (uint64_t)w->out_f * (uint64_t)w->in_f * 2u;
    if (w->format == MEMRA_FORMAT_F16) {
        wd->f16 = wd->raw;
        return MEMRA_STATUS_OK;
    }
    /* an expert's share is reserved (or refused) for all experts at once by its expert weight */
    const int nolane = wd->mirror_mode == MIRROR_NO_LANE, xe_w16 = wd->mirror_mode == MIRROR_W16;
    int over = (wd->mirror_mode == MIRROR_NONE || nolane || xe_w16) && w->format != MEMRA_FORMAT_F32;
    if (wd->mirror_mode == MIRROR_BUDGET) {
        uint64_t used = atomic_fetch_add(&dev->f16_used, mbytes);
        over = used + mbytes > device_budget(dev) && w->format != MEMRA_FORMAT_F32;
        if (over) atomic_fetch_sub(&dev->f16_used, mbytes);
    }
    if (over) {
        wd->mirror_note = nolane || xe_w16 ? NOTE_NO_LANE : NOTE_OVER;
        /* gemm_w16 (the f16 mirror's numbers, no mirror held) before the floor: a dense weight, or an expert
         * whose expert weight runs the grouped w16 tile (MIRROR_W16); the other experts' grouped lanes read the
         * floor's operands. An expert's decline (no device memory) is its expert weight's to handle. */
        if (wd->mirror_mode == MIRROR_BUDGET || xe_w16) {
            st = w16_operand(w, dev, wd);
            if (st == MEMRA_STATUS_OK) {
                /* the operand replaces the raw copy (made again only for a fall-back) */
                memra__dev_free(dev, wd->raw);
                wd->raw = 0;
                wd->mirror_note = xe_w16 ? NOTE_XE_W16 "; " NOTE_W16 : NOTE_OVER "; " NOTE_W16;
                return MEMRA_STATUS_OK;
            }
            if (st != MEMRA_STATUS_DECLINED) goto fail;
            if (xe_w16) return MEMRA_STATUS_OK; /* its expert weight prepares every expert again on the floor */
        }
        if (w->format == MEMRA_FORMAT_Q8_0) {
            /* The MMQ floor serves it: records in place of the raw copy. */
            st = replace_with_records(w, dev, wd, &wd->raw);
            if (st != MEMRA_STATUS_OK) goto fail;
        }
        if (w->format == MEMRA_FORMAT_Q4_0) {
            /* The MMQ floor serves it from Q8_0 records of the exact conversion. */
            st = q4_0_records(w, dev, wd);
            if (st == MEMRA_STATUS_OK)
                wd->mirror_note = nolane ? NOTE_NO_LANE "; " NOTE_Q4_0 : NOTE_OVER "; " NOTE_Q4_0;
            else if (st != MEMRA_STATUS_DECLINED) goto fail;
        }
        if (is_kquant(w->format)) {
            /* The K-quant floor: K records (the GGUF codes and scales K-packed, at their width). */
            st = kr_records(w, dev, wd);
            if (st == MEMRA_STATUS_OK) {
                /* the records replace the raw copy (made again only for the last fall-back) */
                memra__dev_free(dev, wd->raw);
                wd->raw = 0;
                wd->mirror_note = nolane ? NOTE_NO_LANE "; " NOTE_KR : NOTE_OVER "; " NOTE_KR;
            } else if (st != MEMRA_STATUS_DECLINED) {
                goto fail;
            }
        }
        return MEMRA_STATUS_OK;
    }
    wd->f16_bytes = wd->mirror_mode == MIRROR_RESERVED ? 0 : mbytes; /* a reserved share is its expert weight's */
    st = memra__dev_alloc(dev, mbytes, &wd->f16);
    if (st != MEMRA_STATUS_OK) goto fail;
    memra_op_args a = {.src = wd->raw, .dst = wd->f16, .rows = w->out_f, .cols = w->in_f, .n = w->out_f * w->in_f,
                       .format = w->format};
    st = run_op(dev, w->format == MEMRA_FORMAT_F32 ? MEMRA_OP_cvt_f16 : MEMRA_OP_dequant_f16, &a);
    if (st == MEMRA_STATUS_OK) st = memra_device_synchronize(dev);
    if (st != MEMRA_STATUS_OK) goto fail;
    return MEMRA_STATUS_OK;
fail:
    {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", memra_last_error());
        weight_dev_free(w, dev->index);
        return MEMRA__FAIL(st, "preparing %s on %s: %s", w->name, dev->label, msg);
    }
}

static memra_status experts_prepare_locked(memra_weight *w, memra_device *dev);

memra_status memra_weight_prepare(memra_weight *w, memra_device *dev)
{
    memra__clear_error();
    if (w == NULL || dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_prepare: NULL");
    if (dev->rt != w->rt) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "weight and device of other runtimes");
    weight_dev *wd = &w->dev[dev->index];
    if (__atomic_load_n(&wd->ready, __ATOMIC_ACQUIRE)) return MEMRA_STATUS_OK;
    pthread_mutex_lock(&w->lock[dev->index]);
    memra_status st = w->n_experts > 0 ? experts_prepare_locked(w, dev) : prepare_locked(w, dev);
    if (st == MEMRA_STATUS_OK) __atomic_store_n(&wd->ready, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->lock[dev->index]);
    return st;
}

/* ---- matmul ------------------------------------------------------------------- */

/* One memra_matmul: every step dispatches on the snapshot the call took first. */
typedef struct mm_call {
    memra_device *dev;
    memra__snapshot *snap;
    memra_stream_t stream;
} mm_call;

static memra_status gemm_step(const mm_call *c, memra_op op, const memra_gemm_args *g)
{
    memra_op_args a = {.struct_size = sizeof a, .gemm = *g, .stream = c->stream};
    return memra__dispatch_on(c->dev, c->snap, op, &a);
}

/* Whether a floor step's status lets the call fall to the next path: DECLINED
 * (every lane declined), or NOT_SUPPORTED because the snapshot has no lane for
 * the op. A lane's own NOT_SUPPORTED (scratch too small in a CUDA graph
 * capture, naming memra_stream_reserve) is the call's answer: falling back
 * would capture another numeric path than the eager calls run. */
static int floor_falls_back(const mm_call *c, memra_op op, memra_status st)
{
    return st == MEMRA_STATUS_DECLINED || (st == MEMRA_STATUS_NOT_SUPPORTED && c->snap->n_lanes[op] == 0);
}

/* The route's threshold on dev for K records (q8 0) or Q8_0 records (q8 1): memra_device_floor_f16_m_set's,
 * else MEMRA_FLOOR_F16_M's (unset: 0, never); auto (MEMRA_FLOOR_F16_M_AUTO) is dev's profile's measured
 * crossover for that record kind */
static int64_t floor_f16_m(const memra_device *dev, int q8)
{
    int64_t n = (int64_t)atomic_load(&((memra_device *)(uintptr_t)dev)->floor_f16_m);
    if (n == -1) n = dev->rt->cfg.floor_f16_m;
    if (n >= 0) return n;
    /* auto: the profile's measured crossover */
    if (dev->profile == NULL) return 0;
    return q8 ? dev->profile->floor_f16_m_q8 : dev->profile->floor_f16_m;
}

/* Whether a call of m tokens on the floor's records of that kind takes the route (the threshold read once:
 * memra_device_floor_f16_m_set may change it meanwhile) */
static int route_at(const memra_device *dev, int q8, int64_t m)
{
    const int64_t n = floor_f16_m(dev, q8);
    return n > 0 && m >= n;
}

/* A floor weight's records (kr: K records, fmt the K-quant; or Q8_0 records, fmt Q8_0) dequantised into
 * scratch by dequant_kr_f16, then gemm_f16 on them: the route (route 1: MEMRA_FLOOR_F16_M, the floor still
 * to come) or the per-call fall-back (route 0). DECLINED when either op has no lane or every lane declined
 * before anything ran (dequant_kr_f16 first, so a decline of gemm_f16 after it is the caller's fall-back too:
 * only the scratch was written), and on the route when there is no memory for the f16 copy (*no_mem set, the
 * ledger told); any other status is the call's (out of memory on the fall-back, which has nothing after it). */
static memra_status kr_f16(const mm_call *c, const memra_weight *w, memra_format fmt, memra_dptr kr,
                           memra_gemm_args g, int route, int *no_mem)
{
    memra_device *dev = c->dev;
    if (c->snap->n_lanes[MEMRA_OP_dequant_kr_f16] == 0 || c->snap->n_lanes[MEMRA_OP_gemm_f16] == 0)
        return MEMRA_STATUS_DECLINED;
    memra_dptr tmp;
    memra_status st = memra__scratch_get(dev, c->stream, "f16_mirror", (size_t)(w->out_f * w->in_f * 2), &tmp);
    /* no memory for the f16 copy on the route: the floor, which needs none, serves (NOT_SUPPORTED, a capture
     * without the reservation, stays the call's answer: the eager call would take this route) */
    if (st == MEMRA_STATUS_OUT_OF_MEMORY && route) {
        *no_mem = 1;
        memra__ledger_core_decline(dev, MEMRA_OP_dequant_kr_f16, "core",
                                   "no memory for the per-call f16 copy of the weight; the floor serves");
        memra__clear_error(); /* the floor serves: no error stays behind */
        return MEMRA_STATUS_DECLINED;
    }
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args a = {.struct_size = sizeof a, .format = fmt, .src = kr, .rows = w->out_f, .cols = w->in_f,
                       .dst = tmp, .stream = c->stream};
    st = memra__dispatch_on(dev, c->snap, MEMRA_OP_dequant_kr_f16, &a);
    if (st != MEMRA_STATUS_OK) return st;
    g.w = tmp;
    return gemm_step(c, MEMRA_OP_gemm_f16, &g);
}

/* An operand made during a call allocates and waits for the device, which a
 * stream being captured into a CUDA graph cannot take: a clear error instead
 * (the host device and a driver that cannot tell are never capturing). */
static memra_status refuse_in_capture(const memra_weight *w, memra_device *dev, memra_stream_t stream,
                                      const char *what)
{
    const memra__driver *drv = memra__driver_get();
    if (dev->caps.arch == MEMRA_ARCH_HOST || drv == NULL || drv->lib == NULL || drv->cuStreamIsCapturing == NULL)
        return MEMRA_STATUS_OK;
    int status = 0;
    if (memra__device_enter(dev) != MEMRA_STATUS_OK) return MEMRA_STATUS_OK;
    const CUresult r = drv->cuStreamIsCapturing((CUstream)stream, &status);
    memra__device_leave(dev);
    if (r != 0 || status == 0) return MEMRA_STATUS_OK;
    return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                       "memra_matmul(%s): %s must be made now, which allocates and waits for the device: not possible "
                       "while the stream is captured into a CUDA graph (run one call outside the capture first)",
                       w->name, what);
}

/* The Q8_0 blocks gemm_q8_0 reads: the weight's own bytes (Q8_0) or the slab
 * (block-128 FP8). Where records replaced them they are made again here, once,
 * under the lock, and kept. */
static memra_status q8_0_blocks(memra_weight *w, memra_device *dev, weight_dev *wd, memra_stream_t stream,
                                memra_dptr *out)
{
    const int own = w->format == MEMRA_FORMAT_Q8_0;
    memra_dptr p = op_load(own ? &wd->raw : &wd->q8_0);
    if (p == 0) {
        memra_status st = refuse_in_capture(w, dev, stream, "the Q8_0 blocks for gemm_q8_0 (no gemm_q8_0r lane took it)");
        if (st != MEMRA_STATUS_OK) return st;
        pthread_mutex_lock(&w->lock[dev->index]);
        if (own && wd->raw == 0) st = upload_raw(w, dev, wd);
        else if (!own && wd->q8_0 == 0) st = build_slab(w, dev, wd);
        p = own ? wd->raw : wd->q8_0;
        pthread_mutex_unlock(&w->lock[dev->index]);
        if (st != MEMRA_STATUS_OK) return st;
        MEMRA__DEBUG("weight", "%s on %s: Q8_0 blocks made again for gemm_q8_0", w->name, dev->label);
    }
    *out = p;
    return MEMRA_STATUS_OK;
}

/* The MMQ floor: the activation quantised once into q8_1 records, then
 * gemm_q8_0r on the weight's records, else gemm_q8_0 on its Q8_0 blocks. */
static memra_status mmq(const mm_call *c, memra_weight *w, weight_dev *wd, memra_gemm_args g)
{
    memra_dptr rec;
    memra_status st = memra__scratch_get(c->dev, c->stream, "q8_1", (size_t)memra_q8_1_bytes(g.m, g.k), &rec);
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args q = {.struct_size = sizeof q, .src = g.x, .rows = g.m, .cols = g.k, .dst = rec, .stream = c->stream};
    st = memra__dispatch_on(c->dev, c->snap, MEMRA_OP_quant_q8_1, &q);
    if (st != MEMRA_STATUS_OK) return st;
    g.x = rec;
    const memra_dptr records = op_load(&wd->q8_0r);
    if (records != 0) {
        g.w = records;
        st = gemm_step(c, MEMRA_OP_gemm_q8_0r, &g);
        if (!floor_falls_back(c, MEMRA_OP_gemm_q8_0r, st)) return st;
    }
    st = q8_0_blocks(w, c->dev, wd, c->stream, &g.w);
    if (st != MEMRA_STATUS_OK) return st;
    return gemm_step(c, MEMRA_OP_gemm_q8_0, &g);
}

static memra_status matmul_steps(const mm_call *c, memra_weight *w, const memra_matmul_args *ma);

/* The FP8 lanes' activation scale (DESIGN.md, "Activation scales"): the
 * producer's amax, the weight's static scale, or (both 0) the lane's own amax
 * pass; the lane applies the precedence. Only the e4m3 steps get them. */
static void fp8_act_scale(memra_gemm_args *g, const memra_weight *w, const memra_matmul_args *ma)
{
    g->x_scale = w->input_scale;
    g->x_amax = MEMRA_HAS_MEMBER(ma, memra_matmul_args, x_amax) ? ma->x_amax : 0;
}

float memra_weight_input_scale(const memra_weight *w) { return w ? w->input_scale : 0.0f; }

memra_status memra_matmul_ex(memra_device *dev, memra_weight *w, const memra_matmul_args *ma)
{
    memra__clear_error();
    if (dev == NULL || w == NULL || ma == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul: NULL argument");
    /* every member up to stream is in the first version of the struct: none is read past struct_size */
    if (ma->struct_size < offsetof(memra_matmul_args, stream) + sizeof ma->stream)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): args.struct_size %u is too small",
                           w->name, ma->struct_size);
    if (w->n_experts > 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_matmul(%s): an expert weight (%d experts) takes memra_matmul_experts", w->name,
                           (int)w->n_experts);
    if (ma->m <= 0 || ma->x == 0 || ma->y == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): m = %d, x = %s, y = %s", w->name, ma->m,
                           ma->x ? "set" : "NULL", ma->y ? "set" : "NULL");
    if (ma->ldy != 0 && ma->ldy < w->out_f)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): ldy %lld < out_f %lld", w->name,
                           (long long)ma->ldy, (long long)w->out_f);
    if (ma->y_row_offset < 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): negative row offset", w->name);
    if (!isfinite(ma->alpha))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): alpha %g is not finite", w->name,
                           (double)ma->alpha);
    if (MEMRA_HAS_MEMBER(ma, memra_matmul_args, x_amax) && ma->x_amax % 4 != 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul(%s): x_amax is not 4-byte aligned", w->name);
    memra_status st = memra_weight_prepare(w, dev);
    if (st != MEMRA_STATUS_OK) return st;
    mm_call c = {.dev = dev, .snap = memra__snapshot_acquire(dev), .stream = dev->is_host ? NULL : ma->stream};
    if (c.snap == NULL) return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "no routing on %s", dev->label);
    st = memra__scope_begin(dev, c.stream);
    if (st == MEMRA_STATUS_OK) {
        const char *prev = memra__scratch_module_set("core");
        st = matmul_steps(&c, w, ma);
        memra__scratch_module_set(prev);
        memra__scope_end();
    }
    memra__snapshot_release(c.snap);
    return st;
}

static memra_status matmul_steps(const mm_call *c, memra_weight *w, const memra_matmul_args *ma)
{
    memra_device *dev = c->dev;
    memra_status st;
    int kr_f16_tried = 0; /* MEMRA_FLOOR_F16_M's route ran and fell back: the last fall-back does not repeat it */
    weight_dev *wd = &w->dev[dev->index];
    memra_gemm_args g = {.struct_size = sizeof g,
                         .m = ma->m,
                         .n = (int32_t)w->out_f,
                         .k = (int32_t)w->in_f,
                         .x = ma->x,
                         .x_is_f16 = ma->x_is_f16,
                         .y = ma->y,
                         .ldy = ma->ldy ? ma->ldy : w->out_f,
                         .y_row_offset = ma->y_row_offset,
                         .alpha = ma->alpha == 0.0f ? 1.0f : ma->alpha};
    if (w->format == MEMRA_FORMAT_BF16) {
        if (ma->x_is_f16)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "memra_matmul(%s): a bf16 weight takes an f32 activation (gemm_bf16), not f16", w->name);
        g.w = wd->raw;
        return gemm_step(c, MEMRA_OP_gemm_bf16, &g);
    }
    int f16_path = (w->format != MEMRA_FORMAT_E4M3) &&
                   (wd->f16 != 0 || w->format != MEMRA_FORMAT_Q8_0 || op_load(&wd->w16) != 0);
    if (ma->x_is_f16 && !f16_path)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_matmul(%s): an f16 activation needs an f16-mirror lane; this %s weight has none",
                           w->name, memra_format_name(w->format));

    if (w->format == MEMRA_FORMAT_E4M3 && w->grid == NULL) {
        if (wd->nan_codes > 0) {
            memra__ledger_core_decline(dev, MEMRA_OP_gemm_fp8, "core", "weight has e4m3 NaN codes");
            return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                               "memra_matmul(%s): %llu e4m3 NaN codes; an FP8 lane would read them as NaN", w->name,
                               (unsigned long long)wd->nan_codes);
        }
        g.w = wd->raw;
        g.w_scale = w->scale;
        fp8_act_scale(&g, w, ma);
        return gemm_step(c, MEMRA_OP_gemm_fp8, &g);
    }
    if (w->format == MEMRA_FORMAT_E4M3) {
        if (wd->nan_codes > 0) {
            memra__ledger_core_decline(dev, MEMRA_OP_gemm_fp8_blk, "core", "weight has e4m3 NaN codes");
        } else {
            g.w = wd->raw;
            g.w_scale_grid = wd->grid;
            g.w_scale = 1.0f;
            memra_gemm_args gb = g;
            fp8_act_scale(&gb, w, ma);
            st = gemm_step(c, MEMRA_OP_gemm_fp8_blk, &gb);
            /* No lane (NOT_SUPPORTED) falls to the floor like a decline: prepare
             * builds the slab for exactly that case. */
            if (!floor_falls_back(c, MEMRA_OP_gemm_fp8_blk, st)) return st;
        }
        if (op_load(&wd->q8_0) == 0 && op_load(&wd->q8_0r) == 0) {
            if (w->in_f % 32 != 0)
                return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                                   "memra_matmul(%s): no FP8 block lane took it and in_f %lld is not a multiple of 32 "
                                   "for the Q8_0 slab",
                                   w->name, (long long)w->in_f);
            /* The profile built no slab at prepare: the slab (or its records) now, once. */
            st = refuse_in_capture(w, dev, ma->stream, "the Q8_0 slab for the MMQ floor");
            if (st != MEMRA_STATUS_OK) return st;
            pthread_mutex_lock(&w->lock[dev->index]);
            st = (wd->q8_0 || wd->q8_0r) ? MEMRA_STATUS_OK : build_fp8_mmq(w, dev, wd);
            pthread_mutex_unlock(&w->lock[dev->index]);
            if (st != MEMRA_STATUS_OK) return st;
        }
        g.w_scale_grid = 0;
        return mmq(c, w, wd, g);
    }
    if (wd->f16 != 0) {
        g.w = wd->f16;
        return gemm_step(c, MEMRA_OP_gemm_f16, &g);
    }
    /* The W16 operand: gemm_w16, the f16 mirror's numbers (an f16 activation too). A decline goes down the
     * floor's path below, whose operands are made again from the host bytes. */
    const memra_dptr w16 = op_load(&wd->w16);
    if (w16 != 0) {
        memra_gemm_args gw = g;
        gw.w = w16;
        gw.w_format = (int32_t)w->format;
        st = gemm_step(c, MEMRA_OP_gemm_w16, &gw);
        if (!floor_falls_back(c, MEMRA_OP_gemm_w16, st)) return st;
    }
    /* MEMRA_FLOOR_F16_M on the Q8_0 records of a Q8_0 weight, or of a Q4_0 one (its exact Q8_0 conversion: the
     * same values, so dequant_f16's bits of its own blocks): dequant_kr_f16 + gemm_f16; no lane: the floor */
    if ((w->format == MEMRA_FORMAT_Q8_0 || w->format == MEMRA_FORMAT_Q4_0) && op_load(&wd->q8_0r) != 0 &&
        route_at(dev, 1, g.m)) {
        int no_mem = 0;
        st = kr_f16(c, w, MEMRA_FORMAT_Q8_0, op_load(&wd->q8_0r), g, 1, &no_mem);
        if (!floor_falls_back(c, MEMRA_OP_dequant_kr_f16, st) && !floor_falls_back(c, MEMRA_OP_gemm_f16, st)) return st;
        if (!no_mem)
            memra__ledger_core_decline(dev, MEMRA_OP_dequant_kr_f16, "core",
                                       "MEMRA_FLOOR_F16_M: no lane took dequant_kr_f16 + gemm_f16; the floor serves");
    }
    if (w->format == MEMRA_FORMAT_Q8_0) return mmq(c, w, wd, g);
    if (w->format == MEMRA_FORMAT_Q4_0 && !ma->x_is_f16 && op_load(&wd->q8_0r) != 0) {
        /* Q4_0 on the floor (records of its exact Q8_0 conversion); a decline
         * falls to the per-call dequantisation below, which the ledger then shows */
        memra_dptr rec;
        st = memra__scratch_get(dev, c->stream, "q8_1", (size_t)memra_q8_1_bytes(g.m, g.k), &rec);
        if (st != MEMRA_STATUS_OK) return st;
        memra_op_args q = {.struct_size = sizeof q, .src = g.x, .rows = g.m, .cols = g.k, .dst = rec,
                           .stream = c->stream};
        st = memra__dispatch_on(dev, c->snap, MEMRA_OP_quant_q8_1, &q);
        if (st != MEMRA_STATUS_OK) return st;
        memra_gemm_args gr = g;
        gr.x = rec;
        gr.w = op_load(&wd->q8_0r);
        st = gemm_step(c, MEMRA_OP_gemm_q8_0r, &gr);
        if (!floor_falls_back(c, MEMRA_OP_gemm_q8_0r, st)) return st;
        memra__ledger_core_decline(dev, MEMRA_OP_dequant_f16, "core",
                                   "Q4_0 floor declined: per-call dequantisation to f16 (the last fall-back)");
    }
    if (is_kquant(w->format) && !ma->x_is_f16) {
        const memra_dptr kr = op_load(&wd->kr);
        if (kr != 0 && route_at(dev, 0, g.m)) {
            kr_f16_tried = 1;
            /* MEMRA_FLOOR_F16_M: the K records dequantised per call into scratch, then gemm_f16 (dequant_kr_f16
             * is dequant_f16 of the blocks bit for bit, so the results are the per-call dequantisation's); no
             * lane for either op: the floor below */
            int no_mem = 0;
            st = kr_f16(c, w, w->format, kr, g, 1, &no_mem);
            if (!floor_falls_back(c, MEMRA_OP_dequant_kr_f16, st) && !floor_falls_back(c, MEMRA_OP_gemm_f16, st))
                return st;
            if (!no_mem)
                memra__ledger_core_decline(dev, MEMRA_OP_dequant_kr_f16, "core",
                                           "MEMRA_FLOOR_F16_M: no lane took dequant_kr_f16 + gemm_f16; the K-quant "
                                           "floor serves");
        }
        if (kr != 0) {
            /* the K-quant floor; a decline falls to the per-call dequantisation below */
            memra_dptr rec;
            st = memra__scratch_get(dev, c->stream, "q8_1", (size_t)memra_q8_1_bytes(g.m, g.k), &rec);
            if (st != MEMRA_STATUS_OK) return st;
            memra_op_args q = {.struct_size = sizeof q, .src = g.x, .rows = g.m, .cols = g.k, .dst = rec,
                               .stream = c->stream};
            st = memra__dispatch_on(dev, c->snap, MEMRA_OP_quant_q8_1, &q);
            if (st != MEMRA_STATUS_OK) return st;
            memra_gemm_args gr = g;
            gr.x = rec;
            gr.w = kr;
            gr.w_format = (int32_t)w->format;
            st = gemm_step(c, MEMRA_OP_gemm_kr, &gr);
            if (!floor_falls_back(c, MEMRA_OP_gemm_kr, st)) return st;
            memra__ledger_core_decline(dev, MEMRA_OP_dequant_f16, "core",
                                       "K-quant floor declined: per-call dequantisation to f16 (the last fall-back)");
        } else {
            memra__ledger_core_decline(dev, MEMRA_OP_dequant_f16, "core",
                                       "no K records (no gemm_kr lane at prepare, in_f not a multiple of 256, or no "
                                       "memory): per-call dequantisation to f16 (the last fall-back)");
        }
    }
    /* No mirror: a transient one in scratch. Where K records replaced the raw copy, from them
     * (dequant_kr_f16: the same f16 bits as dequant_f16 of the blocks, so the same results, and no raw
     * copy made again); else, or with no lane for that, from the raw copy (uploaded again, once). */
    if (is_kquant(w->format) && op_load(&wd->kr) != 0 && op_load(&wd->raw) == 0 && !kr_f16_tried) {
        int no_mem = 0;
        st = kr_f16(c, w, w->format, op_load(&wd->kr), g, 0, &no_mem);
        if (!floor_falls_back(c, MEMRA_OP_dequant_kr_f16, st) && !floor_falls_back(c, MEMRA_OP_gemm_f16, st)) return st;
    }
    memra_dptr raw = op_load(&wd->raw);
    if (raw == 0) {
        st = refuse_in_capture(w, dev, c->stream, "the raw copy for the per-call dequantisation");
        if (st != MEMRA_STATUS_OK) return st;
        pthread_mutex_lock(&w->lock[dev->index]);
        if (wd->raw == 0) st = upload_raw(w, dev, wd);
        raw = wd->raw;
        pthread_mutex_unlock(&w->lock[dev->index]);
        if (st != MEMRA_STATUS_OK) return st;
        MEMRA__DEBUG("weight", "%s on %s: raw copy made again for the per-call dequantisation", w->name, dev->label);
    }
    memra_dptr tmp;
    st = memra__scratch_get(dev, c->stream, "f16_mirror", (size_t)(w->out_f * w->in_f * 2), &tmp);
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args a = {.struct_size = sizeof a, .format = w->format, .src = raw, .rows = w->out_f,
                       .cols = w->in_f, .dst = tmp, .stream = c->stream};
    st = memra__dispatch_on(dev, c->snap, MEMRA_OP_dequant_f16, &a);
    if (st != MEMRA_STATUS_OK) return st;
    g.w = tmp;
    return gemm_step(c, MEMRA_OP_gemm_f16, &g);
}

memra_status memra_matmul(memra_device *dev, memra_weight *w, memra_dptr x, int32_t m, memra_dptr y,
                          memra_stream_t stream)
{
    memra_matmul_args a = {.struct_size = sizeof a, .x = x, .m = m, .y = y, .alpha = 1.0f, .stream = stream};
    return memra_matmul_ex(dev, w, &a);
}

/* Facts about a prepared weight, for tests and `memra info`. has_q8_0_slab
 * keeps its meaning for block-128 FP8 weights: the MMQ floor has the weight's
 * Q8_0 slab, or the records made from it (which replace the slab where the
 * device runs gemm_q8_0r). A Q8_0 weight's records are not a slab:
 * memra_weight_operands tells which operands any weight holds. */
memra_status memra_weight_query(const memra_weight *w, const memra_device *dev, memra_weight_state *out)
{
    if (w == NULL || dev == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_query: NULL argument");
    if (dev->rt != w->rt) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "weight and device of other runtimes");
    if (w->n_experts > 0) {
        /* an expert weight: its first expert's operands (every expert holds the same kinds), the NaN codes of all */
        const int prepared = __atomic_load_n(&w->dev[dev->index].ready, __ATOMIC_ACQUIRE);
        memra_status st = memra_weight_query(w->experts[0], dev, out);
        if (st == MEMRA_STATUS_OK) {
            out->prepared = prepared;
            if (prepared) out->nan_codes = w->dev[dev->index].nan_codes;
        }
        return st;
    }
    pthread_mutex_t *lock = (pthread_mutex_t *)(uintptr_t)&w->lock[dev->index];
    pthread_mutex_lock(lock);
    const weight_dev *wd = &w->dev[dev->index];
    out->prepared = wd->prepared;
    out->has_f16_mirror = wd->f16 != 0;
    out->has_q8_0_slab = wd->q8_0 != 0 || (w->format == MEMRA_FORMAT_E4M3 && wd->q8_0r != 0);
    out->nan_codes = wd->nan_codes;
    out->note = wd->mirror_note ? wd->mirror_note : "";
    pthread_mutex_unlock(lock);
    return MEMRA_STATUS_OK;
}

/* The operands as they are now: records replace blocks at prepare, and blocks
 * come back beside the records when gemm_q8_0r stops taking them. */
unsigned memra_weight_operands(const memra_weight *w, const memra_device *dev)
{
    if (w == NULL || dev == NULL || dev->rt != w->rt) return 0;
    if (w->n_experts > 0)
        return __atomic_load_n(&w->dev[dev->index].ready, __ATOMIC_ACQUIRE) ? memra_weight_operands(w->experts[0], dev)
                                                                            : 0u;
    pthread_mutex_t *lock = (pthread_mutex_t *)(uintptr_t)&w->lock[dev->index];
    pthread_mutex_lock(lock);
    const weight_dev *wd = &w->dev[dev->index];
    unsigned m = 0;
    if (wd->prepared) {
        if (wd->raw != 0) m |= MEMRA_OPERAND_RAW;
        if (wd->f16 != 0) m |= MEMRA_OPERAND_F16_MIRROR;
        if (wd->q8_0 != 0) m |= MEMRA_OPERAND_Q8_0_SLAB;
        if (wd->q8_0r != 0) m |= MEMRA_OPERAND_Q8_0_RECORDS;
        if (wd->kr != 0) m |= MEMRA_OPERAND_K_RECORDS;
        if (wd->w16 != 0) m |= MEMRA_OPERAND_W16;
    }
    pthread_mutex_unlock(lock);
    return m;
}

/* ---- the plan: which lane would serve a weight -------------------------------------- */

static void plan_step(memra_device *dev, memra_weight_plan *p, memra_op op)
{
    if (p->n_steps >= MEMRA_PLAN_MAX_STEPS) return;
    const char *names[1] = {NULL};
    p->ops[p->n_steps] = op;
    p->modules[p->n_steps] = memra_routing_get(dev, op, names, 1) > 0 ? names[0] : NULL;
    p->n_steps++;
}

/* The MMQ floor's steps: records where the device runs gemm_q8_0r. */
static void plan_floor(memra_device *dev, memra_weight_plan *p, int records)
{
    plan_step(dev, p, MEMRA_OP_quant_q8_1);
    plan_step(dev, p, records ? MEMRA_OP_gemm_q8_0r : MEMRA_OP_gemm_q8_0);
}

/* The floor's records plans (Q8_0, Q4_0, K-quants) under MEMRA_FLOOR_F16_M: the plan is per weight, the
 * switch per call, so its why says from which m */
static void why_floor_f16(memra_device *dev, memra_weight_plan *p, int q8)
{
    const int64_t n = floor_f16_m(dev, q8);
    if (n <= 0 || !has_lane(dev, MEMRA_OP_dequant_kr_f16) || !has_lane(dev, MEMRA_OP_gemm_f16)) return;
    const int64_t api = (int64_t)atomic_load(&dev->floor_f16_m);
    const size_t l = strlen(p->why);
    snprintf(p->why + l, sizeof p->why - l, "; from %lld tokens dequant_kr_f16 + gemm_f16 (%s)", (long long)n,
             api == MEMRA_FLOOR_F16_M_AUTO ? "memra_device_floor_f16_m_set auto, the profile's"
             : api >= 0                    ? "memra_device_floor_f16_m_set"
             : dev->rt->cfg.floor_f16_m >= 0 ? "MEMRA_FLOOR_F16_M"
                                             : "MEMRA_FLOOR_F16_M=auto, the profile's");
}

static memra_status plan_of(const memra_weight *w, memra_device *dev, memra_weight_plan *out, uint64_t experts);
static int experts_f16_routed(const memra_weight *w, int32_t n_experts, memra_device *dev);
static int experts_floor_first(const memra_device *dev);
static int experts_no_mirror(const memra_weight *w, int32_t n_experts, memra_device *dev);
static const char *experts_lane_taker(const memra_weight *w, int32_t n_experts, memra_device *dev, memra_op lane);
static int experts_w16(const memra_weight *w, int32_t n_experts, memra_device *dev);

/* Mirrors prepare_locked and memra_matmul_ex: keep the three in step. An
 * expert weight's plan is its first expert's with every expert counted (the
 * mirror budget, the bytes) and the GEMM step served by gemm_experts. */
memra_status memra_weight_plan_get(const memra_weight *w, memra_device *dev, memra_weight_plan *out)
{
    memra__clear_error();
    if (w == NULL || dev == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_plan_get: NULL argument");
    if (out->struct_size < sizeof *out)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_plan_get: struct_size %u is too small",
                           out->struct_size);
    if (dev->rt != w->rt) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "weight and device of other runtimes");
    if (w->n_experts == 0) return plan_of(w, dev, out, 0);
    memra_status st = plan_of(w->experts[0], dev, out, (uint64_t)w->n_experts);
    if (st != MEMRA_STATUS_OK) return st;
    memra_op lane_op = MEMRA_OP_COUNT_;
    for (int i = 0; i < out->n_steps; i++) {
        const memra_op o = out->ops[i];
        if (o == MEMRA_OP_gemm_f16 || o == MEMRA_OP_gemm_bf16 || o == MEMRA_OP_gemm_fp8 || o == MEMRA_OP_gemm_fp8_blk ||
            o == MEMRA_OP_gemm_q8_0 || o == MEMRA_OP_gemm_q8_0r || o == MEMRA_OP_gemm_kr || o == MEMRA_OP_gemm_w16) {
            lane_op = o;
            out->ops[i] = MEMRA_OP_gemm_experts;
            /* the module that takes the grouped call on this lane (a no-row question), not merely the
             * routing's first: a GPU module may serve some lanes of gemm_experts only */
            out->modules[i] = experts_lane_taker(w->experts[0], w->n_experts, dev, o);
        }
    }
    char why[sizeof out->why];
    int pl = snprintf(why, sizeof why, "%d experts, grouped (gemm_experts on %s's contract): ", (int)w->n_experts,
                      lane_op == MEMRA_OP_COUNT_ ? "no" : memra_op_name(lane_op));
    if (pl < 0 || (size_t)pl >= sizeof why) pl = 0;
    const size_t rest = sizeof why - (size_t)pl - 1, have = strlen(out->why);
    memcpy(why + pl, out->why, have < rest ? have : rest);
    why[(size_t)pl + (have < rest ? have : rest)] = '\0';
    memcpy(out->why, why, sizeof why);
    if (lane_op == MEMRA_OP_COUNT_) out->lane = "none";
    for (int i = 0; i < out->n_steps; i++)
        if (out->modules[i] == NULL && out->ops[i] == MEMRA_OP_gemm_experts) {
            const size_t l = strlen(out->why);
            snprintf(out->why + l, sizeof out->why - l, "; no module takes gemm_experts on %s on this device",
                     memra_op_name(lane_op));
            out->lane = "none";
        } else if (out->modules[i] == NULL) {
            out->lane = "none";
        }
    return MEMRA_STATUS_OK;
}

int64_t memra_weight_floor_f16_m(const memra_weight *w, memra_device *dev)
{
    if (w == NULL || dev == NULL || dev->rt != w->rt || w->n_experts > 0) return 0;
    memra_weight_plan p;
    if (plan_of(w, dev, &p, 0) != MEMRA_STATUS_OK || p.lane == NULL) return 0;
    /* no lane for either op: the call declines to the floor */
    if (!has_lane(dev, MEMRA_OP_dequant_kr_f16) || !has_lane(dev, MEMRA_OP_gemm_f16)) return 0;
    if (strcmp(p.lane, "mmq K records") == 0) return floor_f16_m(dev, 0);
    if (strcmp(p.lane, "mmq records") == 0 || strcmp(p.lane, "mmq records (Q4_0 as Q8_0)") == 0)
        return floor_f16_m(dev, 1);
    return 0;
}

/* The plan of a dense weight; `experts` > 0: for each of that many experts
 * of this shape (the f16 budget and the bytes counted for all of them). */
static memra_status plan_of(const memra_weight *w, memra_device *dev, memra_weight_plan *out, uint64_t experts)
{
    const uint64_t mult = experts ? experts : 1;
    memra_weight_plan p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    const char *fn = memra_format_name(w->format);
    const uint64_t mbytes = (uint64_t)w->out_f * (uint64_t)w->in_f * 2u * mult;
    p.operand_bytes = w->size + w->grid_count * sizeof(float);
    pthread_mutex_t *lock = (pthread_mutex_t *)(uintptr_t)&w->lock[dev->index];
    pthread_mutex_lock(lock);
    const weight_dev *wd = &w->dev[dev->index];
    const int prepared = wd->prepared;
    const int has_mirror = wd->f16 != 0, no_lane = wd->mirror_mode == MIRROR_NO_LANE;
    const int has_w16 = wd->w16 != 0, w16_mode = wd->mirror_mode == MIRROR_W16;
    pthread_mutex_unlock(lock);
    const uint64_t budget = device_budget(dev), used = atomic_load(&dev->f16_used);
    const int records = records_wanted(dev);
    switch (w->format) {
    case MEMRA_FORMAT_BF16:
        p.lane = "bf16";
        plan_step(dev, &p, MEMRA_OP_gemm_bf16);
        snprintf(p.why, sizeof p.why, "bf16 rides gemm_bf16 on its own bytes; an f16 mirror would lose bf16's exponent range");
        break;
    case MEMRA_FORMAT_F16:
        p.lane = "f16";
        plan_step(dev, &p, MEMRA_OP_gemm_f16);
        snprintf(p.why, sizeof p.why, "the weight is its own f16 mirror");
        break;
    case MEMRA_FORMAT_E4M3:
        if (w->grid == NULL) {
            p.lane = "fp8";
            plan_step(dev, &p, MEMRA_OP_gemm_fp8);
            snprintf(p.why, sizeof p.why,
                     "per-tensor FP8 rides gemm_fp8 (refused at the call if prepare finds e4m3 NaN codes)");
        } else if (has_lane(dev, MEMRA_OP_gemm_fp8_blk)) {
            p.lane = "fp8 block-128";
            plan_step(dev, &p, MEMRA_OP_gemm_fp8_blk);
            const int slab = dev->profile->fp8_blk_slab && w->in_f % 32 == 0;
            if (slab) p.operand_bytes += records ? memra_q8_0r_bytes(w->out_f, w->in_f)
                                                 : (uint64_t)w->out_f * (uint64_t)(w->in_f / 32) * MEMRA_Q8_0_BYTES;
            snprintf(p.why, sizeof p.why, "block-128 FP8 rides gemm_fp8_blk; on a decline the MMQ floor (%s%s)",
                     records ? "gemm_q8_0r on Q8_0 records" : "gemm_q8_0 on a Q8_0 slab",
                     slab ? ", built at prepare by this profile" : ", built at the first decline");
        } else {
            p.lane = records ? "mmq records (fp8 slab)" : "mmq blocks (fp8 slab)";
            plan_step(dev, &p, MEMRA_OP_fp8_blk_to_q8_0);
            plan_floor(dev, &p, records);
            p.operand_bytes += records ? memra_q8_0r_bytes(w->out_f, w->in_f)
                                       : (uint64_t)w->out_f * (uint64_t)(w->in_f / 32) * MEMRA_Q8_0_BYTES;
            snprintf(p.why, sizeof p.why,
                     "no gemm_fp8_blk lane on this device: the weight re-encoded to Q8_0 at prepare (fp8_blk_to_q8_0) "
                     "for the MMQ floor%s", w->in_f % 32 ? " (refused: in_f is not a multiple of 32)" : "");
        }
        break;
    default: {
        /* experts of a quantised format on a GPU (experts_floor_first) or on a device routing no
         * grouped f16 lane (experts_f16_routed): the floor */
        const int floor_first = experts_floor_first(dev);
        const int nolane = experts && w->format != MEMRA_FORMAT_F32 &&
                           (prepared ? no_lane || (w16_mode && experts_no_mirror(w, (int32_t)experts, dev))
                                     : experts_no_mirror(w, (int32_t)experts, dev));
        const int fits =
            w->format == MEMRA_FORMAT_F32 || (!nolane && (prepared ? has_mirror : used + mbytes <= budget));
        if (fits) {
            p.lane = "f16 mirror";
            plan_step(dev, &p, MEMRA_OP_gemm_f16);
            p.operand_bytes += mbytes / mult; /* one expert's; multiplied below */
            if (w->format == MEMRA_FORMAT_F32)
                snprintf(p.why, sizeof p.why, "f32 weights get an f16 mirror (cvt_f16 at prepare, %.1f MB)",
                         (double)mbytes / 1048576.0);
            else
                snprintf(p.why, sizeof p.why,
                         "the f16 mirror (dequant_f16 at prepare, %.1f MB) fits the budget (%.0f MB, %.1f MB used%s)",
                         (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0,
                         prepared ? ", prepared" : "");
        } else if (prepared ? has_w16 : experts ? experts_w16(w, (int32_t)experts, dev) : w16_wanted(w, dev)) {
            p.lane = "w16";
            plan_step(dev, &p, MEMRA_OP_gemm_w16);
            p.operand_bytes = memra_w16_bytes(w->format, w->out_f, w->in_f); /* in place of the raw copy */
            snprintf(p.why, sizeof p.why,
                     "the f16 mirror (%.1f MB) is over the budget (%.0f MB, %.1f MB used): %s re-laid out at prepare "
                     "(the W16 operand, %.2fx the GGUF bytes) for gemm_w16, the f16 mirror's numbers from the "
                     "codes (MEMRA_W16=0: the integer MMQ floor)",
                     (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0, fn,
                     w->size ? (double)p.operand_bytes / (double)w->size : 0.0);
        } else if (w->format == MEMRA_FORMAT_Q8_0) {
            p.lane = records ? "mmq records" : "mmq blocks";
            plan_floor(dev, &p, records);
            if (records) p.operand_bytes = memra_q8_0r_bytes(w->out_f, w->in_f);
            snprintf(p.why, sizeof p.why,
                     "the f16 mirror (%.1f MB) is over the budget (%.0f MB, %.1f MB used): the integer MMQ floor on %s",
                     (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0,
                     records ? "Q8_0 records (repack_q8_0 at prepare)" : "the Q8_0 blocks");
            if (records && !experts) why_floor_f16(dev, &p, 1);
        } else if (w->format == MEMRA_FORMAT_Q4_0 && records && w->in_f % 32 == 0) {
            p.lane = "mmq records (Q4_0 as Q8_0)";
            plan_step(dev, &p, MEMRA_OP_repack_q8_0);
            plan_floor(dev, &p, 1);
            p.operand_bytes += memra_q8_0r_bytes(w->out_f, w->in_f);
            snprintf(p.why, sizeof p.why,
                     "the f16 mirror (%.1f MB) is over the budget (%.0f MB, %.1f MB used): Q4_0 converted exactly to "
                     "Q8_0 records at prepare (144 B per 128 values, twice Q4_0's 72) for the integer MMQ floor",
                     (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0);
            if (!experts) why_floor_f16(dev, &p, 1);
        } else if (kr_wanted(w, dev)) {
            p.lane = "mmq K records";
            plan_step(dev, &p, MEMRA_OP_quant_q8_1);
            plan_step(dev, &p, MEMRA_OP_gemm_kr);
            p.operand_bytes = memra_kr_bytes(w->format, w->out_f, w->in_f); /* in place of the raw copy */
            snprintf(p.why, sizeof p.why,
                     "the f16 mirror (%.1f MB) is over the budget (%.0f MB, %.1f MB used): %s K-packed at prepare "
                     "(its codes and scales at their width, %.2fx the GGUF bytes; widened to int8 in the kernel) for "
                     "the integer MMQ floor",
                     (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0, fn,
                     w->size ? (double)p.operand_bytes / (double)w->size : 0.0);
            if (!experts) why_floor_f16(dev, &p, 0);
        } else {
            p.lane = "transient f16 mirror";
            plan_step(dev, &p, MEMRA_OP_dequant_f16);
            plan_step(dev, &p, MEMRA_OP_gemm_f16);
            snprintf(p.why, sizeof p.why,
                     "the f16 mirror (%.1f MB) is over the budget (%.0f MB, %.1f MB used) and %s has no integer floor "
                     "here: dequant_f16 into scratch on every call",
                     (double)mbytes / 1048576.0, (double)budget / 1048576.0, (double)used / 1048576.0, fn);
        }
        if (nolane) { /* the cause is the lane, not the budget: the floor's part of the reason kept */
            const char *rest = strstr(p.why, " used)");
            rest = rest ? rest + 6 + (rest[6] == ':') + (rest[6] != '\0') : p.why;
            const char *pre = floor_first && strcmp(p.lane, "w16") == 0
                                  ? "quantised experts take no mirror on a GPU (MEMRA_XE_MIRROR=1 mirrors them): "
                              : floor_first ? "quantised experts ride the grouped integer floor on a GPU "
                                              "(MEMRA_XE_MIRROR=1 mirrors them), so no mirror: "
                                            : "no grouped f16 lane on this device (no module serves gemm_experts on "
                                              "the f16 mirror), so no mirror: ";
            char why[sizeof p.why];
            const size_t lp = strlen(pre), room = sizeof why - 1 - lp, lr = strlen(rest);
            const size_t keep = lr < room ? lr : room;
            memcpy(why, pre, lp);
            memcpy(why + lp, rest, keep);
            why[lp + keep] = '\0';
            memcpy(p.why, why, sizeof p.why);
        }
        break;
    }
    }
    for (int i = 0; i < p.n_steps; i++)
        if (p.modules[i] == NULL) {
            char tail[96];
            snprintf(tail, sizeof tail, "; no module serves %s on this device", memra_op_name(p.ops[i]));
            size_t l = strlen(p.why);
            snprintf(p.why + l, sizeof p.why - l, "%s", tail);
            p.lane = "none";
            break;
        }
    if (w->input_scale > 0.0f && (p.ops[0] == MEMRA_OP_gemm_fp8 || p.ops[0] == MEMRA_OP_gemm_fp8_blk)) {
        const size_t l = strlen(p.why);
        snprintf(p.why + l, sizeof p.why - l, "; static activation scale %g: one-pass quantiser",
                 (double)w->input_scale);
    }
    if (mult > 1) p.operand_bytes *= mult;
    *out = p;
    return MEMRA_STATUS_OK;
}

memra_status memra_weight_shape(const memra_weight *w, int64_t *out_f, int64_t *in_f)
{
    if (w == NULL || out_f == NULL || in_f == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_shape: NULL argument");
    *out_f = w->out_f;
    *in_f = w->in_f;
    return MEMRA_STATUS_OK;
}

/* ---- reserving scratch for graph capture ---------------------------------------- */

/* What decides the scratch a weight's calls ask for on dev at a given m: the format, the shape, the
 * experts, the scales it carries, which operands prepare gave it (they pick the lane) and their
 * pointers' low bits (a lane may decline a misaligned operand). Weights alike in all of it ask the
 * same at every m, so memra_stream_reserve walks the m once for each such kind. */
typedef struct reserve_kind {
    int64_t out_f, in_f;
    int32_t format, n_experts;
    uint32_t has;   /* bit per operand or scale present */
    uint32_t align;  /* the low 8 bits of raw, f16, q8_0r, kr */
    uint32_t align2; /* and of w16 (gemm_w16 declines an operand off 16 bytes) */
} reserve_kind;

static reserve_kind reserve_kind_of(const memra_weight *w, const memra_device *dev)
{
    const weight_dev *wd = &w->dev[dev->index];
    const memra_dptr raw = op_load(&wd->raw), f16 = op_load(&wd->f16), q8_0 = op_load(&wd->q8_0),
                     q8_0r = op_load(&wd->q8_0r), kr = op_load(&wd->kr), grid = op_load(&wd->grid),
                     w16 = op_load(&wd->w16);
    reserve_kind r;
    memset(&r, 0, sizeof r); /* no padding bytes left undefined: kinds are compared with memcmp */
    r.out_f = w->out_f, r.in_f = w->in_f, r.format = (int32_t)w->format, r.n_experts = w->n_experts;
    r.has = (raw != 0) | (f16 != 0) << 1 | (q8_0 != 0) << 2 | (q8_0r != 0) << 3 | (kr != 0) << 4 | (grid != 0) << 5 |
            (w->grid != NULL) << 6 | (w->input_scale != 0.0f) << 7 | (wd->nan_codes > 0) << 8 | (wd->etab != 0) << 9 |
            (unsigned)(wd->etab_ok & 0x7Fu) << 10 | (w16 != 0) << 17;
    r.align = (uint32_t)(raw & 255) | (uint32_t)(f16 & 255) << 8 | (uint32_t)(q8_0r & 255) << 16 | (uint32_t)(kr & 255) << 24;
    r.align2 = (uint32_t)(w16 & 255);
    return r;
}

/* One of the reserve's calls: w at m rows of the zeroed x (expert weights: every row on expert 0, the
 * zero ids being x's first bytes) into y. */
static memra_status reserve_call(memra_device *dev, memra_weight *w, memra_dptr x, memra_dptr y, memra_stream_t stream,
                                 int32_t m)
{
    memra_matmul_args a = {.struct_size = sizeof a, .x = x, .m = m, .y = y, .alpha = 1.0f, .stream = stream};
    memra_matmul_experts_args ea = {.struct_size = sizeof ea, .x = x, .rows = m, .ids = x, .y = y, .alpha = 1.0f,
                                    .stream = stream};
    return w->n_experts > 0 ? memra_matmul_experts_ex(dev, w, &ea) : memra_matmul_ex(dev, w, &a);
}

memra_status memra_stream_reserve(memra_device *dev, memra_stream_t stream, memra_weight *const *weights, int n_weights,
                                  int32_t m_max)
{
    memra__clear_error();
    if (dev == NULL || (n_weights > 0 && weights == NULL) || n_weights < 0 || m_max <= 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_stream_reserve: bad argument (device %s, %d weights, m_max %d)", dev ? "set" : "NULL",
                           n_weights, m_max);
    for (int i = 0; i < n_weights; i++)
        if (weights[i] == NULL || weights[i]->rt != dev->rt)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_stream_reserve: weight %d is NULL or of another runtime",
                               i);
    if (dev->is_host) return MEMRA_STATUS_OK;
    const memra__driver *drv = memra__driver_get();
    memra_status st = memra__device_enter(dev);
    if (st != MEMRA_STATUS_OK) return st;
    int capturing = 0;
    if (drv->cuStreamIsCapturing((CUstream)stream, &capturing) == MEMRA__CUDA_SUCCESS && capturing) {
        memra__device_leave(dev);
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "memra_stream_reserve on %s: the stream is being captured; "
                                                       "reserve before the capture begins", dev->label);
    }
    st = memra__stream_pin(dev, stream);
    int64_t in_max = 1, out_max = 1;
    for (int i = 0; i < n_weights; i++) {
        if (weights[i]->in_f > in_max) in_max = weights[i]->in_f;
        if (weights[i]->out_f > out_max) out_max = weights[i]->out_f;
    }
    memra_dptr x = 0, y = 0;
    if (st == MEMRA_STATUS_OK) st = memra__dev_alloc(dev, (size_t)m_max * (size_t)in_max * 4u, &x);
    if (st == MEMRA_STATUS_OK) st = memra__dev_alloc(dev, (size_t)m_max * (size_t)out_max * 4u, &y);
    if (st == MEMRA_STATUS_OK) {
        CUresult r = drv->cuMemsetD8Async(x, 0, (size_t)m_max * (size_t)in_max * 4u, (CUstream)stream);
        if (r != MEMRA__CUDA_SUCCESS) st = MEMRA__CU_FAIL(drv, r, "cuMemsetD8Async (memra_stream_reserve)");
    }
    /* A lane's plan (split-k slices, padding) can ask more scratch at a smaller
     * m than at m_max, so the calls run at m_max and down the walk of
     * reserve_walk.h: every m up to 1024, above it steps of 1/32 of m (plans
     * change slowly there) and every power of two (where lanes switch plans).
     * Every weight runs at m_max (which prepares it); the walk below m_max runs
     * for the first weight of each kind (reserve_kind) alone. */
    /* expert weights run the grouped call with every row on expert 0 (zero ids: the zeroed x's first bytes) */
    reserve_kind *kinds = NULL;
    int n_kinds = 0;
    if (st == MEMRA_STATUS_OK && n_weights > 0) {
        kinds = malloc((size_t)n_weights * sizeof *kinds);
        if (kinds == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_stream_reserve: %d weights", n_weights);
    }
    for (int i = 0; i < n_weights && st == MEMRA_STATUS_OK; i++) {
        int seen = 0;
        for (int32_t m = m_max; m >= 1 && st == MEMRA_STATUS_OK && !seen;) {
            st = reserve_call(dev, weights[i], x, y, stream, m);
            if (st == MEMRA_STATUS_OK && m == m_max) {
                const reserve_kind kd = reserve_kind_of(weights[i], dev);
                for (int j = 0; j < n_kinds && !seen; j++) seen = memcmp(&kinds[j], &kd, sizeof kd) == 0;
                if (!seen) kinds[n_kinds++] = kd; /* else a weight of this kind walked already */
            }
            m = memra__reserve_next_m(m);
        }
        /* Above 1024 the steps can miss an m whose split asks more (a fake-driver probe of
         * gemm_q8_0r's plan found 9 of 65 shape x m_max pairs short, one by over 5%): every m there
         * is sized without running, where the lanes can (memra_call.sizing); the first call a
         * module runs anyway ends it (the steps stand for that lane). */
        for (int32_t m = m_max - 1; !seen && m > MEMRA__RESERVE_DENSE_M && st == MEMRA_STATUS_OK; m--) {
            memra__sizing_begin();
            st = reserve_call(dev, weights[i], x, y, stream, m);
            if (!memra__sizing_end()) break;
        }
    }
    free(kinds);
    if (st == MEMRA_STATUS_OK) {
        CUresult r = drv->cuStreamSynchronize((CUstream)stream);
        if (r != MEMRA__CUDA_SUCCESS) st = MEMRA__CU_FAIL(drv, r, "cuStreamSynchronize (memra_stream_reserve)");
    } else {
        drv->cuStreamSynchronize((CUstream)stream);
    }
    memra__dev_free(dev, x);
    memra__dev_free(dev, y);
    memra__device_leave(dev);
    return st;
}

/* ---- expert weights (MoE) ---------------------------------------------------------
 *
 * An expert weight is n_experts dense weights of one format and shape (the
 * experts, created over slices of its bytes and never handed out), plus, per
 * device, tables of the experts' operands (one device array of n_experts
 * pointers per operand kind, ET_*) that gemm_experts reads on the device.
 * Prepare prepares every expert with the dense policy, with one change: the
 * f16 mirror is all or none. The experts' mirrors are reserved against the
 * budget at once (each expert's share counted as its own mirror, released
 * with it), or, when they do not all fit, no expert gets one, so the experts
 * always share one lane. The tables are made once at prepare; a call
 * uploads nothing, reads nothing back and never waits for the device. */

enum { ET_RAW, ET_GRID, ET_F16, ET_Q8_0, ET_Q8_0R, ET_KR, ET_W16, ET_KINDS };

static void experts_release_none(void *user) { (void)user; }

static memra_status experts_create(memra_runtime *rt, memra_format format, int32_t n_experts, int64_t out_f,
                                   int64_t in_f, const void *const *data, size_t expert_bytes, const float *scales,
                                   const float *grid, size_t grid_each, const char *name, void *owned,
                                   memra_weight_release_fn release, void *user, memra_weight **out_w)
{
    const char *nm = name ? name : "experts";
    if (n_experts < 1 || n_experts > (1 << 16))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: n_experts %d out of range (1 .. 65536)", nm,
                           (int)n_experts);
    memra_weight *w = calloc(1, sizeof *w);
    memra_weight **ex = calloc((size_t)n_experts, sizeof *ex);
    float *sc = format == MEMRA_FORMAT_E4M3 && grid == NULL ? calloc((size_t)n_experts, sizeof *sc) : NULL;
    if (w == NULL || ex == NULL || (format == MEMRA_FORMAT_E4M3 && grid == NULL && sc == NULL)) {
        free(w), free(ex), free(sc);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", nm);
    }
    memra_status st = MEMRA_STATUS_OK;
    for (int32_t e = 0; e < n_experts && st == MEMRA_STATUS_OK; e++) {
        char en[64];
        snprintf(en, sizeof en, "%.50s[%d]", nm, (int)e);
        memra_weight_desc d = {.struct_size = sizeof d,
                               .format = format,
                               .out_f = out_f,
                               .in_f = in_f,
                               .data = data[e],
                               .size = expert_bytes,
                               .scale = scales ? scales[e] : 0.0f,
                               .grid = grid ? grid + (size_t)e * grid_each : NULL,
                               .grid_count = grid ? grid_each : 0,
                               .name = en};
        st = weight_create(rt, &d, 1, experts_release_none, NULL, &ex[e]);
        if (st != MEMRA_STATUS_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", memra_last_error());
            st = MEMRA__FAIL(st, "%s: expert %d: %s", nm, (int)e, msg);
        } else if (sc != NULL) {
            sc[e] = ex[e]->scale;
        }
    }
    if (st != MEMRA_STATUS_OK) {
        for (int32_t e = 0; e < n_experts; e++) memra_weight_destroy(ex[e]);
        free(w), free(ex), free(sc);
        return st;
    }
    w->rt = rt;
    w->format = format;
    w->out_f = out_f;
    w->in_f = in_f;
    w->data = owned;
    w->size = expert_bytes * (size_t)n_experts;
    w->release = owned ? NULL : release;
    w->release_user = user;
    w->scale = 1.0f;
    w->grid_count = grid ? grid_each * (size_t)n_experts : 0;
    w->n_experts = n_experts;
    w->experts = ex;
    w->expert_scales = sc;
    snprintf(w->name, sizeof w->name, "%s", nm);
    for (int i = 0; i < MEMRA__MAX_DEVICES; i++) pthread_mutex_init(&w->lock[i], NULL);
    *out_w = w;
    return MEMRA_STATUS_OK;
}

memra_status memra__weight_create_experts_parts(memra_runtime *rt, memra_format format, int32_t n_experts,
                                                int64_t out_f, int64_t in_f, const void *const *data,
                                                size_t expert_bytes, const float *scales, const float *grid,
                                                size_t grid_each, const char *name, memra_weight_release_fn release,
                                                void *user, memra_weight **out_w)
{
    memra__clear_error();
    if (rt == NULL || data == NULL || out_w == NULL || release == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "expert weight: NULL argument");
    return experts_create(rt, format, n_experts, out_f, in_f, data, expert_bytes, scales, grid, grid_each, name, NULL,
                          release, user, out_w);
}

memra_status memra_weight_create_experts(memra_runtime *rt, const memra_experts_desc *d, memra_weight **out_w)
{
    memra__clear_error();
    if (rt == NULL || d == NULL || out_w == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_weight_create_experts: NULL argument");
    if (d->struct_size < offsetof(memra_experts_desc, name) + sizeof d->name)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "experts: desc.struct_size %u is too small", d->struct_size);
    const char *nm = d->name ? d->name : "experts";
    if (d->n_experts < 1 || d->n_experts > (1 << 16))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: n_experts %d out of range (1 .. 65536)", nm,
                           (int)d->n_experts);
    if (memra_format_block_values(d->format) == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: unknown format %d", nm, (int)d->format);
    if (d->data == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: data is NULL", nm);
    if (d->out_f <= 0 || d->in_f <= 0 || d->out_f > (1 << 24) || d->in_f > (1 << 24) ||
        d->in_f % memra_format_block_values(d->format) != 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: expert shape [%lld x %lld] is not a %s matrix", nm,
                           (long long)d->out_f, (long long)d->in_f, memra_format_name(d->format));
    const uint64_t each = (uint64_t)d->out_f * memra_format_row_bytes(d->format, d->in_f);
    if (d->size != each * (uint64_t)d->n_experts)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: %zu bytes given, %d experts of %s [%lld x %lld] need %llu",
                           nm, d->size, (int)d->n_experts, memra_format_name(d->format), (long long)d->out_f,
                           (long long)d->in_f, (unsigned long long)(each * (uint64_t)d->n_experts));
    size_t grid_each = 0;
    if (d->grid != NULL) {
        grid_each = (size_t)(memra_fp8_grid_rows(d->out_f) * memra_fp8_grid_cols(d->in_f));
        if (d->grid_count != grid_each * (size_t)d->n_experts)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "%s: %zu grid floats given; %d experts of [%lld x %lld] need %d x %zu", nm, d->grid_count,
                               (int)d->n_experts, (long long)d->out_f, (long long)d->in_f, (int)d->n_experts,
                               grid_each);
        if (d->scales != NULL)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "%s: per-expert scales with block-128 grids are ambiguous; fold them into the grids", nm);
    } else if (d->grid_count != 0) {
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: grid_count %zu with a NULL grid", nm, d->grid_count);
    }
    uint8_t *copy = malloc(d->size);
    const void **parts = malloc((size_t)d->n_experts * sizeof *parts);
    if (copy == NULL || parts == NULL) {
        free(copy), free(parts);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", nm, d->size);
    }
    memcpy(copy, d->data, d->size);
    for (int32_t e = 0; e < d->n_experts; e++) parts[e] = copy + (size_t)e * each;
    memra_status st = experts_create(rt, d->format, d->n_experts, d->out_f, d->in_f, parts, (size_t)each, d->scales,
                                     d->grid, grid_each, d->name, copy, NULL, NULL, out_w);
    free(parts);
    if (st != MEMRA_STATUS_OK) free(copy);
    return st;
}

int32_t memra_weight_experts(const memra_weight *w) { return w ? w->n_experts : 0; }

/* Operand `kind` of expert weight sub on device d (0 when it has none). */
static memra_dptr expert_operand(const memra_weight *sub, int d, int kind)
{
    const weight_dev *wd = &sub->dev[d];
    switch (kind) {
    case ET_RAW: return wd->raw;
    case ET_GRID: return wd->grid;
    case ET_F16: return wd->f16;
    case ET_Q8_0: return sub->format == MEMRA_FORMAT_Q8_0 ? wd->raw : sub->format == MEMRA_FORMAT_E4M3 ? wd->q8_0 : 0;
    case ET_Q8_0R: return wd->q8_0r;
    case ET_KR: return wd->kr;
    case ET_W16: return op_load(&wd->w16);
    default: return 0;
    }
}

static size_t etab_bytes(int32_t n) { return (size_t)ET_KINDS * (size_t)n * sizeof(memra_dptr) + (size_t)n * 4u; }

/* Whether dev routes gemm_experts on the f16-mirror lane for w's shape: a call of no rows (nothing
 * read or launched) that a lane takes rather than declines. Where none does, quantised experts
 * reserve no mirror: it would leave them no lane at all (their calls went to a grouped f16 step
 * nothing served: NOT_SUPPORTED under the default budget) and hold the mirror's bytes, 2 in_f
 * out_f a expert, for nothing. Asked at prepare: a module added later that serves the lane takes
 * these experts once they are prepared again. */
static const char *experts_lane_taker(const memra_weight *w, int32_t n_experts, memra_device *dev, memra_op lane)
{
    const memra_dptr any = 16; /* never read: no rows */
    memra_op_args a = {.struct_size = sizeof a};
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = 0, .n = (int32_t)w->out_f, .k = (int32_t)w->in_f,
                               .x = any, .w = any, .y = any, .ldy = w->out_f, .alpha = 1.0f,
                               .w_format = (int32_t)w->format, .w_scale_grid = any};
    a.experts = (memra_gemm_experts_args){.struct_size = sizeof a.experts, .lane = (int32_t)lane,
                                          .n_experts = n_experts, .ids = any, .w_scales = any};
    return memra__dispatch_taken(dev, MEMRA_OP_gemm_experts, &a);
}

static int experts_f16_routed(const memra_weight *w, int32_t n_experts, memra_device *dev)
{
    return experts_lane_taker(w, n_experts, dev, MEMRA_OP_gemm_f16) != NULL;
}

/* On a GPU quantised experts ride the grouped integer floor unless MEMRA_XE_MIRROR=1: the mmq
 * family's grouped f16 tile serves mirrors, but on the H200 (run t2, m = 512) it took 0.25 ms at
 * the Qwen3-30B-A3B-like gate rows where the Q8_0 floor takes 0.15, and 0.81 ms at the
 * Mixtral-like gate rows against 0.58, while a mirror doubles a Q8_0 expert's bytes. */
static int experts_floor_first(const memra_device *dev) { return !dev->is_host && !dev->rt->cfg.xe_mirror; }

/* Quantised experts without mirrors that take the W16 operand and the grouped w16 tile (gemm_experts on lane
 * gemm_w16) in place of the grouped floor: gemm_w16 wanted for their format, shape and device (w16_wanted:
 * MEMRA_W16, the device's switch) and a module that takes the grouped call on that lane, whatever the expert
 * count. The prepare's and the plan's one rule. Measured on an H100 (bench/RESULTS.md, runs x2, y2, y5; Q8_0,
 * the grouped floor beside): with 8 experts (Mixtral-like) the grouped w16 tile took 0.62-0.74x the floor's time at
 * m = 512 and 0.56-0.58x at 4096; with 128 (Qwen3-30B-A3B-like, top-8: m / 16 rows an expert), on the 64-token
 * tile and its raster, 0.99-1.03x at m = 512 and 0.81-0.88x at 4096. (Before the 64-token tile and the raster
 * it took 1.96x there at m = 512, and auto kept more than 16 experts on the floor.) */
static int experts_w16(const memra_weight *w, int32_t n_experts, memra_device *dev)
{
    return w16_wanted(w, dev) && experts_lane_taker(w, n_experts, dev, MEMRA_OP_gemm_w16) != NULL;
}

/* Quantised experts that reserve no mirror whatever the budget: the prepare's and the plan's one rule */
static int experts_no_mirror(const memra_weight *w, int32_t n_experts, memra_device *dev)
{
    return experts_floor_first(dev) || !experts_f16_routed(w, n_experts, dev);
}

/* Caller holds w->lock[dev->index]; the experts' own locks are taken by their prepare. */
static memra_status experts_prepare_locked(memra_weight *w, memra_device *dev)
{
    const int d = dev->index;
    weight_dev *wd = &w->dev[d];
    if (wd->prepared) return MEMRA_STATUS_OK;
    const int32_t n = w->n_experts;
    const int quant = w->format == MEMRA_FORMAT_Q8_0 || w->format == MEMRA_FORMAT_Q4_0 || is_kquant(w->format);
    const uint64_t share = (uint64_t)w->out_f * (uint64_t)w->in_f * 2u, total = share * (uint64_t)n;
    int mode = MIRROR_BUDGET;
    const int floor_first = experts_floor_first(dev);
    if (quant && experts_no_mirror(w, n, dev)) {
        mode = MIRROR_NO_LANE;
        memra__log(MEMRA_LOG_DEBUG, "weight", "%s on %s: no f16 mirror for its %d experts (%s)", w->name, dev->label,
                   (int)n,
                   floor_first ? "quantised experts ride the floor on a GPU; MEMRA_XE_MIRROR=1 mirrors them"
                               : "no module routes gemm_experts on the f16 lane here");
    } else if (quant) {
        const uint64_t used = atomic_fetch_add(&dev->f16_used, total);
        mode = used + total <= device_budget(dev) ? MIRROR_RESERVED : MIRROR_NONE;
        if (mode == MIRROR_NONE) atomic_fetch_sub(&dev->f16_used, total);
    }
    /* experts without mirrors: the grouped w16 tile where it is wanted and served, else the floor (mode0: the
     * reason there is no mirror, kept for a fall-back to the floor) */
    const int mode0 = mode;
    if ((mode == MIRROR_NO_LANE || mode == MIRROR_NONE) && experts_w16(w, n, dev)) {
        mode = MIRROR_W16;
        memra__log(MEMRA_LOG_DEBUG, "weight", "%s on %s: its %d experts take the W16 operand (the grouped w16 tile)",
                   w->name, dev->label, (int)n);
    }
    memra_status st = MEMRA_STATUS_OK;
    int32_t done = 0;
    for (; done < n && st == MEMRA_STATUS_OK; done++) {
        w->experts[done]->dev[d].mirror_mode = mode;
        st = memra_weight_prepare(w->experts[done], dev);
        /* an expert without its W16 operand sends the group to the floor (below): no more W16 uploads */
        if (st == MEMRA_STATUS_OK && mode == MIRROR_W16 && op_load(&w->experts[done]->dev[d].w16) == 0) {
            done++;
            break;
        }
    }
    if (st != MEMRA_STATUS_OK) done--;
    if (st == MEMRA_STATUS_OK && mode == MIRROR_W16) {
        /* the grouped w16 tile needs every expert's W16 operand: one that did not get it (no device memory) sends
         * the group to the floor, every expert prepared again there */
        int all = 1;
        for (int32_t e = 0; e < n; e++) all &= op_load(&w->experts[e]->dev[d].w16) != 0;
        if (!all) {
            memra__log(MEMRA_LOG_WARN, "weight", "%s on %s: not every expert got its W16 operand: the grouped floor",
                       w->name, dev->label);
            mode = mode0;
            for (int32_t e = 0; e < n && st == MEMRA_STATUS_OK; e++) {
                memra_weight *sub = w->experts[e];
                pthread_mutex_lock(&sub->lock[d]);
                weight_dev_free(sub, d);
                __atomic_store_n(&sub->dev[d].ready, 0, __ATOMIC_RELEASE);
                sub->dev[d].mirror_mode = mode0;
                pthread_mutex_unlock(&sub->lock[d]);
                st = memra_weight_prepare(sub, dev);
            }
        }
    }
    /* FP8 block-128 with NaN codes in any expert: the whole group rides the floor */
    int nan = 0;
    for (int32_t e = 0; e < done; e++) nan |= w->experts[e]->dev[d].nan_codes > 0;
    if (st == MEMRA_STATUS_OK && nan && w->grid_count > 0 && w->in_f % 32 == 0) {
        for (int32_t e = 0; e < n && st == MEMRA_STATUS_OK; e++) {
            memra_weight *sub = w->experts[e];
            pthread_mutex_lock(&sub->lock[d]);
            if (sub->dev[d].q8_0 == 0 && sub->dev[d].q8_0r == 0) st = build_fp8_mmq(sub, dev, &sub->dev[d]);
            pthread_mutex_unlock(&sub->lock[d]);
        }
    }
    memra_dptr *tab = NULL;
    if (st == MEMRA_STATUS_OK) {
        tab = calloc(1, etab_bytes(n));
        if (tab == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory for the expert tables", w->name);
    }
    if (st == MEMRA_STATUS_OK) {
        unsigned ok = 0;
        for (int kind = 0; kind < ET_KINDS; kind++) {
            int all = 1;
            for (int32_t e = 0; e < n; e++) {
                tab[(size_t)kind * (size_t)n + (size_t)e] = expert_operand(w->experts[e], d, kind);
                all &= tab[(size_t)kind * (size_t)n + (size_t)e] != 0;
            }
            if (all) ok |= 1u << kind;
        }
        float *sc = (float *)(tab + (size_t)ET_KINDS * (size_t)n);
        for (int32_t e = 0; e < n; e++) sc[e] = w->experts[e]->scale;
        st = memra__dev_alloc(dev, etab_bytes(n), &wd->etab);
        if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, wd->etab, tab, etab_bytes(n));
        if (st == MEMRA_STATUS_OK) {
            wd->etab_ok = ok;
            wd->prepared = 1;
            wd->f16_bytes = mode == MIRROR_RESERVED ? total : 0; /* released with this weight's operands */
            wd->nan_codes = 0;
            for (int32_t e = 0; e < n; e++) wd->nan_codes += w->experts[e]->dev[d].nan_codes;
            wd->mirror_note = w->experts[0]->dev[d].mirror_note;
        } else {
            memra__dev_free(dev, wd->etab);
            wd->etab = 0;
        }
    }
    free(tab);
    if (st != MEMRA_STATUS_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", memra_last_error());
        if (mode == MIRROR_RESERVED) atomic_fetch_sub(&dev->f16_used, total);
        for (int32_t e = 0; e < n; e++) {
            pthread_mutex_lock(&w->experts[e]->lock[d]);
            weight_dev_free(w->experts[e], d);
            __atomic_store_n(&w->experts[e]->dev[d].ready, 0, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&w->experts[e]->lock[d]);
        }
        return MEMRA__FAIL(st, "preparing %s on %s: %s", w->name, dev->label, msg);
    }
    return MEMRA_STATUS_OK;
}

static memra_status experts_step(const mm_call *c, memra_op lane, const memra_gemm_args *g, memra_dptr ids,
                                 int32_t n_experts, memra_dptr scales)
{
    memra_op_args a = {.struct_size = sizeof a, .gemm = *g, .stream = c->stream};
    a.experts = (memra_gemm_experts_args){.struct_size = sizeof a.experts, .lane = (int32_t)lane,
                                          .n_experts = n_experts, .ids = ids, .w_scales = scales};
    return memra__dispatch_on(c->dev, c->snap, MEMRA_OP_gemm_experts, &a);
}

/* The q8_1 records of every row (row-local: the same codes as per expert). */
static memra_status experts_quant(const mm_call *c, memra_gemm_args *g)
{
    memra_dptr rec;
    memra_status st = memra__scratch_get(c->dev, c->stream, "q8_1", (size_t)memra_q8_1_bytes(g->m, g->k), &rec);
    if (st != MEMRA_STATUS_OK) return st;
    memra_op_args q = {.struct_size = sizeof q, .src = g->x, .rows = g->m, .cols = g->k, .dst = rec,
                       .stream = c->stream};
    st = memra__dispatch_on(c->dev, c->snap, MEMRA_OP_quant_q8_1, &q);
    if (st == MEMRA_STATUS_OK) g->x = rec;
    return st;
}

static memra_status experts_steps(const mm_call *c, memra_weight *w, const memra_matmul_experts_args *a)
{
    const weight_dev *wd = &w->dev[c->dev->index];
    const int32_t n = w->n_experts;
    const unsigned ok = wd->etab_ok;
#define ETAB(kind) (wd->etab + (memra_dptr)((size_t)(kind) * (size_t)n * sizeof(memra_dptr)))
    const memra_dptr scales = wd->etab + (memra_dptr)((size_t)ET_KINDS * (size_t)n * sizeof(memra_dptr));
    memra_gemm_args g = {.struct_size = sizeof g,
                         .m = a->rows,
                         .n = (int32_t)w->out_f,
                         .k = (int32_t)w->in_f,
                         .x = a->x,
                         .x_is_f16 = a->x_is_f16,
                         .y = a->y,
                         .ldy = a->ldy ? a->ldy : w->out_f,
                         .y_row_offset = a->y_row_offset,
                         .alpha = a->alpha == 0.0f ? 1.0f : a->alpha,
                         .w_format = (int32_t)w->format};
    const int mirror = w->format != MEMRA_FORMAT_E4M3 && w->format != MEMRA_FORMAT_BF16 && (ok & (1u << ET_F16));
    const int w16 = !mirror && (ok & (1u << ET_W16)) != 0;
    if (a->x_is_f16 && !mirror && !w16)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_matmul_experts(%s): an f16 activation needs the f16-mirror lane (or the w16 tile); "
                           "these %s experts have neither",
                           w->name, memra_format_name(w->format));
    memra_status st;
    if (w->format == MEMRA_FORMAT_BF16) {
        g.w = ETAB(ET_RAW);
        return experts_step(c, MEMRA_OP_gemm_bf16, &g, a->ids, n, 0);
    }
    if (w->format == MEMRA_FORMAT_E4M3 && w->grid_count == 0) {
        if (wd->nan_codes > 0) {
            memra__ledger_core_decline(c->dev, MEMRA_OP_gemm_experts, "core", "an expert has e4m3 NaN codes");
            return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                               "memra_matmul_experts(%s): %llu e4m3 NaN codes; an FP8 lane would read them as NaN",
                               w->name, (unsigned long long)wd->nan_codes);
        }
        g.w = ETAB(ET_RAW);
        return experts_step(c, MEMRA_OP_gemm_fp8, &g, a->ids, n, scales);
    }
    if (w->format == MEMRA_FORMAT_E4M3) {
        if (wd->nan_codes > 0) {
            memra__ledger_core_decline(c->dev, MEMRA_OP_gemm_experts, "core", "an expert has e4m3 NaN codes");
        } else if (c->snap->n_lanes[MEMRA_OP_gemm_fp8_blk] > 0) { /* the dense policy: no block lane, the floor */
            g.w = ETAB(ET_RAW);
            g.w_scale_grid = ETAB(ET_GRID);
            st = experts_step(c, MEMRA_OP_gemm_fp8_blk, &g, a->ids, n, 0);
            if (!floor_falls_back(c, MEMRA_OP_gemm_experts, st)) return st;
        }
        g.w_scale_grid = 0;
    } else if (mirror) {
        g.w = ETAB(ET_F16);
        return experts_step(c, MEMRA_OP_gemm_f16, &g, a->ids, n, 0);
    } else if (w16) {
        /* the grouped w16 tile (the f16 mirror's numbers; an f16 activation too): its experts hold no floor
         * operand, so a decline is the call's status */
        g.w = ETAB(ET_W16);
        return experts_step(c, MEMRA_OP_gemm_w16, &g, a->ids, n, 0);
    }
    /* the integer floors: the activation quantised once for all rows */
    const int q8r = (ok & (1u << ET_Q8_0R)) != 0, q8b = (ok & (1u << ET_Q8_0)) != 0, kr = (ok & (1u << ET_KR)) != 0;
    if (!q8r && !q8b && !kr)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                           "memra_matmul_experts(%s): no grouped lane for %s experts on %s (no f16 mirror within the "
                           "budget, and no integer floor operand for every expert)",
                           w->name, memra_format_name(w->format), c->dev->label);
    st = experts_quant(c, &g);
    if (st != MEMRA_STATUS_OK) return st;
    if (kr) {
        g.w = ETAB(ET_KR);
        return experts_step(c, MEMRA_OP_gemm_kr, &g, a->ids, n, 0);
    }
    if (q8r) {
        g.w = ETAB(ET_Q8_0R);
        st = experts_step(c, MEMRA_OP_gemm_q8_0r, &g, a->ids, n, 0);
        if (!q8b || !floor_falls_back(c, MEMRA_OP_gemm_experts, st)) return st;
    }
    g.w = ETAB(ET_Q8_0);
    return experts_step(c, MEMRA_OP_gemm_q8_0, &g, a->ids, n, 0);
#undef ETAB
}

memra_status memra_matmul_experts_ex(memra_device *dev, memra_weight *w, const memra_matmul_experts_args *a)
{
    memra__clear_error();
    if (dev == NULL || w == NULL || a == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts: NULL argument");
    if (a->struct_size < offsetof(memra_matmul_experts_args, stream) + sizeof a->stream)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts(%s): args.struct_size %u is too small",
                           w->name, a->struct_size);
    if (w->n_experts == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_matmul_experts(%s): a dense weight; make an expert weight (memra_weight_create_experts)",
                           w->name);
    if (a->rows <= 0 || a->x == 0 || a->y == 0 || a->ids == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts(%s): rows = %d, x = %s, ids = %s, y = %s",
                           w->name, a->rows, a->x ? "set" : "NULL", a->ids ? "set" : "NULL", a->y ? "set" : "NULL");
    if (a->ldy != 0 && a->ldy < w->out_f)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts(%s): ldy %lld < out_f %lld", w->name,
                           (long long)a->ldy, (long long)w->out_f);
    if (a->y_row_offset < 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts(%s): negative row offset", w->name);
    if (!isfinite(a->alpha))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_matmul_experts(%s): alpha %g is not finite", w->name,
                           (double)a->alpha);
    memra_status st = memra_weight_prepare(w, dev);
    if (st != MEMRA_STATUS_OK) return st;
    mm_call c = {.dev = dev, .snap = memra__snapshot_acquire(dev), .stream = dev->is_host ? NULL : a->stream};
    if (c.snap == NULL) return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "no routing on %s", dev->label);
    st = memra__scope_begin(dev, c.stream);
    if (st == MEMRA_STATUS_OK) {
        const char *prev = memra__scratch_module_set("core");
        st = experts_steps(&c, w, a);
        memra__scratch_module_set(prev);
        memra__scope_end();
    }
    memra__snapshot_release(c.snap);
    return st;
}

memra_status memra_matmul_experts(memra_device *dev, memra_weight *w, memra_dptr x, int32_t rows, memra_dptr ids,
                                  memra_dptr y, memra_stream_t stream)
{
    memra_matmul_experts_args a = {.struct_size = sizeof a, .x = x, .rows = rows, .ids = ids, .y = y, .alpha = 1.0f,
                                   .stream = stream};
    return memra_matmul_experts_ex(dev, w, &a);
}
