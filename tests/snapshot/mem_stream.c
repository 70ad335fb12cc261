/* In-memory snapshot streams (see mem_stream.h). */
#include "snapshot/mem_stream.h"

#include <stdlib.h>
#include <string.h>

int sw_buf_write(const void *data, size_t size, void *user)
{
    sw_buf_t *b = user;
    if (b->cap - b->size < size) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->size < size) {
            if (cap > SIZE_MAX / 2)
                return TES_ERR_NOMEM;
            cap *= 2;
        }
        uint8_t *p = realloc(b->data, cap);
        if (!p)
            return TES_ERR_NOMEM;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->size, data, size);
    b->size += size;
    return TES_OK;
}

void sw_buf_free(sw_buf_t *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

int sw_src_read(void *data, size_t size, void *user)
{
    sw_src_t *s = user;
    if (s->size - s->pos < size)
        return TES_ERR_IO;
    memcpy(data, s->data + s->pos, size);
    s->pos += size;
    return TES_OK;
}

int sw_save(const tes_world_t *w, sw_buf_t *out)
{
    memset(out, 0, sizeof *out);
    tes_writer_t wr = {sw_buf_write, out};
    return tes_snapshot_save(w, &wr);
}

int sw_load(tes_world_t *w, const uint8_t *data, size_t size)
{
    sw_src_t src = {data, size, 0};
    tes_reader_t rd = {sw_src_read, &src};
    return tes_snapshot_load(w, &rd);
}
