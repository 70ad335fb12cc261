/*
 * The scheduler's entry points (schedule.c): the levels and run order of
 * the registry's systems, one frame run level by level, and the clock its
 * cost model, tes_system_stats and the frame time read. system.c, the layer above, calls
 * them from tes_progress; the scheduler knows systems only through their
 * layout (system_types.h), never through system.c.
 */
#ifndef TES_SYSTEM_SCHEDULE_H
#define TES_SYSTEM_SCHEDULE_H

#include "system/system_types.h"

/* Computes every system's level and the run order. TES_OK or
 * TES_ERR_NOMEM (nothing changed). */
int tes__schedule(tes_world_t *w, tes__systems_t *ss);

/* The wall clock in ns (0 if it cannot be read), and the ns since a
 * reading of it (0 if the clock went back or the span is absurd). Used for
 * the scheduler's cost model and tes_system_stats. */
uint64_t tes__clock_ns(void);
uint64_t tes__clock_since(uint64_t start);

/* Runs one frame; see tes_progress. */
int tes__schedule_run(tes_world_t *w, tes__systems_t *ss);

#endif
