/*
 * The 12-byte value the quiet-path tests move around: vec(f) makes one
 * whose fields are f, f + 1 and f + 2, so a value read back names the
 * entity it belongs to, and assert_vec checks one (through memcpy: a cell
 * need not be aligned for floats). Include it after cmocka.h.
 */
#ifndef TES_TEST_VEC3_H
#define TES_TEST_VEC3_H

#include <string.h>

typedef struct {
    float x, y, z;
} vec3_t;

static inline vec3_t vec(float f) { return (vec3_t){f, f + 1.0f, f + 2.0f}; }

static inline void assert_vec(const void *p, float f)
{
    assert_non_null(p);
    vec3_t v;
    memcpy(&v, p, sizeof v);
    assert_true(v.x == f && v.y == f + 1.0f && v.z == f + 2.0f);
}

#endif
