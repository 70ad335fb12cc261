/*
 * Error details (see detail.h): snprintf into the world's fixed buffer.
 */
#include "core/detail.h"

#include <stdarg.h>
#include <stdio.h>

void tes__detail_set(tes__detail_t *d, const char *fmt, ...)
{
    if (!d)
        return;
    va_list args;
    va_start(args, fmt);
    vsnprintf(d->text, sizeof d->text, fmt, args);
    va_end(args);
}
