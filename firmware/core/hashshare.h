/* The hashing pass (PROTOCOL.md, BENCH hash=1): the share of an operation's instructions spent
 * in the firmware's SHA-3 and SHA-2 (crypto/keccak, crypto/sha2), as pqm4's hashing table
 * gives it, measured in an untimed pass so that the timed counts do not change.
 *
 * How: the Makefile compiles both hash sources a second time under other names (hashtwin.h)
 * and hashshare.c wraps each entry point of that copy to add the board counter's advance
 * across it to a tally. For the pass only,
 * the first instruction of every global function of the timed copy is overwritten with a
 * branch to its wrapped twin, and restored after. Outside the pass the timed copy is
 * byte for byte what the compiler made of the unchanged sources, and nothing on the timed path
 * tests a flag: timed counts are those of a build without this file. Only a board whose code
 * is writable RAM sets FW_HASH_PATCH (the emulated Cortex-M and RISC-V boards); elsewhere
 * fw_hash_available is 0 and BENCH hash=1 is refused. */
#ifndef FW_HASHSHARE_H
#define FW_HASHSHARE_H

#include <stdint.h>

/* fw_hash_tally is what the wrapped twins counted since fw_hash_begin. */
struct fw_hash_tally {
	uint64_t count; /* counter advance inside outermost hash calls, in fw_board_info.unit */
	uint32_t calls; /* outermost hash calls (each one adds up to one counter step of error) */
};

/* fw_hash_available reports whether this build can run the hashing pass. */
int fw_hash_available(void);
/* fw_hash_begin zeroes the tally and redirects the hash entry points to their wrapped twins;
 * fw_hash_end restores them and returns the tally. Returns -1 if the code could not be
 * patched (then nothing was changed). Neither may be called from inside a hash function. */
int fw_hash_begin(void);
struct fw_hash_tally fw_hash_end(void);

#endif
