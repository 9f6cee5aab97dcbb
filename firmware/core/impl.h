/* The implementation table: which implementation of each algorithm this image links, its
 * version and the SHA-256 of its sources. The build generates it (firmware/tools/fwimpl, from
 * implementations.txt) as one text in the ELF section .pqrepro_impl, which the portal reads
 * from an uploaded ELF; the firmware reports the same text's lines in ALGS
 * (firmware/PROTOCOL.md). Format: package firmware/impltable. */
#ifndef FW_IMPL_H
#define FW_IMPL_H

#include <stddef.h>

/* fw_impl_table is the table's text: "pqrepro-impl 1\n", then one
 * "<algorithm> <implementation> <version> <source sha256 hex>\n" line per algorithm. */
extern const char fw_impl_table[];

/* fw_impl is one algorithm's line, as pointers into fw_impl_table with lengths. */
struct fw_impl {
	const char *name, *version, *source;
	size_t name_len, version_len, source_len;
};

/* fw_impl_find fills *out with alg's line and returns 0, or returns -1 when the table has no
 * (well-formed) line for alg. */
int fw_impl_find(const char *alg, struct fw_impl *out);

/* fw_impl_same reports whether two lines name the same implementation, version and sources. */
int fw_impl_same(const struct fw_impl *a, const struct fw_impl *b);

#endif
