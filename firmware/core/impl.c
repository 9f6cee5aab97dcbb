#include "impl.h"

#include "../crypto/pqmem.h"

/* field scans one space-terminated field of [p, end): its length, or 0 when empty or unterminated. */
static size_t field(const char *p, const char *end)
{
	size_t n = 0;
	while (p + n < end && p[n] != ' ')
		n++;
	return n;
}

int fw_impl_find(const char *alg, struct fw_impl *out)
{
	const char *p = fw_impl_table;
	size_t al = strlen(alg);

	while (*p && *p != '\n') /* the magic line */
		p++;
	while (*p == '\n') {
		const char *line = p + 1, *end = line;
		while (*end && *end != '\n')
			end++;
		if (*end != '\n')
			return -1;
		p = end;
		if ((size_t)(end - line) <= al || memcmp(line, alg, al) != 0 || line[al] != ' ')
			continue;
		line += al + 1;
		out->name = line;
		out->name_len = field(line, end);
		line += out->name_len + 1;
		if (out->name_len == 0 || line >= end)
			return -1;
		out->version = line;
		out->version_len = field(line, end);
		line += out->version_len + 1;
		if (out->version_len == 0 || line >= end)
			return -1;
		out->source = line;
		out->source_len = (size_t)(end - line);
		return out->source_len == 64 ? 0 : -1;
	}
	return -1;
}

int fw_impl_same(const struct fw_impl *a, const struct fw_impl *b)
{
	return a->name_len == b->name_len && a->version_len == b->version_len && a->source_len == b->source_len &&
	       memcmp(a->name, b->name, a->name_len) == 0 && memcmp(a->version, b->version, a->version_len) == 0 &&
	       memcmp(a->source, b->source, a->source_len) == 0;
}
