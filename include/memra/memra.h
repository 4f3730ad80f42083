/* memra: one build of an LLM engine's prefill matrix paths on any NVIDIA GPU
 * (sm_90, sm_120, other CUDA) or on none.
 *
 *   memra_runtime *rt;
 *   if (memra_open(NULL, &rt) != MEMRA_STATUS_OK) { puts(memra_last_error()); return 1; }
 *   memra_device *dev = memra_device_get(rt, 0);          // best device first
 *   memra_weight_desc wd = { .struct_size = sizeof wd, .format = MEMRA_FORMAT_Q8_0,
 *                            .out_f = 1024, .in_f = 2048, .data = bytes, .size = nbytes };
 *   memra_weight *w;  memra_weight_create(rt, &wd, &w);
 *   memra_weight_prepare(w, dev);                          // builds operands once
 *   memra_buffer *x, *y;
 *   memra_buffer_create(dev, m * 2048 * 4, &x);  memra_buffer_create(dev, m * 1024 * 4, &y);
 *   memra_buffer_write(x, 0, host_x, m * 2048 * 4);
 *   memra_matmul(dev, w, memra_buffer_ptr(x), m, memra_buffer_ptr(y), NULL);
 *   memra_buffer_read(y, 0, host_y, m * 1024 * 4);         // synchronises
 *   ...
 *   memra_weight_destroy(w); memra_close(rt);
 *
 * Ownership: every *_create/open has a matching *_destroy/close that accepts
 * NULL. Out parameters are written only on success.
 *
 * Threads and streams. Any number of threads may call memra_matmul,
 * memra_matmul_ex and memra_module_call on one device at once, on one stream
 * or on many, with the same or different weights; each result is
 * bit-identical to the same call made alone (every lane of the built-in
 * modules is deterministic for a given device, shape and routing). What the
 * caller still owns: the buffers (a call reads x and writes y on its stream;
 * two calls writing one y, or a y read before its stream reached it, are the
 * caller's race), the streams (memra never synchronises one inside an op),
 * and the lifetime of objects (a weight, buffer or runtime is not destroyed
 * while a call that uses it runs or is queued). Routing (memra_routing_*),
 * module load/unload, memra_weight_prepare/query and the ledger are safe from
 * any thread, concurrently with calls: a call runs all its steps on the
 * routing snapshot it took first. Scratch follows the stream: work queued on
 * one stream never shares scratch with work on another before the first has
 * completed on the device; during CUDA graph capture nothing is allocated (see
 * memra_stream_reserve). memra_open/memra_close, memra_buffer_write/read and
 * memra_weight_destroy are not ops: they may wait for the device.
 *
 * Configuration: every MEMRA_* environment variable is read once, at
 * memra_open (see memra_options.settings and memra_config_*), never later.
 */
#ifndef MEMRA_MEMRA_H
#define MEMRA_MEMRA_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"
#include "memra/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MEMRA_VERSION_MAJOR 0
#define MEMRA_VERSION_MINOR 1
#define MEMRA_VERSION_PATCH 0
#define MEMRA_VERSION_STRING "0.1.0"

/* Library version "MAJOR.MINOR.PATCH" of the linked library. */
const char *memra_version(void);

typedef struct memra_runtime memra_runtime;
typedef struct memra_device memra_device;
typedef struct memra_buffer memra_buffer;
typedef struct memra_weight memra_weight;

/* ---- runtime -------------------------------------------------------------- */

/* Log levels (MEMRA_LOG=error|warn|info|debug; default warn): a message is
 * delivered when its level is at most the configured one. ERROR: an operation
 * failed; WARN: a setting or module was ignored or refused, a fallback was
 * taken; INFO: one-time facts (variant chosen, library opened); DEBUG: per
 * call detail (declines, errors as they are recorded). The values are those of
 * MEMRA_LOG_ERROR .. MEMRA_LOG_DEBUG in module.h (0 .. 3). */
/* A log callback: `component` is "core", "config", "jit", a module's name...;
 * `message` is one line without its newline, valid during the call. It may be
 * called from any thread, concurrently; it must not call memra_open/close. */
typedef void (*memra_log_fn)(int level, const char *component, const char *message, void *user);

typedef struct memra_options {
    uint32_t struct_size;      /* sizeof(memra_options) */
    const char *module_path;   /* colon list searched before the install's folder; NULL: MEMRA_MODULE_PATH */
    const char *force_arch;    /* profile for every CUDA device ("sm90"), or per CUDA ordinal ("0:sm90,1:cuda"); NULL: MEMRA_ARCH */
    int no_cuda;               /* 1: do not even try the driver (host device only) */
    int no_default_modules;    /* 1: skip the install's module folder */
    int allow_unsafe_modules;  /* 1: load from folders/files others can write; also MEMRA_ALLOW_UNSAFE_MODULES=1 */
    const char *prefer;        /* "op=module,..."; NULL: MEMRA_PREFER */
    const char *disable;       /* "op|module,..."; NULL: MEMRA_DISABLE */
    /* ---- appended; read only when struct_size covers them ---- */
    memra_log_fn log_fn;       /* NULL: "memra[level] component: message" lines on stderr */
    void *log_user;            /* passed to log_fn */
    /* Any knob by its variable name, "MEMRA_NAME=value", NULL-terminated; a
     * setting here wins over the environment (source "option"). */
    const char *const *settings;
    int ignore_environment;    /* 1: read no MEMRA_* variable (settings and defaults only) */
} memra_options;

/* Parse the configuration (options, then every MEMRA_* variable, once),
 * initialise the driver if present, enumerate devices (CUDA_VISIBLE_DEVICES
 * applies), give each a profile, load modules. A missing or broken driver is
 * not an error: the host device is always present, and memra_driver_status()
 * says why no GPU was used. opts may be NULL (defaults + environment).
 * Returns OK, OUT_OF_MEMORY, INVALID_ARGUMENT (bad option text, or a knob with
 * a bad value: memra_last_error names the variable and the value).
 * The log level and callback are process-wide: the last memra_open sets them,
 * its memra_close restores stderr at warn. */
memra_status memra_open(const memra_options *opts, memra_runtime **out_rt);
void memra_close(memra_runtime *rt);

/* Why the CUDA driver is or is not used: "ok", or a sentence. Owned by rt. */
const char *memra_driver_status(const memra_runtime *rt);
/* cuDriverGetVersion, 0 when no driver. */
int memra_driver_version(const memra_runtime *rt);

/* ---- the effective configuration --------------------------------------------- */

typedef struct memra_config_entry {
    const char *name;   /* the variable, "MEMRA_LOG" */
    const char *value;  /* effective text (the default's description when unset) */
    const char *source; /* "default", "environment" or "option" */
    const char *owner;  /* "core", "jit", "mmq modules", ... ("?" for an unknown MEMRA_* variable) */
    const char *help;
    int known;          /* 0: a MEMRA_* variable no knob of memra knows (warned at open) */
} memra_config_entry;

/* Every knob, then any unknown MEMRA_* variable seen. Strings owned by rt. */
int memra_config_count(const memra_runtime *rt);
memra_status memra_config_entry_get(const memra_runtime *rt, int index, memra_config_entry *out);
/* The effective value of `name` when set (option or environment), else NULL. */
const char *memra_config_value(const memra_runtime *rt, const char *name);
/* Change a module knob (a row whose owner is a module: MEMRA_MMQ_BM,
 * MEMRA_FP8_QUANT, ...) after memra_open; NULL value: back to its default.
 * Modules read knobs at init, so the value applies to modules initialised
 * afterwards (memra_module_load, e.g. after memra_module_unload); calls of a
 * module already running keep what it read. Knobs of the core and the JIT are
 * read once at memra_open: NOT_SUPPORTED (the f16 budget has
 * memra_device_f16_budget_set). NOT_FOUND for an unknown name,
 * INVALID_ARGUMENT for a bad value. Thread-safe. */
memra_status memra_config_set(memra_runtime *rt, const char *name, const char *value);
/* Warnings of the configuration (unknown variables, prefer/disable naming a
 * module that is not loaded), in order; strings owned by rt. */
int memra_config_warning_count(const memra_runtime *rt);
const char *memra_config_warning(const memra_runtime *rt, int index);

/* ---- devices -------------------------------------------------------------- */

/* Devices, GPUs first in ordinal order, the host device last. */
int memra_device_count(const memra_runtime *rt);
memra_device *memra_device_get(const memra_runtime *rt, int index);
/* CUDA devices the driver lists but memra does not serve (cc < 8.0), each as
 * one line "cuda:N NAME: cc X.Y, G GiB: present, not served: why"; owned by
 * rt, NULL past the end. They are not memra devices (no index, no routing).
 * Thread-safe (fixed at memra_open). */
int memra_device_unserved_count(const memra_runtime *rt);
const char *memra_device_unserved(const memra_runtime *rt, int index);
/* The host device (always present). */
memra_device *memra_device_host(const memra_runtime *rt);
const memra_device_caps *memra_device_caps_get(const memra_device *dev);
/* Comma-separated names of MEMRA_CAP_* bits ("wgmma,lt-fp8-blk128,...") into buf
 * (len bytes, NUL-terminated, truncated at a name). len 0: nothing written; a
 * NULL buf with len > 0 writes nothing and sets INVALID_ARGUMENT in
 * memra_last_error(). */
void memra_caps_describe(uint64_t caps, char *buf, size_t len);
/* Wait for all work on the device's streams. */
memra_status memra_device_synchronize(memra_device *dev);
/* 1 when the device's profile was forced (MEMRA_ARCH, plain or per ordinal),
 * 0 when it follows the device's compute capability (and for the host device
 * or NULL). Thread-safe. */
int memra_device_profile_forced(const memra_device *dev);

/* The f16 mirror budget of dev in MB. An explicit setting wins:
 * memra_device_f16_budget_set (source "api"), else MEMRA_F16_BUDGET_MB
 * ("env" from the environment, "option" from memra_options.settings); else,
 * on a GPU, derived from its memory at open ("derived"): (free MB - 4096) / 2,
 * 0 when less than 4 GiB is free; on the host device (or when the driver
 * cannot say) the profile's ("profile"). Setting it applies to weights
 * prepared afterwards (mirrors already built stay). Thread-safe.
 * INVALID_ARGUMENT for a NULL device. */
uint64_t memra_device_f16_budget_get(const memra_device *dev);
memra_status memra_device_f16_budget_set(memra_device *dev, uint64_t mb);
/* Where the budget came from: "derived", "profile", "env", "option", "api"
 * (static text; NULL for a NULL device). Thread-safe. */
const char *memra_device_f16_budget_source(const memra_device *dev);
/* The route from the integer floor to dequant_kr_f16 + gemm_f16 on dev
 * (memra_weight_floor_f16_m): from m tokens on every such weight, 0 never,
 * MEMRA_FLOOR_F16_M_AUTO the device's profile's measured crossover (per
 * record kind), any other negative value back to MEMRA_FLOOR_F16_M (unset:
 * never). Applies to calls that start afterwards; a tool that must time or
 * judge the floor itself sets 0 for that while. Lowering it below the m of
 * a memra_stream_reserve makes captured calls there need scratch the
 * reserve did not size (NOT_SUPPORTED): reserve again. Thread-safe.
 * INVALID_ARGUMENT for a NULL device or m above INT32_MAX. */
#define MEMRA_FLOOR_F16_M_AUTO (-2)
memra_status memra_device_floor_f16_m_set(memra_device *dev, int64_t m);
/* Whether weights prepared on dev from now on that get no f16 mirror take the W16 operand and gemm_w16
 * (the f16 mirror's numbers from the GGUF's codes, where a module routes gemm_w16) in place of the MMQ
 * floor (expert weights too, whatever their expert count): 1 yes, 0 no (the floor), negative back to
 * MEMRA_W16's rule (auto: on a GPU; 1: the host device too). Under MEMRA_W16=0 (the default, which loads
 * no w16 kernels) it has no effect. A weight keeps what its prepare built; a tool
 * that times both sets this around each weight's prepare. Thread-safe. INVALID_ARGUMENT for a NULL device. */
memra_status memra_device_w16_set(memra_device *dev, int on);
/* Bytes of f16 mirrors resident on dev now (counted against the budget). */
uint64_t memra_device_f16_used(const memra_device *dev);

/* Reserve scratch for CUDA graph capture on `stream`: the stream gets its own
 * scratch arena (never handed to another stream from then on), sized by
 * running each weight on the stream at m = m_max and, once for each kind of
 * weight (format, shape, operands: a model's layers share a few), at every m
 * up to 1024, at steps of 1/32 of m above and at every power of two below
 * m_max (where lanes switch plans; zero inputs, a temporary output), then
 * sizing every other m above 1024 without running it where the lane's module
 * can (memra_call.sizing: memra's MMQ floor does), then waiting for the
 * stream. Afterwards calls captured on that stream with those weights and
 * m <= m_max allocate nothing (above m = 1024, on a lane that cannot size a
 * call, a plan that at an m between two steps wanted more fails as below,
 * never silently). A call captured on a stream without enough reserved
 * scratch fails with NOT_SUPPORTED naming this function, unless the scratch
 * only makes it faster: the K-quant floor's prepared images (the mmq module,
 * Q4_K / Q5_K from 1024 tokens on cc 9.x) are then skipped, with the same
 * results and one message at INFO a module. Not an op: it
 * allocates and waits, so call it before the capture begins. The arena is
 * the stream's and its graphs': replay them on that stream (or ordered with
 * it). Returns OK, INVALID_ARGUMENT, NOT_SUPPORTED (during capture), the
 * calls' errors. On the host device it only checks its arguments. */
memra_status memra_stream_reserve(memra_device *dev, memra_stream_t stream, memra_weight *const *weights, int n_weights,
                                  int32_t m_max);

/* ---- modules and routing ---------------------------------------------------- */

typedef struct memra_module_info {
    const char *name;    /* module name, or the file name when refused early */
    const char *version; /* "" when unknown */
    const char *path;    /* file, or "(built-in)" */
    int loaded;          /* 1 = admitted on at least one device */
    const char *reason;  /* why refused, "" when loaded */
} memra_module_info;

/* Every module the registry saw, loaded or refused, in discovery order.
 * Pointers stay valid until memra_close or the next module load/unload. */
int memra_module_count(const memra_runtime *rt);
memra_status memra_module_info_get(const memra_runtime *rt, int index, memra_module_info *out);

/* Why module `index` is not admitted on dev ("score 0", "init failed on ..."),
 * NULL when it is admitted there or was refused before scoring. */
const char *memra_module_device_note(const memra_runtime *rt, int index, const memra_device *dev);

/* The admission self-check of a module (docs/ARCHITECTURE.md, "Admission").
 * A module loaded at run time (memra_module_load, MEMRA_MODULE_PATH and the
 * install's folder at memra_open; MEMRA_ADMISSION=all|hot|off) runs each op it
 * provides on each device where it was admitted, at small shapes with fresh
 * random inputs, against the host module within the op's band, before any
 * routing snapshot publishes it. A mismatch, an error status or a check past
 * MEMRA_ADMISSION_TIMEOUT_MS quarantines it: never served; memra_module_info's
 * reason starts with "quarantined by the admission self-check:". */
typedef enum memra_admission_state {
    MEMRA_ADMISSION_NOT_RUN = 0,     /* refused before the check, or loaded before it existed */
    MEMRA_ADMISSION_PASSED = 1,
    MEMRA_ADMISSION_QUARANTINED = 2,
    MEMRA_ADMISSION_EXEMPT = 3,      /* the built-in host module: the reference */
    MEMRA_ADMISSION_OFF = 4,         /* MEMRA_ADMISSION turned it off for this load */
} memra_admission_state;

typedef struct memra_admission_info {
    uint32_t struct_size;          /* IN: sizeof(memra_admission_info) */
    memra_admission_state state;
    const char *detail;            /* "N cases passed in X ms", or why quarantined ("" when not run) */
    double ms;                     /* wall time of the check, all devices */
    int cases;                     /* cases run (a case: one op at one shape on one device) */
} memra_admission_info;

/* The admission record of module `index` (memra_module_count order). Strings
 * live until the next load/unload of that module or memra_close. Thread-safe.
 * OK; INVALID_ARGUMENT (NULL, index out of range, struct_size too small). */
memra_status memra_module_admission_get(const memra_runtime *rt, int index, memra_admission_info *out);

/* Load one more module file into the running process (hot-add). The same
 * safety rules apply as for the search path (docs/ARCHITECTURE.md, "Trust"),
 * the trial load included (MEMRA_MODULE_TRIAL=0 turns it off). Publishes new
 * routing snapshots; calls in flight finish on the old ones. A later load of
 * the same path replaces the record of a refused or unloaded one.
 * OK; INVALID_ARGUMENT (NULL, relative, longer than PATH_MAX); NOT_FOUND;
 * MODULE_ERROR (refused: memra_last_error() has the reason, e.g. "crashed
 * in score: SIGSEGV"); OUT_OF_MEMORY. */
memra_status memra_module_load(memra_runtime *rt, const char *path);
/* Withdraw a module by name: new snapshots without it are published, and the
 * library is closed when the last snapshot referencing it is released. */
memra_status memra_module_unload(memra_runtime *rt, const char *name);
/* Set preferences ("op=module,...") and disables ("op|module,..."); either may
 * be NULL to keep. Publishes new snapshots. */
memra_status memra_routing_configure(memra_runtime *rt, const char *prefer, const char *disable);

/* The modules serving `op` on `dev`, in dispatch order. Writes up to `cap`
 * names (valid until memra_close, also after the module is unloaded) and
 * returns how many there are. names may be NULL only with cap 0 (a count
 * query); NULL names with cap > 0, or cap < 0, return -1 with
 * INVALID_ARGUMENT in memra_last_error(). 0 when dev is NULL or op unknown. */
int memra_routing_get(memra_device *dev, memra_op op, const char **names, int cap);
/* Score of module `name` on `dev`, 0 when it is not admitted there. */
int memra_module_score(memra_device *dev, const char *name);

const char *memra_op_name(memra_op op);
/* MEMRA_OP_COUNT_ when no op has that name. */
memra_op memra_op_from_name(const char *name);

/* Arguments of any op, for calls that name the op at run time. */
typedef struct memra_op_args {
    uint32_t struct_size;
    memra_gemm_args gemm;      /* gemm_f16, gemm_fp8, gemm_fp8_blk, gemm_q8_0, gemm_q8_0r, gemm_bf16, accprobe */
    memra_accprobe_arm arm;    /* accprobe */
    memra_format format;       /* dequant_f16, dequant_kr_f16 */
    memra_dptr src;            /* cvt_f16, quant_q8_1 (x), dequant_f16, fp8_blk_to_q8_0 (w), fp8_nan_count (w), scale (y),
                                  repack_q8_0 (Q8_0 weight), dequant_kr_f16 (K records) */
    memra_dptr aux;            /* fp8_blk_to_q8_0: grid */
    memra_dptr dst;            /* cvt_f16, quant_q8_1, dequant_f16, fp8_blk_to_q8_0, fp8_nan_count (u64), repack_q8_0,
                                  dequant_kr_f16 */
    int64_t rows, cols;        /* quant_q8_1 (m, k), dequant_f16, fp8_blk_to_q8_0, repack_q8_0, dequant_kr_f16 */
    int64_t n;                 /* cvt_f16, scale: elements; fp8_nan_count: bytes */
    float s;                   /* scale */
    memra_stream_t stream;
    const char *decline_reason; /* OUT */
    /* ---- appended; read only when struct_size covers it ---- */
    const char *variant;        /* memra_module_call: a variant name of the module for op (NULL: its default) */
    memra_gemm_experts_args experts; /* gemm_experts (with gemm); read only when struct_size covers it */
} memra_op_args;

/* Run one op on a named module, bypassing the routing (checks, benchmarks,
 * races between two modules). Counted in the ledger like a dispatch.
 * args->struct_size must be sizeof(memra_op_args) (smaller: INVALID_ARGUMENT).
 * NOT_FOUND when the module is not admitted on dev or lacks the op;
 * DECLINED with args->decline_reason set when the lane declines. */
memra_status memra_module_call(memra_device *dev, const char *module, memra_op op, memra_op_args *args);
/* The variants module `name` lists for op on dev (memra_variant in
 * memra/module.h): writes up to cap names and knob texts (either array may
 * be NULL; valid while the module stays loaded) and returns how many there
 * are; 0 when it has none, -1 (NOT_FOUND in memra_last_error) when the
 * module is not admitted on dev. Thread-safe. */
int memra_module_variants(memra_device *dev, const char *name, memra_op op, const char **names, const char **knobs,
                          int cap);
/* 1 when module `name` is admitted on dev and provides op. */
int memra_module_provides(memra_device *dev, const char *name, memra_op op);

/* ---- measured routing (memra tune; core/tune.c) ------------------------------ */

/* Shape classes. A GEMM call (op, m, n, k) belongs to the class (op, n, k,
 * memra_tune_m_class(m)): m rounded up to a power of two (1, 2, 4, ... 2^20).
 * Routing looks up the call's class in the tuning table of the device: an
 * exact entry is taken; else the entry of the same (op, n, k) with the
 * nearest m class (by log2 distance, the smaller on a tie); else, or when a
 * preference (MEMRA_PREFER / memra_routing_configure) names a module for the
 * op, the scores. A tuned lane that declines falls through to the score order,
 * so no shape is ever left with nothing. */
int32_t memra_tune_m_class(int32_t m);

/* One arm of a race: a module, or one of its variants. */
typedef struct memra_tune_arm {
    char module[49];
    char variant[33];   /* "" for the module's default */
    double median_us;   /* median of the timed calls; 0 when excluded */
    uint64_t hits;      /* ledger hits the race added for this module (proof that it ran) */
    int ok;             /* 1: ran and matched the host within the op's band */
    char verdict[200];  /* "ok", or why excluded ("declined: ...", "wrong: ...", "error: ...") */
} memra_tune_arm;

#define MEMRA_TUNE_MAX_ARMS 32
typedef struct memra_tune_result {
    uint32_t struct_size;  /* IN: sizeof(memra_tune_result) */
    int n_arms;
    memra_tune_arm arms[MEMRA_TUNE_MAX_ARMS];
    int winner;            /* index of the fastest ok arm, -1 when none */
    int baseline;          /* the arm the scores route to (first lane, default variant), -1 when it is excluded */
    /* ---- appended: filled when struct_size covers them ---- */
    double q1_us[MEMRA_TUNE_MAX_ARMS]; /* the first and third quartile of each arm's timed calls (its spread) */
    double q3_us[MEMRA_TUNE_MAX_ARMS];
    /* ---- appended (issue 29): the protocol's knobs (IN) and the verdict (OUT) ---- */
    double budget_ms;      /* IN: stop timing once this much wall time is spent (after min_reps); 0 = none */
    double target_pct;     /* IN: stop once the verdict's intervals are this narrow (half-width, %); 0 = 1% */
    int min_reps;          /* IN: repetitions before any stop (at least 3; 0 = 5) */
    double *rep_us;        /* IN, optional: caller's buffer of reps x (MEMRA_TUNE_MAX_ARMS + 1) doubles: */
    int rep_cap;           /*   rep_us[r * (MAX_ARMS + 1) + a] = arm a's time at repetition r, column
                            *   MAX_ARMS the baseline's twin; rep_cap = rows it holds */
    int reps_done;         /* repetitions timed (<= reps) */
    int batch;             /* calls per timed sample (back to back, after one untimed warm-up call) */
    char stop[64];         /* why timing stopped: "narrow", "budget", "reps" */
    double gain[MEMRA_TUNE_MAX_ARMS];    /* baseline time / arm time: geomean of the paired ratios */
    double gain_lo[MEMRA_TUNE_MAX_ARMS]; /* its 95% bootstrap interval (0 when not computed) */
    double gain_hi[MEMRA_TUNE_MAX_ARMS];
    double self_gain, self_lo, self_hi;  /* the baseline raced against itself (its twin) */
    double noise_floor;    /* the gain a win must reach: max(3%, the self-race interval's widest miss of 1) */
    int chosen;            /* the arm whose win is real (interval above 1, gain >= 1 + floor), -1 = no win */
    double race_ms, setup_ms; /* wall time timing, and making inputs and the host reference */
} memra_tune_result;

/* Race every admitted module providing `op` on dev, and every variant each
 * lists, at m x n x k (a GEMM op): fresh random inputs, each arm's first call
 * checked against the host module within the op's band before any of its
 * times count; then up to `reps` repetitions, each timing every ok arm and a
 * twin of the baseline in an order rotated every repetition, each sample one
 * untimed warm-up call of that arm (its operands in L2 / the CPU caches, as
 * for every arm) then `batch` calls back to back, timed together (CUDA
 * events on a GPU, the monotonic clock on the host); medians; the gain of
 * each arm over the baseline as the geomean of the paired per-repetition
 * ratios with its 95% bootstrap interval (seeded: deterministic for the same
 * times); the noise floor from the baseline's race against its twin; `chosen`
 * the best arm whose interval lies above 1 and whose gain reaches the floor.
 * Timing stops early (after min_reps) when every interval that decides is
 * narrower than target_pct, or when budget_ms is spent (`stop` says which).
 * Fields past the caller's struct_size are neither read nor written. Not
 * thread-safe against concurrent loads of the same module (the race holds its
 * routing snapshot). OK; INVALID_ARGUMENT; NOT_SUPPORTED (not a GEMM op);
 * OUT_OF_MEMORY; a device error. */
memra_status memra_tune_race(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, int reps,
                             memra_tune_result *out);
/* Put the winner of class (op, n, k, m class of m) into dev's tuning table
 * (replacing that class's entry) and publish new routing. `variant` NULL or
 * "" = the default. OK; INVALID_ARGUMENT; NOT_FOUND (module or variant not
 * admitted on dev). */
memra_status memra_tune_record(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, const char *module,
                               const char *variant, double median_us, double baseline_us);
/* What a race found for one class, for the table: a win (an entry routing
 * uses) or "no win" (recorded so the class, and its neighbours' lookups, keep
 * the scores' pick), with the claim's interval and the floor it was held to. */
typedef struct memra_tune_claim {
    uint32_t struct_size;   /* IN: sizeof(memra_tune_claim) */
    int win;                /* 1: route the class to module/variant; 0: no win, the scores route it */
    const char *module, *variant; /* the winner (win) or the best arm seen (no win); variant NULL/"" = default */
    double median_us, baseline_us;
    double gain, gain_lo, gain_hi; /* baseline / arm, and its 95% interval */
    double noise_floor;     /* e.g. 0.03 */
    int reps;               /* repetitions behind the interval */
} memra_tune_claim;
/* memra_tune_record with the claim (memra_tune_record is this with win = 1,
 * gain = baseline_us / median_us and a zero-width interval). Same statuses. */
memra_status memra_tune_record_claim(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k,
                                     const memra_tune_claim *claim);
/* The tuner's statistic, for any paired timings: the gain of b over a from n
 * repetitions (ratio a[r] / b[r]: > 1 means b is faster), the 20% trimmed
 * geometric mean of the ratios, and its 95% percentile-bootstrap interval
 * over the repetitions (`resamples`, 0 = 2000; a fixed seed: the same times
 * give the same interval). Returns 1, or 0 (outputs untouched) when n < 2 or
 * a time is not positive and finite. Thread-safe; no runtime needed. */
int memra_tune_gain(const double *a, const double *b, int n, int resamples, double *gain, double *lo, double *hi);
/* Route by the table (on = 1, as MEMRA_TUNE unset) or by the scores alone
 * (on = 0, as MEMRA_TUNE=0) from now on, on every device: publishes new
 * routing (calls in flight finish on the old). For `memra tune --verify`,
 * which times both routings in one process. OK; INVALID_ARGUMENT. */
memra_status memra_tune_use(memra_runtime *rt, int on);
/* Write the table to the tuning file (MEMRA_TUNE_FILE, else
 * <cache root>/tune/tuning.memra; the root is the JIT cache's), atomically
 * (temporary file, fsync, rename) in an owner-only folder; sections of other
 * devices read from the file are kept. OK; IO_ERROR (memra_last_error names
 * the path and the step). */
memra_status memra_tune_save(memra_runtime *rt);
/* Forget every entry (memory and the file); publishes the score routing. */
memra_status memra_tune_clear(memra_runtime *rt);

typedef struct memra_tune_entry {
    uint32_t struct_size;     /* IN: sizeof(memra_tune_entry) */
    int device;               /* memra_device_get index, -1 for a section of another machine */
    const char *device_key;   /* "NVIDIA H200 cc90 driver 13000 memra 0.1.0" */
    memra_op op;
    int32_t n, k, m_class;
    const char *module, *module_version, *variant; /* variant "" = default */
    double median_us, baseline_us;
    const char *state;        /* "active", "no win: ...", or why it is ignored */
    const char *source;       /* the file it came from, or "this process" */
    /* ---- appended (issue 29): filled when struct_size covers them ---- */
    int win;                  /* 1: an entry routing uses; 0: "no win", the scores route the class */
    double gain, gain_lo, gain_hi, noise_floor; /* the claim (see memra_tune_claim) */
    int reps;
} memra_tune_entry;

/* The table as read at memra_open and changed since, in file order. Strings
 * live until the next memra_tune_* call or memra_close. Not thread-safe
 * against memra_tune_record/clear. */
int memra_tune_count(const memra_runtime *rt);
memra_status memra_tune_entry_get(const memra_runtime *rt, int index, memra_tune_entry *out);
/* The tuning file's path and what happened to it at open ("read N entries",
 * "absent", "ignored: checksum mismatch", ...). Owned by rt. */
const char *memra_tune_file(const memra_runtime *rt);
const char *memra_tune_file_status(const memra_runtime *rt);

/* ---- shadow A/B (core/observe/shadow.c) ------------------------------------------------ */

/* A module (loaded and admitted on dev) becomes the shadow of the incumbent
 * for a GEMM op: it no longer serves that op; one call in MEMRA_SHADOW_RATE
 * of the op on dev also runs on the shadow, into its own output buffer and its
 * own scratch (the caller's output and stream order are never touched), both
 * timed; the outputs are compared within the op's band (see
 * docs/ARCHITECTURE.md, "Shadow A/B": the live band is normalised by an
 * estimate of the mass, sqrt(k) times the row's largest |y|). After
 * MEMRA_SHADOW_AGREE agreeing samples with the shadow faster by
 * MEMRA_SHADOW_MARGIN_PCT percent, it is promoted (MEMRA_SHADOW_AUTO_PROMOTE=1,
 * or memra_shadow_promote): a routing preference op=module is added. The
 * first mismatch (or shadow error) rolls it back: sampling stops, the module
 * stays off that op, the reason is kept. Saturation rule: at most one shadow
 * run per (device, op) is in flight; a sampled call that finds one running
 * skips (counted). On the host device the shadow runs synchronously after
 * the caller's op, on the caller's thread. On a GPU it runs on a stream of
 * its own, ordered after copies (on the caller's stream) of the activation
 * and of up to 8 output rows; the rows are read back into pinned memory and
 * judged at a later sampled call when an event polled there has completed:
 * the caller's stream and thread never wait for it, and a call on a stream
 * being captured is never sampled (counted as skipped). variant: NULL for
 * the module's default. OK; INVALID_ARGUMENT; NOT_FOUND; NOT_SUPPORTED (a
 * GPU whose driver lacks cuStreamWaitEvent, cuMemcpyDtoDAsync, cuEventQuery
 * or cuMemAllocHost). */
memra_status memra_shadow_start(memra_device *dev, memra_op op, const char *module, const char *variant);
/* Stop sampling (the module serves the op again by its score). */
memra_status memra_shadow_stop(memra_device *dev, memra_op op);
/* Promote now, whatever the counts (the operator's decision). */
memra_status memra_shadow_promote(memra_device *dev, memra_op op);

typedef enum memra_shadow_state {
    MEMRA_SHADOW_NONE = 0,
    MEMRA_SHADOW_WATCHING = 1,
    MEMRA_SHADOW_PROMOTED = 2,
    MEMRA_SHADOW_ROLLED_BACK = 3,
    MEMRA_SHADOW_STOPPED = 4,
} memra_shadow_state;

typedef struct memra_shadow_info {
    uint32_t struct_size;       /* IN: sizeof(memra_shadow_info) */
    memra_shadow_state state;
    char module[49], variant[33], incumbent[49];
    uint64_t calls, samples, agreements, mismatches, skipped;
    double incumbent_us, shadow_us; /* mean over agreeing samples */
    double speed_ratio;             /* incumbent_us / shadow_us (> 1: the shadow is faster); 0 before a sample */
    char reason[300];               /* why promoted / rolled back */
} memra_shadow_info;
/* A copy of the shadow record of (dev, op). Thread-safe. OK; INVALID_ARGUMENT. */
memra_status memra_shadow_get(memra_device *dev, memra_op op, memra_shadow_info *out);

/* ---- the dispatch ledger ----------------------------------------------------- */

typedef struct memra_ledger_row {
    const char *device;  /* e.g. "cuda:0 sm90", "host" */
    const char *op;
    const char *module;
    uint64_t entries;    /* times the lane was tried */
    uint64_t hits;       /* times it served the call */
    uint64_t errors;     /* times it failed with an error */
    const char *reason;  /* NULL on a summary row; else a decline reason */
    uint64_t declines;   /* count for `reason` */
} memra_ledger_row;

/* Visit every ledger row (one per (device, op, module), then one per decline
 * reason). Thread-safe; the row's strings are valid during the callback. */
void memra_ledger_visit(const memra_runtime *rt, void (*fn)(const memra_ledger_row *row, void *user), void *user);
/* Hits of `op` by `module` on dev (0 when none). */
uint64_t memra_ledger_hits(const memra_device *dev, memra_op op, const char *module);
void memra_ledger_reset(memra_runtime *rt);
/* Print the ledger as a table to a FILE* (void* to keep stdio out of this header). */
void memra_ledger_print(const memra_runtime *rt, void *file);

/* ---- buffers -------------------------------------------------------------- */

/* Device memory (host memory on the host device), `bytes` > 0. */
memra_status memra_buffer_create(memra_device *dev, size_t bytes, memra_buffer **out_buf);
void memra_buffer_destroy(memra_buffer *buf);
memra_dptr memra_buffer_ptr(const memra_buffer *buf);
size_t memra_buffer_size(const memra_buffer *buf);
/* Synchronous copies (they wait for the device's pending work). */
memra_status memra_buffer_write(memra_buffer *buf, size_t offset, const void *src, size_t bytes);
memra_status memra_buffer_read(const memra_buffer *buf, size_t offset, void *dst, size_t bytes);

/* ---- timing (benchmarks) ---------------------------------------------------- */

typedef struct memra_timer memra_timer;
/* A stream-ordered interval timer: CUDA events on a GPU, the monotonic clock
 * on the host device (whose ops complete before they return). */
memra_status memra_timer_create(memra_device *dev, memra_timer **out);
void memra_timer_destroy(memra_timer *t);
memra_status memra_timer_start(memra_timer *t, memra_stream_t stream);
memra_status memra_timer_stop(memra_timer *t, memra_stream_t stream);
/* Waits for the stop mark, then gives start..stop in milliseconds. */
memra_status memra_timer_elapsed_ms(memra_timer *t, double *out_ms);

/* Clocks and identity of a device for receipts: SM and memory clock (kHz,
 * from the driver's attributes; 0 on host). */
typedef struct memra_device_clocks {
    int sm_khz, mem_khz;
} memra_device_clocks;
memra_status memra_device_clocks_get(const memra_device *dev, memra_device_clocks *out);

/* ---- weights and matmul ------------------------------------------------------ */

typedef struct memra_weight_desc {
    uint32_t struct_size;
    memra_format format;
    int64_t out_f, in_f;      /* [out_f rows x in_f cols] */
    const void *data;         /* host bytes; copied at create */
    size_t size;              /* must equal out_f * row_bytes(format, in_f) */
    float scale;              /* per-tensor scale (E4M3); 0 is read as 1 */
    const float *grid;        /* block-128 grid [ceil(out_f/128) x ceil(in_f/128)] (E4M3); NULL for per-tensor */
    size_t grid_count;        /* number of floats in grid */
    const char *name;         /* for logs; may be NULL */
    /* ---- appended; read only when struct_size covers it ---- */
    /* E4M3 only: a static activation scale (the checkpoint's input_scale,
     * finite, > 0; 0 = none). The FP8 lanes (gemm_fp8, and gemm_fp8_blk for
     * every (row, 128) block) then quantise x in one pass, q = e4m3(x / s),
     * with no amax pass: values above 448 s saturate to +-448 s as e4m3 does
     * (the host reference does the same). A producer amax
     * (memra_matmul_args.x_amax) wins over it. Lanes that do not quantise to
     * e4m3 (the MMQ floor's q8_1) do not use it. */
    float input_scale;
} memra_weight_desc;

/* Validate and copy. INVALID_ARGUMENT with a message naming the field for
 * every bad case (size, divisibility, grid shape, non-finite scale). */
memra_status memra_weight_create(memra_runtime *rt, const memra_weight_desc *desc, memra_weight **out_w);

/* Called once, from memra_weight_destroy, when the weight no longer needs the
 * bytes it borrowed. */
typedef void (*memra_weight_release_fn)(void *user);
/* memra_weight_create without the copy: the weight reads desc->data (uploads
 * at prepare, Q8_0 blocks made again after records replaced them) until
 * memra_weight_destroy calls release(user). The caller keeps the bytes valid
 * and unchanged until then (a read-only file mapping, for example; see
 * memra/file.h). The grid is still copied (it is small). On failure release
 * is not called and the caller keeps its bytes. Same statuses as
 * memra_weight_create; INVALID_ARGUMENT when release is NULL. */
memra_status memra_weight_create_borrowed(memra_runtime *rt, const memra_weight_desc *desc,
                                          memra_weight_release_fn release, void *user, memra_weight **out_w);
void memra_weight_destroy(memra_weight *w);
/* Build the operands dev's policy wants (f16 mirror within budget, Q8_0 slab,
 * NaN verdict), once. Idempotent. */
memra_status memra_weight_prepare(memra_weight *w, memra_device *dev);
memra_format memra_weight_format(const memra_weight *w);
/* [out_f x in_f] of w. INVALID_ARGUMENT on NULL. */
memra_status memra_weight_shape(const memra_weight *w, int64_t *out_f, int64_t *in_f);

typedef struct memra_weight_state {
    int prepared;          /* operands built on this device */
    int has_f16_mirror;    /* a resident f16 mirror serves gemm_f16 */
    int has_q8_0_slab;     /* a Q8_0 slab serves the MMQ floor (block-128 FP8) */
    uint64_t nan_codes;    /* e4m3 NaN codes found (E4M3 only) */
    const char *note;      /* why no mirror, "" otherwise */
} memra_weight_state;

/* What prepare built for w on dev. */
memra_status memra_weight_query(const memra_weight *w, const memra_device *dev, memra_weight_state *out);

/* The device operands a prepared weight holds now, as a bit mask (0 when w or
 * dev is NULL or w is not prepared there). New bits may be added. */
#define MEMRA_OPERAND_RAW 1u          /* the weight's own bytes */
#define MEMRA_OPERAND_F16_MIRROR 2u   /* f16 mirror (gemm_f16) */
#define MEMRA_OPERAND_Q8_0_SLAB 4u    /* Q8_0 slab of a block-128 FP8 weight */
#define MEMRA_OPERAND_Q8_0_RECORDS 8u /* Q8_0 record layout (gemm_q8_0r) */
#define MEMRA_OPERAND_K_RECORDS 16u   /* K record layout of a Q4_K / Q5_K / Q6_K weight (gemm_kr) */
#define MEMRA_OPERAND_W16 32u         /* the W16 layout of a Q8_0 / Q4_0 / K-quant weight (gemm_w16) */
unsigned memra_weight_operands(const memra_weight *w, const memra_device *dev);

/* The lane memra_matmul would take for w on dev under the current routing,
 * policy and f16 budget, without preparing or uploading anything. */
#define MEMRA_PLAN_MAX_STEPS 4
typedef struct memra_weight_plan {
    uint32_t struct_size;                       /* sizeof(memra_weight_plan), set by the caller */
    const char *lane;                           /* "f16 mirror", "bf16", "fp8", "fp8 block-128", "mmq records",
                                                   "mmq blocks", "transient f16 mirror", ... ; "none" when a step
                                                   has no module on dev */
    int n_steps;
    memra_op ops[MEMRA_PLAN_MAX_STEPS];         /* the ops in order (a load-time re-encode first where one runs) */
    const char *modules[MEMRA_PLAN_MAX_STEPS];  /* first module routed for each op, NULL when none */
    uint64_t operand_bytes;                     /* device bytes prepare would hold for w on dev */
    char why[320];                              /* why this lane and not another */
} memra_weight_plan;

/* Fill *out (out->struct_size set by the caller) with w's lane on dev. The
 * prediction is made for this weight alone against the mirror bytes already
 * resident; it does not reserve budget. Thread-safe. Strings are static or
 * owned by the runtime. INVALID_ARGUMENT on NULL, a small struct_size, or a
 * weight and device of two runtimes. */
memra_status memra_weight_plan_get(const memra_weight *w, memra_device *dev, memra_weight_plan *out);

/* From how many tokens memra_matmul on w on dev leaves the integer floor for
 * dequant_kr_f16 + gemm_f16, the f16 mirror's results, not the floor's: the
 * route from the floor to the f16 tensor cores. Off by default (the
 * dispatcher's order: the floor before a per-call f16 copy); on where set:
 * memra_device_floor_f16_m_set, else MEMRA_FLOOR_F16_M (N, or auto: the
 * device's profile's measured crossover, on sm90 256 for K records and 512
 * for Q8_0 records). 0 when it never does: w not held (or not to be held) as
 * the floor's records on dev, an expert weight, no lane for dequant_kr_f16 or
 * gemm_f16 on dev, the route off, or NULL arguments. The plan's why says the
 * same in words. Thread-safe. */
int64_t memra_weight_floor_f16_m(const memra_weight *w, memra_device *dev);

typedef struct memra_matmul_args {
    uint32_t struct_size;
    memra_dptr x;          /* f32 [m x in_f], or f16 when x_is_f16 */
    int32_t x_is_f16;
    int32_t m;
    memra_dptr y;          /* f32 */
    int64_t ldy;           /* 0 = out_f */
    int64_t y_row_offset;
    float alpha;           /* 0 is read as 1 */
    memra_stream_t stream;
    /* ---- appended; read only when struct_size covers it ---- */
    /* Optional (0: none): the activation's amax on the device, computed by the
     * engine's previous kernel, in stream order before this call: for a
     * per-tensor E4M3 weight (gemm_fp8) one f32, max |x| over all m x in_f
     * values; for a block-128 one (gemm_fp8_blk) f32 [ceil(in_f/128) x m], the
     * max |x| of row i's columns 128 b .. 128 b + 127 at x_amax[b * m + i]
     * (row fastest: the layout of the lane's own scales). The lane computes
     * s = amax > 0 ? amax / 448 : 1 on the device and quantises in one pass; it
     * wins over the weight's input_scale. An amax below the true one is the
     * caller's contract: the values above 448 s saturate. Other lanes ignore
     * it. 4-byte aligned. */
    memra_dptr x_amax;
} memra_matmul_args;

/* y = x . W^T through the lane policy (falls through on DECLINED). */
memra_status memra_matmul(memra_device *dev, memra_weight *w, memra_dptr x, int32_t m, memra_dptr y,
                          memra_stream_t stream);
/* args->struct_size must cover every member up to `stream` (0 or smaller:
 * INVALID_ARGUMENT); members after it are read when it covers them. A
 * non-finite alpha and an x_amax not 4-byte aligned are INVALID_ARGUMENT. */
memra_status memra_matmul_ex(memra_device *dev, memra_weight *w, const memra_matmul_args *args);
/* The weight's static activation scale (memra_weight_desc.input_scale, or the
 * checkpoint's input_scale), 0 when it has none or w is NULL. Thread-safe. */
float memra_weight_input_scale(const memra_weight *w);

/* ---- experts: mixture-of-experts prefill ---------------------------------------
 *
 *   memra_experts_desc ed = { .struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = 128,
 *                             .out_f = 768, .in_f = 2048, .data = bytes, .size = nbytes };
 *   memra_weight *gate;  memra_weight_create_experts(rt, &ed, &gate);
 *   // the engine expands its top-k routing into rows: row r = (token t, slot j), ids[r] = expert
 *   memra_matmul_experts(dev, gate, x_rows, rows, ids, y_rows, stream);
 *
 * An expert weight is E matrices of one format and shape [out_f x in_f]
 * (a 3D GGUF tensor ffn_{gate,up,down}_exps, or the per-expert 2D tensors of a
 * safetensors checkpoint grouped by the reader: memra/file.h). The grouped call
 * writes y[r] = x[r] . W[ids[r]]^T for each row r: ids are int32 on the device,
 * rows may come in any order, and any expert may get no rows. What stays the
 * engine's, as in llama.cpp's MUL_MAT_ID: the routing itself (top-k over the
 * router's logits), expanding it into rows (a token routed to k experts is k
 * rows), the gating weights, the activation between gate/up and down, and the
 * weighted sum over the k rows of a token. memra multiplies only.
 *
 * Numbers: each expert's rows get exactly what the dense lane gives them in
 * memra_matmul on the gathered rows (the same lane for every expert: the
 * experts' f16 mirrors are made for all experts or for none, against the
 * device's budget, each counted as one mirror; the integer floor's records per
 * expert; FP8 per-tensor takes its per-batch activation scale over the rows of
 * each expert; block-128 FP8 per row and 128 columns as always). Lanes: f16
 * mirror, bf16, fp8, fp8 block-128 (then its floor when prepare made the
 * slab), Q8_0 / Q4_0 records, Q8_0 blocks, K records; an expert weight has no
 * per-call dequantisation fall-back (NOT_SUPPORTED names what is missing).
 * Ids outside [0, n_experts) (a negative id marks a dropped row) skip their
 * row: its output row is left unchanged, on every lane. The call never reads
 * ids on the host and never waits for the device. Served by the op
 * gemm_experts (module.h); a device whose modules lack it answers NOT_SUPPORTED
 * (memra_weight_plan_get says so: lane "none"), one whose module does not take
 * the lane DECLINED (on GPUs, so far, only the Q8_0-records floor lane is
 * served; docs/ARCHITECTURE.md, "Experts"). */

typedef struct memra_experts_desc {
    uint32_t struct_size;
    memra_format format;
    int32_t n_experts;        /* E, 1 .. 65536 */
    int64_t out_f, in_f;      /* each expert's [out_f rows x in_f cols] */
    const void *data;         /* host bytes of expert 0, then 1, ...; copied at create */
    size_t size;              /* must equal n_experts * out_f * row_bytes(format, in_f) */
    const float *scales;      /* E4M3 per-tensor: n_experts scales (0 is read as 1); NULL: all 1 */
    const float *grid;        /* E4M3 block-128: n_experts grids of [ceil(out_f/128) x ceil(in_f/128)], expert-major */
    size_t grid_count;        /* number of floats in grid */
    const char *name;         /* for logs; may be NULL */
} memra_experts_desc;

/* Validate and copy; an expert weight is a memra_weight (destroy, prepare,
 * query, operands, plan and format work on it; memra_matmul refuses it).
 * INVALID_ARGUMENT naming the field (and the expert) for every bad case,
 * OUT_OF_MEMORY. */
memra_status memra_weight_create_experts(memra_runtime *rt, const memra_experts_desc *desc, memra_weight **out_w);
/* The number of experts of w; 0 for a dense weight or NULL. */
int32_t memra_weight_experts(const memra_weight *w);

typedef struct memra_matmul_experts_args {
    uint32_t struct_size;
    memra_dptr x;          /* f32 [rows x in_f], or f16 when x_is_f16 (the f16-mirror lane only) */
    int32_t x_is_f16;
    int32_t rows;
    memra_dptr ids;        /* int32 [rows] on the device: the expert of each row */
    memra_dptr y;          /* f32 [rows x out_f] (row stride ldy) */
    int64_t ldy;           /* 0 = out_f */
    int64_t y_row_offset;  /* row r is written at row y_row_offset + r */
    float alpha;           /* 0 is read as 1 */
    memra_stream_t stream;
} memra_matmul_experts_args;

/* y[r] = alpha * x[r] . W[ids[r]]^T for every row r with a valid id (see
 * above), stream-ordered, no host synchronisation; prepares w on dev first if
 * needed (that may wait for the device). Thread-safe as memra_matmul.
 * INVALID_ARGUMENT (NULL x / ids / y, rows <= 0, a dense weight, ldy <
 * out_f, a negative offset, a non-finite alpha, an f16 x without the mirror
 * lane, args->struct_size not covering `stream`); NOT_SUPPORTED (no lane on
 * dev serves these experts, e4m3 NaN codes on the per-tensor FP8 lane). */
memra_status memra_matmul_experts(memra_device *dev, memra_weight *w, memra_dptr x, int32_t rows, memra_dptr ids,
                                  memra_dptr y, memra_stream_t stream);
memra_status memra_matmul_experts_ex(memra_device *dev, memra_weight *w, const memra_matmul_experts_args *args);

/* ---- the JIT cache --------------------------------------------------------- */

typedef struct memra_jit_info {
    int available;          /* NVRTC could be opened */
    const char *why;        /* why not, "" when available */
    int nvrtc_major, nvrtc_minor;
    int disk_enabled;       /* 0 with MEMRA_JIT_CACHE=0 or an unusable folder */
    const char *folder;     /* entries' folder, "" when none */
    uint64_t entries, bytes, max_bytes;
    uint64_t hits_memory, hits_disk, compiles, corrupt_dropped;
} memra_jit_info;

/* Cache place and size, NVRTC availability. Strings owned by rt. */
memra_status memra_jit_info_get(memra_runtime *rt, memra_jit_info *out);

/* Whether the disk cache is usable now, in words: "ok", "ok (created at the
 * first write)", "off (MEMRA_JIT_CACHE=0)", or why it is not trusted ("<root>
 * is writable by others (mode 777)", "... belongs to uid 1000, not the
 * current user"). Creates nothing. Writes a
 * NUL-terminated sentence into buf (truncated to len). Thread-safe.
 * OK, or INVALID_ARGUMENT (rt or buf NULL, len 0). */
memra_status memra_jit_disk_status(memra_runtime *rt, char *buf, size_t len);

typedef struct memra_jit_entry_info {
    char key_hex[65];
    char target[17];
    uint64_t bytes;
    int64_t age_s;
    int header_ok;
} memra_jit_entry_info;

/* Disk entries in a malloc'd array; release with free(). */
memra_status memra_jit_list(memra_runtime *rt, memra_jit_entry_info **out, size_t *count);
/* Remove every disk entry. */
memra_status memra_jit_clear(memra_runtime *rt, size_t *removed);

typedef void (*memra_jit_progress_fn)(const char *module, const char *kernel, const char *target, const char *origin,
                                      double ms, memra_status status, void *user);
/* Compile (or find) every kernel source the loaded modules declare for each
 * GPU device's target, calling progress after each. */
memra_status memra_jit_warm(memra_runtime *rt, memra_jit_progress_fn progress, void *user);

#ifdef __cplusplus
}
#endif
#endif
