/* The routing room (core/routing/): which module serves which op. The
 * records of the modules seen (records.c), the immutable snapshots dispatch
 * reads and their publishing (registry.c), prefer/deny (prefer.c), the tuning
 * table (tune_table.c, tune_edit.c), dispatch (dispatch.c), the ledger
 * (ledger.c), op names (ops.c) and the observers' verdicts (verdict.c). It
 * calls only core/device/ below it; the rooms above call it. The observers
 * (core/observe/) report verdicts through core/routing/verdict.h, and the one
 * observer of live calls (shadow A/B) is reached through
 * memra__dispatch_observer, never by name. */
#ifndef MEMRA_CORE_ROUTING_H
#define MEMRA_CORE_ROUTING_H

#include "core/state/runtime.h"

/* ---- records.c: records (core/load/ makes and fills them; caller holds reg_lock) ---- */

/* A new record listed in rt->mods (reason "", not loaded), NULL when out of memory. */
memra__modrec *memra__rec_new(memra_runtime *rt, const char *path, const char *name);
/* Take record i out of rt->mods. */
void memra__rec_unlist(memra_runtime *rt, int i);
/* Not loaded, with the reason (logged). */
void memra__rec_refuse(memra__modrec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Per-device fini, then dlclose: what the last reference's going does. */
void memra__rec_retire(memra__modrec *r);
/* A reference (the registry's at load, or a snapshot's); the last unref retires the record. */
void memra__rec_ref(memra__modrec *r);
void memra__rec_unref(memra__modrec *r);
/* A name that lives until memra_close, one copy per distinct name. */
const char *memra__intern(memra_runtime *rt, const char *s);
/* The op table's member for op, NULL when the module lacks it. */
void *memra__op_fn(const memra_op_table *ops, memra_op op);
/* The variants r lists for op on dev (NULL / 0 when none). */
const memra_variant *memra__variants(const memra__modrec *r, const memra_device *dev, memra_op op, size_t *n);
/* The index of variant `name` of r for op on dev, -1 when there is none. */
int memra__variant_index(const memra__modrec *r, const memra_device *dev, memra_op op, const char *name);
/* At close, after the last snapshot went: the registry's references, the
 * list and the interned names. */
void memra__records_free(memra_runtime *rt);

/* ---- registry.c: snapshots ---- */

/* Build a new snapshot of every device and publish them all (a failed build
 * leaves every device on its old routing). Caller holds reg_lock. */
memra_status memra__registry_republish(memra_runtime *rt);
void memra__registry_close(memra_runtime *rt);
memra__snapshot *memra__snapshot_acquire(memra_device *dev);
void memra__snapshot_release(memra__snapshot *snap);
memra__modrec *memra__find_admitted(memra__snapshot *snap, const char *name);

/* ---- prefer.c: prefer/deny ---- */

memra_status memra__routing_validate(const char *prefer, const char *disable);
/* Warn about prefer/disable entries naming a module that is not loaded.
 * Called with the registry's lock held or before the runtime is shared;
 * `record`: keep the warning for memra info (only at memra_open). */
void memra__routing_warn_unknown(memra_runtime *rt, const char *prefer, const char *disable, int record);

/* ---- ledger.c ---- */

/* The cell of (dev, op, module), made on first use and kept until close; NULL when out of memory. */
memra__ledger_cell *memra__ledger_cell_get(memra_device *dev, memra_op op, const char *module);
/* Count a decline of cell c with its reason (the first MEMRA__MAX_REASONS reasons by name). */
void memra__ledger_decline(memra_device *dev, memra__ledger_cell *c, const char *reason);
/* A decline the core itself makes for a module (no lane ran). */
void memra__ledger_core_decline(memra_device *dev, memra_op op, const char *module, const char *reason);

/* ---- dispatch.c ---- */

memra_status memra__lane_invoke(memra_device *dev, const memra__lane *lane, memra_op op, memra_op_args *args);
/* One op on a lane with the call's scope and context but no ledger counting
 * (lane->cell may be NULL): the admission self-check and shadow runs. */
memra_status memra__lane_run(memra_device *dev, const memra__lane *lane, memra_op op, memra_op_args *args);
memra_status memra__dispatch(memra_device *dev, memra_op op, memra_op_args *args);
/* Dispatch on a snapshot the caller holds (one per memra_matmul). */
memra_status memra__dispatch_on(memra_device *dev, memra__snapshot *snap, memra_op op, memra_op_args *args);
/* The module of the first lane of op on dev that takes args (returns OK) rather than declining,
 * NULL when none: each lane run once, without ledger counting (a question, not a call); for
 * args that launch nothing. The name lives as long as the module is loaded. */
const char *memra__dispatch_taken(memra_device *dev, memra_op op, memra_op_args *args);
/* Sizing on this thread (memra_call.sizing): between begin and end every op call asks its module
 * for its scratch requests alone (no ledger counting, no shadow sample); end says whether at least
 * one op was sized and none ran (a module that ignores the member runs the call as usual). For
 * memra_stream_reserve's walk, which needs the scratch of every m and none of the outputs. */
void memra__sizing_begin(void);
int memra__sizing_end(void);

/* The observer of live calls (memra__dispatch_observer, core/state/runtime.h):
 * dispatch calls rt->observer around a call whose snapshot has a shadow lane
 * for the op, so routing never names the room above it. */

/* ---- tune_table.c: the tuning table ---- */

void memra__tune_open(memra_runtime *rt);   /* read the file (before the registry publishes) */
void memra__tune_close(memra_runtime *rt);
/* Resolve the table into s->tuned for dev (caller holds reg_lock, inside snapshot_build). */
memra_status memra__tune_resolve(memra_runtime *rt, memra_device *dev, memra__snapshot *s);
/* The tuned lane for a GEMM call, NULL when routing goes by scores. */
const memra__tuned *memra__tune_find(const memra__snapshot *s, memra_op op, const memra_gemm_args *g);
/* The device key of dev ("NVIDIA H200 cc90 sms132 driver13000 memra0.1.0"). */
void memra__tune_key(const memra_device *dev, char *out, size_t len);
/* Add e, or replace the entry of its (key, op, n, k, m class); 0 when the table is full or out of memory.
 * Caller holds reg_lock. */
int memra__tune_add(memra_runtime *rt, const memra__tune_ent *e);
/* 1 for the GEMM ops the table can hold. */
int memra__tune_op(memra_op op);

#endif
