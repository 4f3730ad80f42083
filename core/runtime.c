/* memra_open / memra_close: driver, devices, profiles, then the registry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/runtime.h"
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
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) pthread_mutex_init(&dev->shadow[op].lock, NULL);
    dev->caps.struct_size = sizeof dev->caps;
    return dev;
}

/* What the configuration fixes per device: the f16 budget, scratch's entry points. */
static void device_config(const memra_runtime *rt, memra_device *dev)
{
    atomic_store(&dev->f16_budget_mb, rt->cfg.f16_budget_mb >= 0 ? (uint64_t)rt->cfg.f16_budget_mb
                                                                 : (uint64_t)dev->profile->f16_budget_mb);
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
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) pthread_mutex_destroy(&dev->shadow[op].lock);
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
        if (p != NULL && force_arch != NULL) p = memra__profile_by_name(force_arch); /* forcing never admits cc < 8.0 */
        if (p == NULL) {
            memra__log(MEMRA_LOG_WARN, "core", "cuda:%d %s (cc %d.%d) is older than cc 8.0: not used", i, name,
                       major, minor);
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

    if (rt->opts.no_cuda) {
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
    st = add_host_device(rt);
    if (st != MEMRA_STATUS_OK) goto fail;

    if (memra__jit_create(&rt->jit) != MEMRA_STATUS_OK) {
        snprintf(rt->jit_why, sizeof rt->jit_why, "%s", memra_last_error());
        rt->jit = NULL;
        memra__clear_error();
    }

    memra__tune_open(rt);
    st = memra__registry_open(rt);
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
    return MEMRA_STATUS_OK;
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

const memra_device_caps *memra_device_caps_get(const memra_device *dev) { return dev ? &dev->caps : NULL; }

memra_status memra_device_synchronize(memra_device *dev)
{
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_synchronize: NULL device");
    if (dev->is_host) return MEMRA_STATUS_OK;
    memra_status st = memra__device_enter(dev);
    if (st != MEMRA_STATUS_OK) return st;
    CUresult r = memra__driver_get()->cuCtxSynchronize();
    memra__device_leave(dev);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(memra__driver_get(), r, "cuCtxSynchronize");
    return MEMRA_STATUS_OK;
}
