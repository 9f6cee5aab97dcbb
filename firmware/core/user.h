/* What the adapters of a build with one's own implementation share (BYOI.md): the coins the
 * firmware's randombytes serves (core/user_rng.c). */
#ifndef FW_USER_H
#define FW_USER_H

#include <stddef.h>
#include <stdint.h>

/* fw_user_rb_set makes randombytes serve coins[0..n) next, then the DRBG; (0, 0) the DRBG
 * alone. */
void fw_user_rb_set(const uint8_t *coins, size_t n);

#define FW_CAT_(a, b) a##b
#define FW_CAT(a, b) FW_CAT_(a, b)
/* USER(x) is the implementation's API function x after the build renamed its symbols. */
#define USER(x) FW_CAT(FW_USER_NS, x)
#define SIZE(x) FW_CAT(FW_USER_SIZES, x)

#endif
