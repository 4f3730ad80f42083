/* The ledger: for each (device, op, module), entries, hits, errors and each
 * decline reason; the cells snapshots point at, and the public readers. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/routing/routing.h"

memra__ledger_cell *memra__ledger_cell_get(memra_device *dev, memra_op op, const char *module)
{
    pthread_mutex_lock(&dev->ledger_lock);
    memra__ledger_cell *c = dev->cells, *last = NULL;
    for (; c != NULL; last = c, c = c->next)
        if (c->op == op && strcmp(c->module, module) == 0) break;
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c != NULL) {
            c->op = op;
            snprintf(c->module, sizeof c->module, "%s", module);
            /* Append, so the ledger prints in first-seen order. */
            if (last) last->next = c;
            else dev->cells = c;
        }
    }
    pthread_mutex_unlock(&dev->ledger_lock);
    return c;
}

void memra__ledger_decline(memra_device *dev, memra__ledger_cell *c, const char *reason)
{
    if (reason == NULL || reason[0] == '\0') reason = "(no reason given)";
    pthread_mutex_lock(&dev->ledger_lock);
    int i;
    for (i = 0; i < c->n_reasons; i++)
        if (strncmp(c->reasons[i], reason, sizeof c->reasons[i] - 1) == 0) break;
    if (i == c->n_reasons) {
        if (c->n_reasons < MEMRA__MAX_REASONS) {
            snprintf(c->reasons[c->n_reasons], sizeof c->reasons[0], "%s", reason);
            c->n_reasons++;
        } else {
            i = MEMRA__MAX_REASONS - 1; /* the last slot collects the overflow */
            snprintf(c->reasons[i], sizeof c->reasons[0], "%s", "(other reasons)");
        }
    }
    atomic_fetch_add(&c->reason_count[i], 1);
    pthread_mutex_unlock(&dev->ledger_lock);
}

/* A decline recorded by the core itself (e.g. the weight's NaN verdict). */
void memra__ledger_core_decline(memra_device *dev, memra_op op, const char *module, const char *reason)
{
    memra__ledger_cell *c = memra__ledger_cell_get(dev, op, module);
    if (c == NULL) return;
    atomic_fetch_add(&c->entries, 1);
    memra__ledger_decline(dev, c, reason);
}

typedef struct ledger_copy {
    memra_ledger_row row;
    char module[64];
    char reason[96];
} ledger_copy;

void memra_ledger_visit(const memra_runtime *rt, void (*fn)(const memra_ledger_row *row, void *user), void *user)
{
    if (rt == NULL || fn == NULL) {
        MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_ledger_visit: %s is NULL", rt == NULL ? "rt" : "fn");
        return;
    }
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        /* Copy under the lock, call back after it: a callback may call memra. */
        size_t n = 0, cap = 0;
        ledger_copy *rows = NULL;
        pthread_mutex_lock(&dev->ledger_lock);
        for (memra__ledger_cell *c = dev->cells; c != NULL; c = c->next) {
            uint64_t entries = atomic_load(&c->entries);
            if (entries == 0) continue;
            for (int i = -1; i < c->n_reasons; i++) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 32;
                    ledger_copy *nr = realloc(rows, cap * sizeof *nr);
                    if (nr == NULL) break;
                    rows = nr;
                }
                if (n == cap) break;
                ledger_copy *r = &rows[n++];
                memset(r, 0, sizeof *r);
                snprintf(r->module, sizeof r->module, "%s", c->module);
                r->row = (memra_ledger_row){.device = dev->label,
                                            .op = memra_op_name(c->op),
                                            .entries = entries,
                                            .hits = atomic_load(&c->hits),
                                            .errors = atomic_load(&c->errors)};
                if (i >= 0) {
                    snprintf(r->reason, sizeof r->reason, "%s", c->reasons[i]);
                    r->row.declines = atomic_load(&c->reason_count[i]);
                }
            }
        }
        pthread_mutex_unlock(&dev->ledger_lock);
        for (size_t i = 0; i < n; i++) {
            rows[i].row.module = rows[i].module;
            rows[i].row.reason = rows[i].reason[0] ? rows[i].reason : NULL;
            fn(&rows[i].row, user);
        }
        free(rows);
    }
}

uint64_t memra_ledger_hits(const memra_device *dev, memra_op op, const char *module)
{
    if (dev == NULL || module == NULL) return 0;
    memra_device *d = (memra_device *)(uintptr_t)dev;
    uint64_t hits = 0;
    pthread_mutex_lock(&d->ledger_lock);
    for (memra__ledger_cell *c = d->cells; c != NULL; c = c->next)
        if (c->op == op && strcmp(c->module, module) == 0) hits = atomic_load(&c->hits);
    pthread_mutex_unlock(&d->ledger_lock);
    return hits;
}

void memra_ledger_reset(memra_runtime *rt)
{
    if (rt == NULL) return;
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        pthread_mutex_lock(&dev->ledger_lock);
        for (memra__ledger_cell *c = dev->cells; c != NULL; c = c->next) {
            atomic_store(&c->entries, 0);
            atomic_store(&c->hits, 0);
            atomic_store(&c->errors, 0);
            for (int i = 0; i < MEMRA__MAX_REASONS; i++) atomic_store(&c->reason_count[i], 0);
            c->n_reasons = 0;
        }
        pthread_mutex_unlock(&dev->ledger_lock);
    }
}

static void print_row(const memra_ledger_row *r, void *user)
{
    FILE *f = user;
    if (r->reason == NULL)
        fprintf(f, "  %-14s %-16s %-14s %10llu %10llu %8llu\n", r->device, r->op, r->module,
                (unsigned long long)r->entries, (unsigned long long)r->hits, (unsigned long long)r->errors);
    else
        fprintf(f, "  %-14s %-16s %-14s   declined %llu: %s\n", "", "", "", (unsigned long long)r->declines,
                r->reason);
}

void memra_ledger_print(const memra_runtime *rt, void *file)
{
    FILE *f = file ? (FILE *)file : stderr;
    fprintf(f, "memra dispatch ledger\n  %-14s %-16s %-14s %10s %10s %8s\n", "device", "op", "module", "entries",
            "hits", "errors");
    memra_ledger_visit(rt, print_row, f);
}
