/* assert.h for an implementation built into the firmware (BYOI.md): assertions compile to
 * nothing (as with NDEBUG); the firmware has no abort. */
#ifndef FW_SDK_ASSERT_H
#define FW_SDK_ASSERT_H

#define assert(e) ((void)0)
#if !defined(__cplusplus) && __STDC_VERSION__ >= 201112L && !defined(static_assert)
#define static_assert _Static_assert
#endif

#endif
