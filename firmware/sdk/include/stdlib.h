/* stdlib.h for an implementation built into the firmware (BYOI.md): size_t and NULL only. The
 * firmware has no heap (no malloc) and no exit; code that calls them does not link. */
#ifndef FW_SDK_STDLIB_H
#define FW_SDK_STDLIB_H

#include <stddef.h>

#endif
