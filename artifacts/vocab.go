package artifacts

import (
	"fmt"
	"math"
	"strings"
)

// The typed vocabulary. Each type is a string so that manifests, result.json and the protocol
// keep their wire forms; the types make a kind, a method, a driver, a unit, an assurance level
// and a cell status impossible to confuse with one another or with free text, and the lists
// below are what every layer's dispatch table is checked against.

// Kind is an experiment kind: what a manifest asks to be measured. Every kind is one entry of
// the KindDef table (Kinds, LookupKind).
type Kind string

// Experiment kinds. KindTLSMatrix (tlsmatrix.go) and KindMQTTTelemetry (mqtt.go) are defined
// beside their specs.
const (
	KindKEMBench       Kind = "kem-bench"
	KindSigBench       Kind = "sig-bench"
	KindKEMSigSequence Kind = "kem-sig-sequence"
)

// Method is how a cell's operations are timed.
type Method string

// Timing methods. MethodLoopbackTCP (tlsmatrix.go) is the TLS matrix's own.
const (
	// MethodInProcess times each operation inside one long-lived process.
	MethodInProcess Method = "in-process"
	// MethodProcessPerOperation starts a fresh process for every timed operation, the way
	// paper002 timed whole openssl commands, so process start-up is part of every sample.
	MethodProcessPerOperation Method = "process-per-operation"
	// MethodOpenSSLCLI runs the openssl command line as paper002's script did (genpkey, then
	// pkey -pubout, pkeyutl -sign, pkeyutl -verify, ...), one process per command, each
	// iteration timed as the paper timed its loop.
	MethodOpenSSLCLI Method = "openssl-cli"
)

// Methods lists the timing methods in a stable order.
func Methods() []Method {
	return []Method{MethodInProcess, MethodProcessPerOperation, MethodOpenSSLCLI, MethodLoopbackTCP}
}

// Driver is how a runner reaches a board: the driver a hardware map names.
type Driver string

// Board drivers.
const (
	// DriverHost is the runner's own machine: the default board, which needs nothing plugged in.
	DriverHost Driver = "host"
	// DriverQEMU is an emulated board: the firmware in QEMU over a pty.
	DriverQEMU Driver = "qemu"
	// DriverSerial is a physical board on a serial port.
	DriverSerial Driver = "serial"
)

// Level is the assurance level of a board reached through d, "" for a driver this build does
// not know.
func (d Driver) Level() Level {
	switch d {
	case DriverHost:
		return AssuranceHost
	case DriverQEMU:
		return AssuranceEmulated
	case DriverSerial:
		return AssuranceHardware
	}
	return ""
}

// HostBoard is the name and the class of the host board.
const HostBoard = "host"

// Unit is the unit of a cell's statistics. Units are never compared or ratioed with each other:
// emulated instructions, silicon cycles and wall time measure different things.
type Unit string

// Units a counter can report in.
const (
	UnitNanoseconds  Unit = "ns"
	UnitInstructions Unit = "instructions" // emulated retired instructions: never cycles
	UnitCycles       Unit = "cycles"       // a hardware cycle counter on a real board
	UnitMicroseconds Unit = "us"
)

// IsTime reports whether u is a unit of time (ns, µs) rather than a count.
func (u Unit) IsTime() bool { return u == UnitNanoseconds || u == UnitMicroseconds }

// Level is a result's assurance level: how much the board that measured it can be trusted to
// be what it says.
type Level string

// Assurance levels.
const (
	AssuranceHost     Level = "host"
	AssuranceEmulated Level = "emulated"
	AssuranceHardware Level = "hardware"
)

// Status is a cell's outcome.
type Status string

// Cell status values.
const (
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"
	StatusSkipped Status = "skipped"
)

// Join renders a list of a vocabulary type for a message: its values separated by sep.
func Join[T ~string](values []T, sep string) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return strings.Join(s, sep)
}

// FormatNanoseconds renders a time given in nanoseconds in the unit that reads best: s and ms
// to three decimals, µs to two, ns whole. Every page, table and claim detail prints times
// through it, so one figure never reads two ways.
func FormatNanoseconds(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.3f s", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3f ms", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2f µs", v/1e3)
	}
	return fmt.Sprintf("%.0f ns", v)
}
