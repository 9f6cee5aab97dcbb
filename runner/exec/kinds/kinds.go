// Package kinds is the device layer's complete executor table: for every experiment kind
// (artifacts.Kinds), the executor a board driver (runner/qemu, runner/serialport) runs its
// cells with. It sits apart from runner/device so that a driver links the TLS engine and the
// MQTT client only when the binary that builds the board asks for them.
package kinds

import (
	"pqrepro/artifacts"
	"pqrepro/runner/device"
	"pqrepro/runner/exec/telemetry"
	"pqrepro/runner/exec/tlsmatrix"
)

// Board is a board's executor for every experiment kind: the firmware's BENCH for the
// benchmark kinds, the board's TLS client against the engine for tls-matrix, the board as the
// telemetry device for mqtt-telemetry.
func Board() device.Kinds {
	k := device.BenchKinds()
	k[artifacts.KindTLSMatrix] = tlsmatrix.Board
	k[artifacts.KindMQTTTelemetry] = telemetry.Board
	return k
}
