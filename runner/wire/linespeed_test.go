package wire

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkQEMULine measures one round trip on an emulated board's line: a request the
// firmware does not know (it answers ERROR code=unknown after reading the whole line) with no
// field, and with a field of 448 hex digits (what a TLSIN chunk of 224 bytes carries). The
// difference per byte is what QEMU costs to hand the board one received byte: its CMSDK UART
// takes one byte at a time (the 16550 of riscv32-virt one per interrupt at the firmware's
// trigger level), each a round of QEMU's main loop waking the emulated CPU out of WFI, while
// the board's answers go out at once. B/s is the request's bytes per second of round trip.
//
//	go test -run '^$' -bench QEMULine ./runner/wire/
func BenchmarkQEMULine(b *testing.B) {
	for _, qb := range qemuBoards[:3] {
		b.Run(qb.target, func(b *testing.B) {
			qemuTools(b, qb)
			s := startQEMU(b, qb, filepath.Join(buildFirmware(b, qb.target, qb.cc), "pqrepro-fw.elf"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
			defer cancel()
			if _, err := s.conn.Hello(ctx); err != nil {
				b.Fatalf("Hello: %v", err)
			}
			for _, n := range []int{0, 448} {
				var fields []Field
				if n > 0 {
					fields = []Field{{"d", strings.Repeat("a5", n/2)}}
				}
				raw, err := Encode(Frame{Seq: 1, Type: "PING", Fields: fields})
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("hex=%d", n), func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					for range b.N {
						err := s.conn.exchange(ctx, "PING", fields, func(Frame) (bool, error) { return true, nil })
						if de := (*DeviceError)(nil); !errors.As(err, &de) || de.Code != "unknown" {
							b.Fatalf("PING: %v, want ERROR code=unknown", err)
						}
					}
				})
			}
		})
	}
}
