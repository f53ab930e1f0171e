/*
 * Stand-in for QEMU's osdep.h, for building the package model's pure
 * arithmetic (pkg-power.c) on its own in test-pkg-power.c: just what that
 * file takes from osdep.h.
 */
#ifndef STUB_QEMU_OSDEP_H
#define STUB_QEMU_OSDEP_H
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
