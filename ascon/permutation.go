package ascon

import "math/bits"

// state is the 320-bit Ascon state as five 64-bit words S0..S4. How bytes map
// to words (little-endian for SP 800-232, big-endian for v1.2) is the mode's
// business; the permutation only sees words.
type state [5]uint64

// roundConstants are the constants c_i of SP 800-232 Table 5 for the 16-round
// permutation; Ascon-p[n] uses the last n of them, so Ascon-p[12] starts at
// 0xf0 as in v1.2 and the two specifications share one permutation.
var roundConstants = [16]uint64{
	0x3c, 0x2d, 0x1e, 0x0f, 0xf0, 0xe1, 0xd2, 0xc3,
	0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b,
}

// permute applies Ascon-p[rounds] (1 <= rounds <= 16) to s. It is a fixed
// sequence of word operations (bitsliced S-box, rotations), so its time does
// not depend on the state.
func (s *state) permute(rounds int) {
	x0, x1, x2, x3, x4 := s[0], s[1], s[2], s[3], s[4]
	for _, c := range roundConstants[16-rounds:] {
		// Constant addition (p_C).
		x2 ^= c
		// Substitution layer (p_S): the 5-bit S-box, bitsliced.
		x0 ^= x4
		x4 ^= x3
		x2 ^= x1
		t0 := ^x0 & x1
		t1 := ^x1 & x2
		t2 := ^x2 & x3
		t3 := ^x3 & x4
		t4 := ^x4 & x0
		x0 ^= t1
		x1 ^= t2
		x2 ^= t3
		x3 ^= t4
		x4 ^= t0
		x1 ^= x0
		x0 ^= x4
		x3 ^= x2
		x2 = ^x2
		// Linear diffusion layer (p_L).
		x0 ^= bits.RotateLeft64(x0, -19) ^ bits.RotateLeft64(x0, -28)
		x1 ^= bits.RotateLeft64(x1, -61) ^ bits.RotateLeft64(x1, -39)
		x2 ^= bits.RotateLeft64(x2, -1) ^ bits.RotateLeft64(x2, -6)
		x3 ^= bits.RotateLeft64(x3, -10) ^ bits.RotateLeft64(x3, -17)
		x4 ^= bits.RotateLeft64(x4, -7) ^ bits.RotateLeft64(x4, -41)
	}
	s[0], s[1], s[2], s[3], s[4] = x0, x1, x2, x3, x4
}
