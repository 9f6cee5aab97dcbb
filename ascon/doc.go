// Package ascon is the project's own Ascon: the Ascon-p permutation and, on
// it, the NIST SP 800-232 algorithms (Ascon-AEAD128, Ascon-Hash256,
// Ascon-XOF128, Ascon-CXOF128) and the pre-standard Ascon v1.2 AEAD modes
// Ascon-128 and Ascon-128a. It imports only the standard library.
//
// # Specifications
//
// SP 800-232 (final, August 2025) loads bytes into the 64-bit state words
// little-endian (the first byte is the least significant; a padding 1 bit
// follows the last data bit at the low end of the next byte), with the IVs
// of SP 800-232. Version 1.2 (the CAESAR and NIST LWC submission) loads them
// big-endian, pads with 0x80, and puts the domain-separation bit at the
// other end of S4. One table of modes (IV, rate, rounds of p^b, byte order)
// drives one AEAD routine for all three AEAD modes, so timing two of them
// compares the specifications, not two implementations: Ascon-128a v1.2 and
// Ascon-AEAD128 share rate (128 bits) and rounds (p^12/p^8) and differ in
// byte order and IV; Ascon-128 v1.2 has half the rate and p^6.
//
// v1.2 is not SP 800-232: [NewAscon128] and [NewAscon128a] exist as the
// "before" of a before/after comparison and are cross-checked against
// circl's cipher/ascon in the tests.
//
// # Options
//
// [NewAEAD128WithTagSize] truncates the tag to 4..16 bytes (the first bytes
// of the full tag). A 32-byte key K||K2 given to [NewAEAD128] selects nonce
// masking: the nonce is XORed with K2 and the cipher runs under K (NIST's
// ACVP calls K2 "secondKey"). The tests also run ACVP's bit-length cases
// through unexported bit-length variants of the same code; the public API
// takes whole bytes.
//
// # Constant time
//
// The permutation is a fixed sequence of 64-bit XOR, AND, NOT and rotation,
// with no table look-ups and no secret-dependent branches or indices. Open
// compares tags with crypto/subtle and, on a bad tag, zeroes the plaintext
// it wrote and returns [ErrOpen]: no unauthenticated plaintext is returned.
// Lengths (of plaintext, associated data, customization string, output)
// are public and the running time depends on them. Nothing is done against
// power or fault attacks, and the key is not erased from memory.
//
// The firmware's C version of the same code is firmware/crypto/ascon; both
// are checked against the same KAT files.
package ascon
