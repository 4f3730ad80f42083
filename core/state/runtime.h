/* Private layout of the runtime, devices, modules, routing snapshots and the
 * ledger: the data every room of core/ shares, and no functions (each room
 * declares its own in its header: core/device/device.h, core/routing/routing.h,
 * ...). Nothing here is part of the public ABI. */
#ifndef MEMRA_CORE_RUNTIME_H
#define MEMRA_CORE_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "arch/profiles.h"
#include "base/config.h"
#include "base/driver.h"
#include "memra/memra.h"

#define MEMRA__MAX_DEVICES 16
#define MEMRA__MAX_REASONS 8
#define MEMRA__ARENA_BLOCKS 24

typedef struct memra__jit memra__jit;

typedef struct memra__name {
    struct memra__name *next;
    char s[];
} memra__name;

/* One module the registry has seen (loaded or refused). The library is
 * closed when `refs` (loaded + snapshots) drops to zero; the record itself is
 * freed when `life` does: one for being listed in rt->mods, one while refs is
 * above zero. A hot load of a path replaces the record of its earlier,
 * refused or unloaded load, so load/unload cycles keep one record per path. */
typedef struct memra__modrec {
    char *path;           /* file, or "(built-in)" */
    char *name;           /* descriptor name, or the file's base name if refused early */
    const char *iname;    /* the descriptor name interned in rt (lives until memra_close), "" before */
    int fd;               /* the descriptor the library was loaded from, -1 when none */
    atomic_int life;
    char *version;
    char *reason;         /* "" when loaded */
    void *dl;             /* dlopen handle; NULL for built-in */
    memra_module_desc desc;  /* the module's descriptor, widened to our size (missing tail = NULL) */
    memra_op_table ops;      /* the op table, widened likewise */
    int loaded;              /* admitted on at least one device and not withdrawn */
    atomic_int refs;         /* registry + snapshots */
    int score[MEMRA__MAX_DEVICES];
    void *ctx[MEMRA__MAX_DEVICES];
    int admitted[MEMRA__MAX_DEVICES];
    char *device_note[MEMRA__MAX_DEVICES]; /* why not admitted on that device */
    struct memra_runtime *rt;
    /* the admission self-check's verdict (core/observe/admission.c, through core/routing/verdict.h) */
    int adm_state;       /* memra_admission_state */
    double adm_ms;       /* its cost */
    int adm_cases;
    char adm_note[512];  /* "N cases passed in X ms", or why quarantined */
} memra__modrec;

/* memra__modrec.adm_state: the public memra_admission_state values. */
#define MEMRA__ADM_NONE MEMRA_ADMISSION_NOT_RUN
#define MEMRA__ADM_PASSED MEMRA_ADMISSION_PASSED
#define MEMRA__ADM_QUARANTINED MEMRA_ADMISSION_QUARANTINED
#define MEMRA__ADM_EXEMPT MEMRA_ADMISSION_EXEMPT
#define MEMRA__ADM_OFF MEMRA_ADMISSION_OFF

/* Counters of one (device, op, module). Cells are created once and never
 * freed before the runtime closes, so snapshots can point at them. */
typedef struct memra__ledger_cell {
    struct memra__ledger_cell *next;
    memra_op op;
    char module[64];
    atomic_uint_fast64_t entries, hits, errors;
    char reasons[MEMRA__MAX_REASONS][96];
    atomic_uint_fast64_t reason_count[MEMRA__MAX_REASONS];
    int n_reasons; /* guarded by the device's ledger lock */
} memra__ledger_cell;

/* One entry of the tuning table (core/routing/tune_table.c), guarded by reg_lock. */
typedef struct memra__tune_ent {
    char key[200];       /* the device key: name, cc, SMs, driver, memra version */
    int dev;             /* index of this runtime's device with that key, -1 when none */
    memra_op op;
    int32_t n, k, mc;    /* the shape class */
    char module[49], modver[64], variant[33];
    double us, base_us;
    int win;             /* 1: routes the class; 0: "no win", the scores route it */
    double gain, gain_lo, gain_hi, floor; /* the claim: baseline / winner, its 95% interval, the floor */
    int reps;
    char state[200];     /* "active" or why ignored (set at each publish) */
    int logged;          /* the ignore reason was logged */
    int from_file;
} memra__tune_ent;

/* A tuned class resolved against one snapshot's lanes. */
typedef struct memra__tuned {
    int32_t n, k, mc;
    int lane;    /* index into lanes[op]; -1: a "no win" class, the scores route it */
    int variant; /* -1 or a variant index */
} memra__tuned;

typedef struct memra__lane {
    memra__modrec *mod;
    void *ctx;
    int score;
    memra__ledger_cell *cell;
    int variant; /* memra_call.variant: -1 the module's choice, else an index into desc.variants(caps, op) */
} memra__lane;

/* An immutable routing of one device: for each op, the lanes in dispatch
 * order. Published by pointer swap; readers hold a reference. */
typedef struct memra__snapshot {
    atomic_int refs;
    uint64_t generation;
    int n_mods;
    memra__modrec **mods; /* each holds a module reference */
    int n_lanes[MEMRA_OP_COUNT_];
    memra__lane *lanes[MEMRA_OP_COUNT_];
    int n_tuned[MEMRA_OP_COUNT_];
    memra__tuned *tuned[MEMRA_OP_COUNT_];
    memra__lane shadow[MEMRA_OP_COUNT_]; /* .mod NULL when no shadow; the module is in mods (referenced) */
} memra__snapshot;

/* Scratch (core/device/scratch.c): a named block of an arena. */
typedef struct memra__scratch_block {
    char key[96]; /* "module/name" */
    memra_dptr ptr;
    size_t size;
    int async; /* from cuMemAllocAsync: freed with cuMemFreeAsync */
    int zeroed; /* zero-filled (outside a capture) since it was allocated; its owner keeps it */
} memra__scratch_block;

/* An arena: held by one call at a time; `stream` is the stream of its last
 * (or current) use and `event` was recorded on it after that use. */
typedef struct memra__arena {
    struct memra__arena *next;
    int in_use;
    int pinned; /* belongs to `stream` for good (reserved, or used in a capture) */
    int captured; /* a graph may hold its blocks' addresses: none is freed before memra_close */
    memra_stream_t stream;
    CUevent event;
    int recorded;
    int n_blocks, n_retired;
    memra__scratch_block blocks[MEMRA__ARENA_BLOCKS];
    memra__scratch_block retired[MEMRA__ARENA_BLOCKS]; /* freed once the event completes */
} memra__arena;

typedef struct memra__loaded_image {
    struct memra__loaded_image *next;
    const void *key; /* image bytes pointer (JIT images are stable) */
    size_t size;
    uint64_t hash;   /* FNV-1a of the bytes: an address can be reused by a later library */
    CUmodule module;
} memra__loaded_image;

/* A shadow of the incumbent for one op on one device (core/observe/shadow.c). The
 * record lives as long as the device; `active` and the names change under
 * the runtime's reg_lock, the counters are atomic, the times under `lock`. */
typedef struct memra__shadow {
    pthread_mutex_t lock;
    atomic_int active;          /* 1 while sampling */
    char module[49];
    char variant[33];
    atomic_int rate;
    int need, margin_pct, auto_promote;
    atomic_uint_fast64_t calls, samples, agreements, mismatches, skipped;
    atomic_int busy;            /* a shadow run is in flight: the next sample is skipped */
    /* the device's first routing generation whose snapshot carries this shadow's lane (UINT64_MAX until
     * memra_shadow_start has published it): a call on an older snapshot, whose shadow lane may be the
     * previous shadow's module, is never a sample of this one */
    atomic_uint_fast64_t gen0;
    double inc_us, sh_us;       /* sums over agreeing samples */
    int state;                  /* memra_shadow_state */
    char incumbent[49];
    char reason[300];
    int corrupt;                /* MEMRA_SHADOW_TEST_CORRUPT: the test hook perturbs the shadow's result */
    /* The GPU side-stream path (core/observe/shadow.c): everything below is guarded by
     * gpu_lock, taken by trylock on the live path (a sampled call that finds
     * it held skips) and by lock in start / stop / unload / close. */
    pthread_mutex_t gpu_lock;
    int gpu_ready;              /* stream and events made */
    CUstream stream;            /* the shadow's own stream (non-blocking) */
    CUevent ev_inc0, ev_inc1;   /* around the incumbent, on the caller's stream */
    CUevent ev_in;              /* after the copies, on the caller's stream: the shadow waits on it */
    CUevent ev_sh0, ev_sh1;     /* around the shadow, on its stream */
    CUevent ev_done;            /* after the read-back copies, on its stream: polled by cuEventQuery */
    memra_dptr x_copy, y_copy, y_sh; /* the activation and incumbent rows copied, the shadow's output */
    size_t x_cap, y_copy_cap, y_sh_cap;
    float *h_inc, *h_sh;        /* pinned host rows (cuMemAllocHost), read after ev_done */
    size_t h_cap;               /* floats in each */
    int pending;                /* work is queued on the shadow's stream up to ev_done: polled at a later sample */
    int p_judge;                /* ... and it is a complete run to judge (else only waited for) */
    int broken;                 /* a queued run could not be closed by ev_done: no more samples until freed */
    memra_dptr retired_d[8];    /* buffers outgrown inside an op: freed at start / stop / unload / close */
    void *retired_h[4];
    int n_retired_d, n_retired_h;
    int p_m, p_n, p_k, p_rows;  /* its shape and the rows read back */
    int p_row[8];
} memra__shadow;

/* The observer of live calls: dispatch calls it around a call whose snapshot
 * has a shadow lane for the op (core/observe/shadow.c provides it; memra_open
 * sets rt->observer, so routing (core/routing/dispatch.c) never names the
 * room above it). begin decides
 * whether this call is sampled (returns 1 and starts the incumbent's clock);
 * end runs the shadow and judges it. */
typedef struct memra__dispatch_observer {
    int (*begin)(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args, double *t0);
    void (*end)(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args, memra_status st,
                double t0);
} memra__dispatch_observer;

struct memra_device {
    memra_device_caps caps; /* first: modules get &caps, the core maps it back */
    struct memra_runtime *rt;
    int index;
    const memra__profile *profile;
    char name[128];
    char jit_target[16];
    char label[48];          /* "cuda:0 sm90" or "host" */
    CUcontext ctx;
    CUdevice cudev;
    int is_host;   /* host memory and host ops: the host device, or a test stand-in (MEMRA_TEST_FAKE_DEVICES) */
    int forced;    /* the profile was forced by MEMRA_ARCH */
    int clock_khz, mem_clock_khz;

    pthread_mutex_t snap_lock;  /* guards `current` swap and reference taking */
    memra__snapshot *current;

    pthread_mutex_t ledger_lock;
    memra__ledger_cell *cells;

    pthread_mutex_t scratch_lock; /* the arena list and each arena's in_use/pinned/stream */
    memra__arena *arenas;
    int n_arenas;
    /* optional driver entry points (NULL when the driver lacks them) */
    CUresult (*cu_event_query)(CUevent e);
    int scratch_zero_new; /* MEMRA_TEST_SCRATCH_ZERO=1: every new scratch block zero-filled */
    CUresult (*cu_alloc_async)(CUdeviceptr *p, size_t bytes, CUstream s);
    CUresult (*cu_free_async)(CUdeviceptr p, CUstream s);
    /* resolved by the first GPU memra_shadow_start (NULL before, or when the driver lacks them) */
    CUresult (*cu_stream_wait_event)(CUstream s, CUevent e, unsigned flags);
    CUresult (*cu_memcpy_dtod_async)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
    CUresult (*cu_mem_alloc_host)(void **p, size_t bytes);
    CUresult (*cu_mem_free_host)(void *p);
    CUresult (*cu_memcpy_2d_async)(const memra__cu_memcpy2d *p, CUstream s); /* optional: NULL, row by row */

    pthread_mutex_t image_lock;
    memra__loaded_image *images;

    memra__shadow shadow[MEMRA_OP_COUNT_];

    atomic_uint_fast64_t f16_used; /* bytes of f16 mirrors resident */
    atomic_uint_fast64_t f16_budget_mb; /* MEMRA_F16_BUDGET_MB, derived at open, or memra_device_f16_budget_set */
    atomic_int_fast64_t floor_f16_m;    /* memra_device_floor_f16_m_set's value: N, MEMRA_FLOOR_F16_M_AUTO (-2), or -1 unset (MEMRA_FLOOR_F16_M's) */
    atomic_int w16;                     /* memra_device_w16_set's value: 0, 1, or -1 unset (MEMRA_W16's) */
    _Atomic(const char *) f16_budget_source; /* "derived", "profile", "env", "option", "api" (static text) */
    uint64_t free_at_open;                   /* cuMemGetInfo's free bytes at open (0: host, or unknown) */
};

struct memra_runtime {
    memra_options opts;
    memra__config cfg;  /* parsed once at memra_open */
    char *module_path;  /* effective search path (copied) */
    char *prefer;       /* "op=module,..." */
    char *disable;      /* "op|module,..." */
    int allow_unsafe;
    memra__driver *drv; /* NULL when no driver */
    char driver_why[512];
    memra__jit *jit;    /* NULL when NVRTC is absent */
    char jit_why[512];
    int n_devices;
    memra_device *devices[MEMRA__MAX_DEVICES];
    int n_unserved;                                /* CUDA devices present but not used, with why */
    char unserved[MEMRA__MAX_DEVICES][320];
    pthread_mutex_t reg_lock; /* module list, loads, unloads, snapshot builds */
    int n_mods, cap_mods;
    memra__modrec **mods;
    struct memra__name *names; /* interned module names (reg_lock), freed at close */
    uint64_t generation;
    const memra__dispatch_observer *observer; /* shadow A/B, set by memra_open (dispatch calls it) */
    /* the tuning table (core/routing/tune_table.c; reg_lock) */
    memra__tune_ent *tune;
    int n_tune, cap_tune;
    int tune_on;               /* MEMRA_TUNE */
    char tune_path[4096];      /* "" when there is no usable location */
    char tune_status[512];
};

#endif
