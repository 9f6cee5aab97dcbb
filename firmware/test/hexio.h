/* hexio: the hex arguments of the host test drivers (katcli.c, rsacli.c, p256cli.c,
 * c25519cli.c), which read one command a line with its byte strings in hex, "-" for empty. Host
 * code only (the C library): the firmware parses its own protocol (core/proto.c). */
#ifndef HEXIO_H
#define HEXIO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* hexio_digit is the value of the hex digit c (either case), or -1. */
static inline int hexio_digit(char c)
{
	static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";
	const char *p;
	if (c == '\0')
		return -1;
	if ((p = strchr(lower, c)) != NULL)
		return (int)(p - lower);
	if ((p = strchr(upper, c)) != NULL)
		return (int)(p - upper);
	return -1;
}

/* hexio_unhex decodes s into out, at most cap bytes: the number of bytes, 0 for "-", or -1 when s
 * is NULL, of odd length, longer than cap bytes or holds anything but hex digits. */
static inline long hexio_unhex(uint8_t *out, size_t cap, const char *s)
{
	size_t n, i;
	if (s == NULL)
		return -1;
	if (strcmp(s, "-") == 0)
		return 0;
	n = strlen(s);
	if (n % 2 != 0 || n / 2 > cap)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexio_digit(s[2 * i]), lo = hexio_digit(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

#endif
