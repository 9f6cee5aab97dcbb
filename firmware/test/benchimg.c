/* benchimg: the count images' output over the UART (benchimg.h). */
#include "benchimg.h"

#include "../crypto/pqmem.h"

void put(const char *s)
{
	plat_write(s, strlen(s));
}

void put_u64(uint64_t v)
{
	char b[24];
	int i = sizeof b;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	plat_write(b + i, sizeof b - (size_t)i);
}

void put_int(int v)
{
	if (v < 0) {
		put("-");
		put_u64((uint64_t)(-(int64_t)v));
	} else {
		put_u64((uint64_t)v);
	}
}

void put_hex(const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n; i++) {
		char h[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
		plat_write(h, 2);
	}
}

void put_num(const char *label, uint64_t v)
{
	put(label);
	put_u64(v);
}

void put_board(void)
{
	put(" board=");
	put(fw_board_info.board);
	put(" unit=");
	put(fw_board_info.unit);
}

void bench_done(void)
{
	put("DONE\n");
	for (;;)
		plat_idle();
}
