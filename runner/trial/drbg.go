package trial

import (
	"crypto/sha3"
	"encoding/binary"
	"io"
)

// DRBG is a deterministic random stream: SHAKE256 over a domain label, the manifest's seed and
// a purpose string. Two runs of the same manifest draw identical inputs from it.
type DRBG struct{ x *sha3.SHAKE }

var _ io.Reader = (*DRBG)(nil)

// NewDRBG derives the stream for one purpose (e.g. "ML-KEM-768/encaps") from the seed.
func NewDRBG(seed, purpose string) *DRBG {
	x := sha3.NewSHAKE256()
	for _, part := range []string{"pqrepro/v1 input stream", seed, purpose} {
		var l [8]byte
		binary.BigEndian.PutUint64(l[:], uint64(len(part)))
		x.Write(l[:])
		x.Write([]byte(part))
	}
	return &DRBG{x: x}
}

// Read fills p; it never fails.
func (d *DRBG) Read(p []byte) (int, error) { return d.x.Read(p) }

// Bytes returns n fresh bytes.
func (d *DRBG) Bytes(n int) []byte {
	b := make([]byte, n)
	d.x.Read(b)
	return b
}
