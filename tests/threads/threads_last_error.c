/*
 * Failed reads from many threads: tes_get and the other calls on a const
 * world may run on several threads at once, and each records its failure
 * for its own thread. Two threads read the same world, each missing on its
 * own handles and components, and after every miss check that
 * tes_last_error and tes_last_error_detail describe their own last miss,
 * never the other thread's or an older one. Built with -fsanitize=thread
 * (make tsan) this is also the race detector's workload for the records.
 *
 * Exit status 0 when every check passed; 1 otherwise.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tessera.h"

#define ROUNDS 20000

typedef struct { float x, y; } Vec2;

typedef struct {
    tes_world_t *w;
    tes_comp_t pos, vel;
    tes_entity_t live, dead[2];
} fixture_t;

typedef struct {
    const fixture_t *f;
    int id;
    int failures;
} worker_t;

static void *reader(void *arg)
{
    worker_t *wk = arg;
    const fixture_t *f = wk->f;
    const tes_world_t *w = f->w;
    tes_entity_t dead = f->dead[wk->id];
    char want_stale[64], want_lacks[96];
    snprintf(want_stale, sizeof want_stale, "entity %u:%u is destroyed", tes_entity_index(dead),
             tes_entity_generation(dead));
    snprintf(want_lacks, sizeof want_lacks, "entity %u:%u has no component 'Vel'",
             tes_entity_index(f->live), tes_entity_generation(f->live));
    for (int r = 0; r < ROUNDS; r++) {
        /* Thread 0 misses on a dead handle first, thread 1 on a missing
         * component first, then the other way round. */
        int first = (r + wk->id) & 1;
        for (int k = 0; k < 2; k++) {
            bool stale = (first ^ k) == 0;
            const void *p = stale ? tes_get(w, dead, f->pos) : tes_get(w, f->live, f->vel);
            const char *d = tes_last_error_detail(w);
            int status = tes_last_error(w);
            bool ok = p == NULL && (stale ? status == TES_ERR_STALE && strstr(d, want_stale)
                                          : status == TES_OK && strstr(d, want_lacks));
            if (!ok && wk->failures++ < 5)
                fprintf(stderr, "thread %d round %d: status %d detail \"%s\"\n", wk->id, r,
                        status, d);
            /* A hit records nothing. */
            if (!tes_get(w, f->live, f->pos) || tes_last_error(w) != status)
                wk->failures++;
        }
    }
    return NULL;
}

int main(void)
{
    fixture_t f;
    f.w = tes_world_new(NULL);
    f.pos = tes_component(f.w, &(tes_component_desc_t){.name = "Pos", .size = sizeof(Vec2)});
    f.vel = tes_component(f.w, &(tes_component_desc_t){.name = "Vel", .size = sizeof(Vec2),
                                                        .storage = TES_STORAGE_SPARSE});
    f.live = tes_spawn(f.w);
    tes_set(f.w, f.live, f.pos, &(Vec2){1, 2});
    for (int i = 0; i < 2; i++) {
        f.dead[i] = tes_spawn(f.w);
        tes_set(f.w, f.dead[i], f.pos, &(Vec2){3, 4});
    }
    for (int i = 0; i < 2; i++)
        tes_destroy(f.w, f.dead[i]);
    /* An older failure of the world's own, which no thread may see. */
    (void)tes_query_new(f.w, NULL);

    worker_t wk[2] = {{&f, 0, 0}, {&f, 1, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, reader, &wk[i]) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    /* The main thread made no failed read: it sees the world's record. */
    int failures = wk[0].failures + wk[1].failures;
    if (strcmp(tes_last_error_detail(f.w), "tes_query_new: desc is NULL") != 0) {
        fprintf(stderr, "main thread sees \"%s\"\n", tes_last_error_detail(f.w));
        failures++;
    }
    tes_world_free(f.w);
    printf("threads_last_error: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
