/* Memory functions the crypto code uses. Declared here rather than taken from
 * <string.h> so that the code builds freestanding (bare-metal ports supply
 * their own implementations, see boards/baremetal/mem.c); the prototypes
 * match the C standard, so a hosted build links the C library's. */
#ifndef PQ_MEM_H
#define PQ_MEM_H

#include <stddef.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

#endif
