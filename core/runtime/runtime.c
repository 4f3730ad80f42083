/* memra_open / memra_close: driver, devices, profiles, then the registry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/load/load.h"
#include "core/observe/shadow.h"
#include "core/routing/routing.h"
#include "jit/jit.h"

const char *memra_version(void) { return MEMRA_VERSION_STRING; }

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }


static memra_device *device_new(memra_runtime *rt)
{
    memra_device *dev = calloc(1, sizeof *dev);
    if (dev == NULL) return NULL;
    dev->rt = rt;
    pthread_mutex_init(&dev->snap_lock, NULL);
    pthread_mutex_init(&dev->ledger_lock, NULL);
    pthread_mutex_init(&dev->scratch_lock, NULL);
    pthread_mutex_init(&dev->image_lock, NULL);
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        pthread_mutex_init(&dev->shadow[op].lock, NULL);
        pthread_mutex_init(&dev->shadow[op].gpu_lock, NULL);
    }
    dev->caps.struct_size = sizeof dev->caps;
    return dev;
}

/* The default f16 mirror budget of a GPU, from its memory at open: half of
 * what is free after a reserve of MEMRA__F16_RESERVE_MB (4 GiB: scratch,
 * cuBLASLt workspaces, Q8_0 records, activations, the caller's own buffers),
 * 0 when less is free. The other half stays for weights that are not
 * mirrored and for the caller. H200 (~140 GB free): ~68 GB; RTX 5090
 * (~31 GB free): ~13.5 GB; A10 (~22 GB): ~9 GB. */
#define MEMRA__F16_RESERVE_MB 4096u
static uint64_t f16_budget_derive(uint64_t free_bytes)
{
    const uint64_t free_mb = free_bytes >> 20;
    return free_mb > MEMRA__F16_RESERVE_MB ? (free_mb - MEMRA__F16_RESERVE_MB) / 2 : 0;
}

/* What the configuration fixes per device: the f16 budget, scratch's entry points. */
static void device_config(const memra_runtime *rt, memra_device *dev)
{
    const char *source = "profile";
    uint64_t mb = (uint64_t)dev->profile->f16_budget_mb;
    if (rt->cfg.f16_budget_mb >= 0) {
        mb = (uint64_t)rt->cfg.f16_budget_mb;
        source = rt->cfg.source[MEMRA__KNOB_F16_BUDGET_MB] == 2 ? "option" : "env";
    } else if (dev->ctx != NULL && rt->drv != NULL) {
        size_t fr = 0, total = 0;
        const memra__driver *drv = memra__driver_get();
        CUcontext prev = NULL;
        if (drv->cuCtxPushCurrent(dev->ctx) == MEMRA__CUDA_SUCCESS) {
            if (drv->cuMemGetInfo(&fr, &total) == MEMRA__CUDA_SUCCESS) {
                dev->free_at_open = fr;
                mb = f16_budget_derive(fr);
                source = "derived";
            }
            drv->cuCtxPopCurrent(&prev);
        }
        if (strcmp(source, "derived") != 0)
            memra__log(MEMRA_LOG_WARN, "core", "%s: cuMemGetInfo failed: f16 budget %llu MB (the profile's)",
                       dev->label, (unsigned long long)mb);
    }
    atomic_store(&dev->f16_budget_mb, mb);
    atomic_store(&dev->f16_budget_source, source);
    atomic_store(&dev->floor_f16_m, (int_fast64_t)-1);
    atomic_store(&dev->w16, -1);
    const char *z = memra__config_str(&rt->cfg, MEMRA__KNOB_TEST_SCRATCH_ZERO);
    dev->scratch_zero_new = z != NULL && strcmp(z, "1") == 0;
    memra__scratch_device_init(dev);
}

static int rt_driver_ok(const memra_runtime *rt) { return rt != NULL && rt->drv != NULL; }

static void device_free(memra_device *dev)
{
    if (dev == NULL) return;
    memra__device_images_unload(dev);
    memra__device_scratch_free(dev);
    if (dev->ctx != NULL && rt_driver_ok(dev->rt)) memra__driver_get()->cuDevicePrimaryCtxRelease(dev->cudev);
    memra__ledger_cell *c = dev->cells;
    while (c != NULL) {
        memra__ledger_cell *n = c->next;
        free(c);
        c = n;
    }
    pthread_mutex_destroy(&dev->snap_lock);
    pthread_mutex_destroy(&dev->ledger_lock);
    pthread_mutex_destroy(&dev->scratch_lock);
    pthread_mutex_destroy(&dev->image_lock);
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        pthread_mutex_destroy(&dev->shadow[op].lock);
        pthread_mutex_destroy(&dev->shadow[op].gpu_lock);
    }
    free(dev);
}

static int host_threads(const memra_runtime *rt)
{
    long n = rt->cfg.host_threads > 0 ? rt->cfg.host_threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    return (int)n;
}

static memra_status add_host_device(memra_runtime *rt)
{
    memra_device *dev = device_new(rt);
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "out of memory creating the host device");
    dev->is_host = 1;
    dev->profile = memra__profile_host();
    snprintf(dev->name, sizeof dev->name, "host");
    snprintf(dev->label, sizeof dev->label, "host");
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    dev->caps.arch = MEMRA_ARCH_HOST;
    dev->caps.profile = dev->profile->name;
    dev->caps.name = dev->name;
    dev->caps.ordinal = -1;
    dev->caps.cc = 0;
    dev->caps.sm_count = host_threads(rt);
    dev->caps.total_mem = (pages > 0 && psize > 0) ? (uint64_t)pages * (uint64_t)psize : 0;
    dev->caps.jit_target = NULL;
    dev->caps.caps = dev->profile->caps;
    device_config(rt, dev);
    dev->index = rt->n_devices;
    rt->devices[rt->n_devices++] = dev;
    return MEMRA_STATUS_OK;
}

/* The profile MEMRA_ARCH forces on CUDA ordinal i, NULL when none. */
static const memra__profile *forced_profile(const char *force_arch, int i)
{
    char nm[16];
    return memra__profile_by_name(memra__config_arch_for(force_arch, i, nm, (int)sizeof nm));
}

/* Test stand-ins for CUDA devices (MEMRA_TEST_FAKE_DEVICES=N, no driver):
 * ordinals 0..N-1, host memory and the host module's ops (caps.arch is
 * host), but each has its own profile (cc 9.0's sm90 unless MEMRA_ARCH forces
 * another), so its f16 budget, FP8 slab policy, caps.profile and label are
 * those of that profile: the registry, snapshots, scratch, ledger and weight
 * code run per device exactly as on GPUs. */
static memra_status add_fake_devices(memra_runtime *rt, int n, const char *force_arch)
{
    for (int i = 0; i < n && rt->n_devices < MEMRA__MAX_DEVICES - 1; i++) {
        const memra__profile *f = forced_profile(force_arch, i);
        const memra__profile *p = f ? f : memra__profile_for_cc(90);
        memra_device *dev = device_new(rt);
        if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "out of memory creating a fake device");
        dev->is_host = 1;
        dev->forced = f != NULL;
        dev->profile = p;
        snprintf(dev->name, sizeof dev->name, "fake device %d", i);
        snprintf(dev->label, sizeof dev->label, "fake:%d %s", i, p->name);
        dev->caps.arch = MEMRA_ARCH_HOST;
        dev->caps.profile = p->name;
        dev->caps.name = dev->name;
        dev->caps.ordinal = i;
        dev->caps.cc = 90;
        dev->caps.sm_count = 1;
        dev->caps.total_mem = 1ull << 30;
        dev->caps.caps = p->caps | MEMRA_CAP_HOST;
        device_config(rt, dev);
        dev->index = rt->n_devices;
        rt->devices[rt->n_devices++] = dev;
    }
    return MEMRA_STATUS_OK;
}

/* Every ordinal a per-device MEMRA_ARCH names must be a device memra uses. */
static memra_status check_forced_ordinals(memra_runtime *rt, const char *force_arch)
{
    int ords[16];
    const int n = memra__config_arch_ordinals(force_arch, ords, 16);
    static const char *const src[] = {"default", "environment", "option"};
    for (int j = 0; j < n; j++) {
        int found = 0;
        for (int d = 0; d < rt->n_devices; d++)
            if (rt->devices[d]->caps.ordinal == ords[j]) found = 1;
        if (!found)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "MEMRA_ARCH=%s (%s): ordinal %d is no device memra uses (%s)", force_arch,
                               src[rt->cfg.source[MEMRA__KNOB_ARCH]], ords[j], rt->driver_why);
    }
    /* A profile forced on every device when there is no CUDA device: the
     * forcing does nothing, which the user did not ask for; say so. */
    int cuda = 0;
    for (int d = 0; d < rt->n_devices; d++) cuda |= rt->devices[d]->caps.ordinal >= 0;
    if (force_arch != NULL && n == 0 && !cuda) {
        memra__config_warn(&rt->cfg,
                           "MEMRA_ARCH=%s (%s) matches no device: there is no CUDA device (%s), and the host device "
                           "keeps its profile", force_arch, src[rt->cfg.source[MEMRA__KNOB_ARCH]], rt->driver_why);
    }
    return MEMRA_STATUS_OK;
}

static memra_status add_cuda_devices(memra_runtime *rt, const char *force_arch)
{
    const memra__driver *drv = rt->drv;
    int count = 0;
    drv->cuDeviceGetCount(&count);
    for (int i = 0; i < count && rt->n_devices < MEMRA__MAX_DEVICES - 1; i++) {
        CUdevice cud;
        CUresult r = drv->cuDeviceGet(&cud, i);
        if (r != MEMRA__CUDA_SUCCESS) {
            memra__log(MEMRA_LOG_WARN, "core", "cuDeviceGet(%d): %s", i, memra__driver_errstr(drv, r));
            continue;
        }
        int major = 0, minor = 0, sms = 0, smem = 0, clk = 0, mclk = 0;
        size_t mem = 0;
        char name[128] = "";
        drv->cuDeviceGetName(name, sizeof name, cud);
        drv->cuDeviceGetAttribute(&major, MEMRA__CU_ATTR_CC_MAJOR, cud);
        drv->cuDeviceGetAttribute(&minor, MEMRA__CU_ATTR_CC_MINOR, cud);
        drv->cuDeviceGetAttribute(&sms, MEMRA__CU_ATTR_MULTIPROCESSOR_COUNT, cud);
        drv->cuDeviceGetAttribute(&smem, MEMRA__CU_ATTR_SMEM_PER_BLOCK_OPTIN, cud);
        drv->cuDeviceGetAttribute(&clk, MEMRA__CU_ATTR_CLOCK_RATE, cud);
        drv->cuDeviceGetAttribute(&mclk, MEMRA__CU_ATTR_MEMORY_CLOCK_RATE, cud);
        drv->cuDeviceTotalMem(&mem, cud);
        int cc = major * 10 + minor;
        const memra__profile *p = memra__profile_for_cc(cc);
        const memra__profile *f = forced_profile(force_arch, i);
        if (p != NULL && f != NULL) p = f; /* forcing never admits cc < 8.0 */
        if (p == NULL) {
            memra__log(MEMRA_LOG_WARN, "core", "cuda:%d %s (cc %d.%d) is older than cc 8.0: not used", i, name,
                       major, minor);
            if (rt->n_unserved < MEMRA__MAX_DEVICES)
                snprintf(rt->unserved[rt->n_unserved++], sizeof rt->unserved[0],
                         "cuda:%d %.128s: cc %d.%d, %.1f GiB: present, not served: older than cc 8.0 (every GPU kernel "
                         "of memra needs sm_80: int8 mma.sync, cp.async, bf16)",
                         i, name, major, minor, (double)mem / (1 << 30));
            continue;
        }
        memra_device *dev = device_new(rt);
        if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "out of memory creating a device");
        r = drv->cuDevicePrimaryCtxRetain(&dev->ctx, cud);
        if (r != MEMRA__CUDA_SUCCESS) {
            memra__log(MEMRA_LOG_WARN, "core", "cuda:%d: cuDevicePrimaryCtxRetain: %s: not used", i,
                       memra__driver_errstr(drv, r));
            dev->ctx = NULL;
            device_free(dev);
            continue;
        }
        dev->cudev = cud;
        dev->profile = p;
        dev->forced = f != NULL;
        snprintf(dev->name, sizeof dev->name, "%s", name);
        memra__profile_jit_target(p, cc, dev->jit_target, sizeof dev->jit_target);
        snprintf(dev->label, sizeof dev->label, "cuda:%d %s", i, p->name);
        dev->clock_khz = clk;
        dev->mem_clock_khz = mclk;
        dev->caps.arch = p->arch;
        dev->caps.profile = p->name;
        dev->caps.name = dev->name;
        dev->caps.ordinal = i;
        dev->caps.cc = cc;
        dev->caps.sm_count = sms;
        dev->caps.total_mem = mem;
        dev->caps.driver_version = drv->version;
        dev->caps.jit_target = dev->jit_target;
        dev->caps.caps = p->caps;
        dev->caps.smem_per_block_optin = (size_t)smem;
        dev->caps.cu_context = dev->ctx;
        dev->caps.cu_device = cud;
        device_config(rt, dev);
        dev->index = rt->n_devices;
        rt->devices[rt->n_devices++] = dev;
        MEMRA__DEBUG("core", "device %s: %s cc %d sm %d mem %zu MiB, JIT target %s", dev->label, name, cc, sms,
                     mem >> 20, dev->jit_target);
    }
    return MEMRA_STATUS_OK;
}

memra_status memra_open(const memra_options *opts, memra_runtime **out_rt)
{
    memra__clear_error();
    if (out_rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_open: out_rt is NULL");
    if (opts != NULL && opts->struct_size < offsetof(memra_options, prefer))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_open: options.struct_size %u too small",
                           opts->struct_size);
    memra_runtime *rt = calloc(1, sizeof *rt);
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_open: out of memory");
    pthread_mutex_init(&rt->reg_lock, NULL);
    rt->observer = &memra__shadow_observer; /* routing reaches shadow A/B through it */
    rt->opts.struct_size = sizeof rt->opts;
    if (opts != NULL) memcpy(&rt->opts, opts, opts->struct_size < sizeof rt->opts ? opts->struct_size : sizeof rt->opts);
    memra_status st = memra__config_parse(&rt->cfg, opts);
    if (st != MEMRA_STATUS_OK) goto fail;
    memra__log_configure(rt->cfg.log_level, MEMRA_HAS_MEMBER(&rt->opts, memra_options, log_fn) ? rt->opts.log_fn : NULL,
                         MEMRA_HAS_MEMBER(&rt->opts, memra_options, log_user) ? rt->opts.log_user : NULL, rt);
    memra__config_publish(&rt->cfg);
    for (int i = 0; i < rt->cfg.n_extra; i++)
        memra__config_warn(&rt->cfg, "%s=%s (%s) is no knob of memra or its built-in modules (a typo, or a module's own)",
                           rt->cfg.extra_name[i], rt->cfg.extra_value[i],
                           rt->cfg.extra_source[i] == 2 ? "option" : "environment");

    const char *force = memra__config_str(&rt->cfg, MEMRA__KNOB_ARCH);
    rt->allow_unsafe = rt->cfg.allow_unsafe;
    rt->module_path = dup_or_null(memra__config_str(&rt->cfg, MEMRA__KNOB_MODULE_PATH));
    rt->prefer = dup_or_null(memra__config_str(&rt->cfg, MEMRA__KNOB_PREFER));
    rt->disable = dup_or_null(memra__config_str(&rt->cfg, MEMRA__KNOB_DISABLE));
    rt->opts.module_path = rt->opts.force_arch = rt->opts.prefer = rt->opts.disable = NULL;
    if (MEMRA_HAS_MEMBER(&rt->opts, memra_options, settings)) rt->opts.settings = NULL;
    static const char *const src[] = {"default", "environment", "option"};
    for (int i = 0; i < 2; i++) {
        const memra__knob k = i == 0 ? MEMRA__KNOB_PREFER : MEMRA__KNOB_DISABLE;
        const char *v = i == 0 ? rt->prefer : rt->disable;
        if (memra__routing_validate(i == 0 ? v : NULL, i == 0 ? NULL : v) != MEMRA_STATUS_OK) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s", memra_last_error());
            st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): %s", i == 0 ? "MEMRA_PREFER" : "MEMRA_DISABLE",
                             v, src[rt->cfg.source[k]], msg);
            goto fail;
        }
    }

    const char *fake = memra__config_str(&rt->cfg, MEMRA__KNOB_TEST_FAKE_DEVICES);
    if (fake != NULL && atoi(fake) > 0) {
        snprintf(rt->driver_why, sizeof rt->driver_why, "CUDA not used: MEMRA_TEST_FAKE_DEVICES=%s (test stand-ins)",
                 fake);
        st = add_fake_devices(rt, atoi(fake), force);
        if (st != MEMRA_STATUS_OK) goto fail;
    } else if (rt->opts.no_cuda) {
        snprintf(rt->driver_why, sizeof rt->driver_why, "CUDA disabled by option");
    } else if (force != NULL && strcmp(force, "host") == 0) {
        snprintf(rt->driver_why, sizeof rt->driver_why, "CUDA not used: MEMRA_ARCH=host");
    } else {
        const memra__driver *drv = memra__driver_get();
        if (drv->lib != NULL) {
            rt->drv = (memra__driver *)drv;
            snprintf(rt->driver_why, sizeof rt->driver_why, "ok");
            st = add_cuda_devices(rt, force);
            if (st != MEMRA_STATUS_OK) goto fail;
        } else {
            snprintf(rt->driver_why, sizeof rt->driver_why, "%s", memra__driver_why());
        }
    }
    if (force == NULL || strcmp(force, "host") != 0) {
        st = check_forced_ordinals(rt, force);
        if (st != MEMRA_STATUS_OK) goto fail;
    }
    st = add_host_device(rt);
    if (st != MEMRA_STATUS_OK) goto fail;

    if (memra__jit_create(&rt->jit) != MEMRA_STATUS_OK) {
        snprintf(rt->jit_why, sizeof rt->jit_why, "%s", memra_last_error());
        rt->jit = NULL;
        memra__clear_error();
    }

    memra__tune_open(rt);
    st = memra__load_open(rt);
    if (st != MEMRA_STATUS_OK) goto fail;
    memra__routing_warn_unknown(rt, rt->prefer, rt->disable, 1);
    *out_rt = rt;
    return MEMRA_STATUS_OK;
fail:
    memra_close(rt);
    return st;
}

static void print_stats_at_close(memra_runtime *rt)
{
    if (rt->cfg.stats) memra_ledger_print(rt, stderr);
}

void memra_close(memra_runtime *rt)
{
    if (rt == NULL) return;
    print_stats_at_close(rt);
    /* shadow runs still queued end before the modules' fini unloads their kernels */
    for (int i = 0; i < rt->n_devices; i++)
        if (!rt->devices[i]->is_host && rt->devices[i]->ctx != NULL && rt_driver_ok(rt))
            memra__shadow_release_module(rt->devices[i], NULL);
    memra__registry_close(rt);
    memra__tune_close(rt);
    for (int i = 0; i < rt->n_devices; i++) device_free(rt->devices[i]);
    memra__jit_destroy(rt->jit);
    pthread_mutex_destroy(&rt->reg_lock);
    free(rt->module_path);
    free(rt->prefer);
    free(rt->disable);
    memra__config_unpublish(&rt->cfg);
    memra__log_release(rt);
    memra__config_free(&rt->cfg);
    free(rt);
}

uint64_t memra_device_f16_budget_get(const memra_device *dev)
{
    return dev ? (uint64_t)atomic_load(&((memra_device *)(uintptr_t)dev)->f16_budget_mb) : 0;
}

memra_status memra_device_f16_budget_set(memra_device *dev, uint64_t mb)
{
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_f16_budget_set: NULL device");
    if (mb > (1ull << 40))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_f16_budget_set(%s): %llu MB is out of range",
                           dev->label, (unsigned long long)mb);
    atomic_store(&dev->f16_budget_mb, mb);
    atomic_store(&dev->f16_budget_source, "api");
    return MEMRA_STATUS_OK;
}

memra_status memra_device_floor_f16_m_set(memra_device *dev, int64_t m)
{
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_floor_f16_m_set: NULL device");
    if (m > INT32_MAX)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_floor_f16_m_set(%s): %lld is out of range",
                           dev->label, (long long)m);
    atomic_store(&dev->floor_f16_m, (int_fast64_t)(m < 0 ? (m == MEMRA_FLOOR_F16_M_AUTO ? m : -1) : m));
    return MEMRA_STATUS_OK;
}

memra_status memra_device_w16_set(memra_device *dev, int on)
{
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_w16_set: NULL device");
    atomic_store(&dev->w16, on < 0 ? -1 : on > 0 ? 1 : 0);
    return MEMRA_STATUS_OK;
}

const char *memra_device_f16_budget_source(const memra_device *dev)
{
    if (dev == NULL) return NULL;
    const char *s = atomic_load(&((memra_device *)(uintptr_t)dev)->f16_budget_source);
    return s != NULL ? s : "profile";
}

uint64_t memra_device_f16_used(const memra_device *dev)
{
    return dev ? (uint64_t)atomic_load(&((memra_device *)(uintptr_t)dev)->f16_used) : 0;
}

const char *memra_driver_status(const memra_runtime *rt) { return rt ? rt->driver_why : "no runtime"; }
int memra_driver_version(const memra_runtime *rt) { return rt && rt->drv ? rt->drv->version : 0; }

int memra_device_count(const memra_runtime *rt) { return rt ? rt->n_devices : 0; }

memra_device *memra_device_get(const memra_runtime *rt, int index)
{
    if (rt == NULL || index < 0 || index >= rt->n_devices) return NULL;
    return rt->devices[index];
}

memra_device *memra_device_host(const memra_runtime *rt)
{
    return rt && rt->n_devices > 0 ? rt->devices[rt->n_devices - 1] : NULL;
}

int memra_device_profile_forced(const memra_device *dev) { return dev ? dev->forced : 0; }

const memra_device_caps *memra_device_caps_get(const memra_device *dev) { return dev ? &dev->caps : NULL; }

int memra_device_unserved_count(const memra_runtime *rt) { return rt == NULL ? 0 : rt->n_unserved; }

const char *memra_device_unserved(const memra_runtime *rt, int index)
{
    if (rt == NULL || index < 0 || index >= rt->n_unserved) return NULL;
    return rt->unserved[index];
}
