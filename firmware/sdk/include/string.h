/* string.h for an implementation built into the firmware (BYOI.md): the freestanding build has
 * no C library; the firmware supplies these functions (boards/baremetal/mem.c) and nothing else
 * of string.h. */
#ifndef FW_SDK_STRING_H
#define FW_SDK_STRING_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif
