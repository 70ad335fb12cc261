/*
 * A small pool of worker threads that run one job at a time on every
 * thread at once: the caller is thread 0, workers are 1..count. The
 * scheduler hands it one job per level of independent systems; the job
 * itself shares the work out (an atomic cursor over work units), so the
 * pool only needs "start everyone, wait for everyone".
 *
 * Tuned for frames: a handful of jobs per frame, each long compared to a
 * wake-up. Idle workers sleep on a condition variable (no spinning between
 * frames). A frame's jobs follow each other closely (the next level of
 * systems starts when the caller's own last piece of the level ends), so
 * the scheduler holds the pool for the length of a frame
 * (tes__pool_hold): a worker that finishes a job then watches for the next
 * one, for up to TES__POOL_HOLD_NS, instead of sleeping, and the caller
 * likewise watches for its workers to finish before it sleeps. On a busy
 * machine a sleep costs far more than the futex call: the woken thread
 * waits for its core behind whatever ran there meanwhile (hundreds of
 * microseconds were measured beside other processes), once per level.
 * Outside a hold a finished worker watches only for TES__POOL_SPIN_NS.
 * The watching threads give their core away now and then (sched_yield)
 * only when the pool has more threads than the machine has cores: then
 * the thread that will post the next job, or finish this one, may need
 * it; otherwise yielding hands the core to another process for a whole
 * time slice.
 *
 * The pool's memory comes from the world's allocator; the threads' own
 * stacks come from the C library (pthread_create), as with any thread.
 */
#ifndef TES_CORE_THREAD_POOL_H
#define TES_CORE_THREAD_POOL_H

#include "core/alloc.h"

/* How long an idle worker watches for the next job before it sleeps:
 * outside a hold, and at most while the pool is held. */
#define TES__POOL_SPIN_NS 50000
#define TES__POOL_HOLD_NS 1000000

typedef void (*tes__job_fn)(void *ctx, int32_t thread);

typedef struct tes__pool tes__pool_t;

/* Starts `workers` threads (>= 1). NULL when memory or a thread could not
 * be had; nothing is left running then. */
tes__pool_t *tes__pool_new(tes__alloc_t *a, int32_t workers);

/* Stops and joins every worker, then frees the pool. NULL is a no-op. */
void tes__pool_free(tes__pool_t *p, tes__alloc_t *a);

/* Runs job(ctx, t) on every thread t in 0..workers (the caller is 0) and
 * returns when all have returned. Not reentrant: one job at a time. */
void tes__pool_run(tes__pool_t *p, tes__job_fn job, void *ctx);

/* Holds the pool (true) while a frame's jobs follow each other, so that
 * workers watch for the next job rather than sleep; false at the frame's
 * end lets them sleep after TES__POOL_SPIN_NS. Only the caller of
 * tes__pool_run calls it, between jobs. */
void tes__pool_hold(tes__pool_t *p, bool hold);

/* Worker count (the caller not included). */
int32_t tes__pool_workers(const tes__pool_t *p);

/* The calling thread's number in the pool: 0 for any thread that is not
 * one of its workers, else 1..workers. A thread-local read. */
int32_t tes__pool_thread(const tes__pool_t *p);

/* A mutex the pool owns for its users (the world's allocator takes it while
 * workers may allocate). */
pthread_mutex_t *tes__pool_mutex(tes__pool_t *p);

#endif
