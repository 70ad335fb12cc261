/*
 * The worker pool; see thread_pool.h. One mutex guards the job slot, the
 * epoch (bumped once per job, so a worker that wakes spuriously knows
 * whether there is new work) and the count of workers still running. The
 * job's own data is shared through the mutex hand-over, which orders
 * everything the caller wrote before tes__pool_run before anything a worker
 * reads, and everything a worker wrote before the caller returns.
 */
#include "core/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

typedef struct worker {
    tes__pool_t *pool;
    pthread_t thread;
    int32_t index; /* 1..count */
} worker_t;

struct tes__pool {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* workers wait here for a new epoch */
    pthread_cond_t idle; /* the caller waits here for running == 0 */
    _Atomic uint64_t epoch; /* written under the lock; idle workers peek */
    int32_t running;     /* workers that have not finished this epoch's job */
    atomic_int finished; /* lets the caller spin a little before it sleeps */
    bool stop;
    atomic_bool hold;    /* tes__pool_hold: watch longer between jobs */
    bool yield;          /* more threads than cores: watchers yield */
    tes__job_fn job;
    void *ctx;
    int32_t count;
    worker_t *workers;
    pthread_mutex_t user_lock; /* tes__pool_mutex */
};

/* Which pool's worker the running thread is, and its number there: a
 * worker belongs to one pool for its whole life. */
static _Thread_local const tes__pool_t *pool_of_thread;
static _Thread_local int32_t pool_thread_index;

static uint64_t now_ns(void)
{
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#endif
}

/* Watches for a job newer than `seen` for up to TES__POOL_SPIN_NS, or
 * TES__POOL_HOLD_NS while the pool is held (and a bounded number of
 * steps, whatever the clock does). True if one came. */
static bool spin_for_job(tes__pool_t *p, uint64_t seen)
{
    uint64_t start = now_ns();
    for (uint32_t i = 1; i < (1u << 24); i++) {
        if (atomic_load_explicit(&p->epoch, memory_order_acquire) != seen)
            return true;
        if ((i & 127) == 0) {
            uint64_t spent = now_ns() - start;
            if (spent > TES__POOL_HOLD_NS ||
                (spent > TES__POOL_SPIN_NS && !atomic_load_explicit(&p->hold, memory_order_relaxed)))
                return false;
            if (p->yield)
                sched_yield();
        }
        cpu_relax();
    }
    return false;
}

/* The caller's wait for the workers' ends before it sleeps: as long as a
 * worker would watch for a job (see spin_for_job). */
static void spin_for_workers(tes__pool_t *p)
{
    uint64_t start = now_ns();
    uint64_t limit = atomic_load_explicit(&p->hold, memory_order_relaxed) ? TES__POOL_HOLD_NS
                                                                          : TES__POOL_SPIN_NS;
    for (uint32_t i = 1; i < (1u << 24); i++) {
        if (atomic_load_explicit(&p->finished, memory_order_acquire) == p->count)
            return;
        if ((i & 127) == 0) {
            if (now_ns() - start > limit)
                return;
            if (p->yield)
                sched_yield();
        }
        cpu_relax();
    }
}

static void *worker_main(void *arg)
{
    worker_t *self = arg;
    tes__pool_t *p = self->pool;
    pool_of_thread = p;
    pool_thread_index = self->index;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->epoch == seen && !p->stop)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->epoch;
        tes__job_fn job = p->job;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->lock);
        job(ctx, self->index);
        pthread_mutex_lock(&p->lock);
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
        if (--p->running == 0)
            pthread_cond_signal(&p->idle);
        /* The next level of a frame usually follows at once: watch for it
         * briefly, without the lock, before sleeping on the condition. */
        pthread_mutex_unlock(&p->lock);
        spin_for_job(p, seen);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Stops the first `started` workers and releases everything. */
static void shut_down(tes__pool_t *p, tes__alloc_t *a, int32_t started)
{
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int32_t i = 0; i < started; i++)
        pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->user_lock);
    tes__free(a, p->workers, (size_t)p->count * sizeof *p->workers);
    tes__free(a, p, sizeof *p);
}

tes__pool_t *tes__pool_new(tes__alloc_t *a, int32_t workers)
{
    if (workers < 1)
        return NULL;
    tes__pool_t *p = tes__calloc(a, sizeof *p);
    if (!p)
        return NULL;
    p->workers = tes__calloc(a, (size_t)workers * sizeof *p->workers);
    if (!p->workers) {
        tes__free(a, p, sizeof *p);
        return NULL;
    }
    p->count = workers;
    atomic_init(&p->finished, 0);
    atomic_init(&p->epoch, 0);
    atomic_init(&p->hold, false);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->yield = cores < 1 || (int64_t)workers + 1 > (int64_t)cores;
    if (pthread_mutex_init(&p->user_lock, NULL)) {
        tes__free(a, p->workers, (size_t)workers * sizeof *p->workers);
        tes__free(a, p, sizeof *p);
        return NULL;
    }
    if (pthread_mutex_init(&p->lock, NULL)) {
        pthread_mutex_destroy(&p->user_lock);
        tes__free(a, p->workers, (size_t)workers * sizeof *p->workers);
        tes__free(a, p, sizeof *p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL)) {
        pthread_mutex_destroy(&p->user_lock);
        pthread_mutex_destroy(&p->lock);
        tes__free(a, p->workers, (size_t)workers * sizeof *p->workers);
        tes__free(a, p, sizeof *p);
        return NULL;
    }
    if (pthread_cond_init(&p->idle, NULL)) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->user_lock);
        pthread_mutex_destroy(&p->lock);
        tes__free(a, p->workers, (size_t)workers * sizeof *p->workers);
        tes__free(a, p, sizeof *p);
        return NULL;
    }
    for (int32_t i = 0; i < workers; i++) {
        p->workers[i] = (worker_t){p, 0, i + 1};
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i])) {
            shut_down(p, a, i);
            return NULL;
        }
    }
    return p;
}

void tes__pool_free(tes__pool_t *p, tes__alloc_t *a)
{
    if (p)
        shut_down(p, a, p->count);
}

void tes__pool_run(tes__pool_t *p, tes__job_fn job, void *ctx)
{
    pthread_mutex_lock(&p->lock);
    p->job = job;
    p->ctx = ctx;
    p->running = p->count;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->epoch, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    job(ctx, 0);

    /* The workers usually finish within a piece of work of the caller:
     * watching for that saves a sleep and a wake-up. */
    spin_for_workers(p);
    pthread_mutex_lock(&p->lock);
    while (p->running)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void tes__pool_hold(tes__pool_t *p, bool hold)
{
    atomic_store_explicit(&p->hold, hold, memory_order_relaxed);
}

int32_t tes__pool_workers(const tes__pool_t *p) { return p ? p->count : 0; }

int32_t tes__pool_thread(const tes__pool_t *p)
{
    return p && pool_of_thread == p ? pool_thread_index : 0;
}

pthread_mutex_t *tes__pool_mutex(tes__pool_t *p) { return &p->user_lock; }
