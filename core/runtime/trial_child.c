/* The second phase of a trial load, inside the memra-trial helper
 * (core/load/trial.c runs the helper; core/load/trial_helper.c is its
 * program): a runtime like the parent's, the module loaded from the parent's
 * descriptor without a trial, the outcome on the report pipe. It opens a
 * whole runtime, so it lives with memra_open, above the load room. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/load/load.h"

/* Exported by name in libmemra.map, in no public header: memra-trial finds
 * it with dlsym. See core/load/trial.h for the report lines. */
int memra__trial_child(int module_fd, int report_fd, int hot, int n_devices, int no_cuda);

int memra__trial_child(int module_fd, int report_fd, int hot, int n_devices, int no_cuda)
{
    memra__trial_report_open(report_fd);
    memra__trial_stage("runtime");
    memra_options o = {.struct_size = sizeof o, .no_cuda = no_cuda, .no_default_modules = 1};
    memra_runtime *rt = NULL;
    if (memra_open(&o, &rt) != MEMRA_STATUS_OK) {
        memra__trial_say("noruntime memra_open failed in the helper: %s", memra_last_error());
        return 0;
    }
    if (rt->n_devices != n_devices) {
        memra__trial_say("noruntime the helper sees %d devices, the process %d", rt->n_devices, n_devices);
        return 0;
    }
    char real[PATH_MAX], proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", module_fd);
    ssize_t l = readlink(proc, real, sizeof real - 1);
    real[l > 0 ? l : 0] = '\0';
    pthread_mutex_lock(&rt->reg_lock);
    memra__modrec *r = memra__load_fd(rt, module_fd, real[0] ? real : "(trial)", hot);
    if (r == NULL) memra__trial_say("error out of memory");
    else if (r->loaded) memra__trial_say("done");
    else if (r->adm_state == MEMRA__ADM_QUARANTINED) memra__trial_say("quarantined %s", r->reason);
    else memra__trial_say("error %s", r->reason);
    pthread_mutex_unlock(&rt->reg_lock);
    /* no memra_close: fini is not the trial's business; the helper _exits */
    return 0;
}
