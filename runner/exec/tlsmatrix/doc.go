// Package tlsmatrix is the runner side of the tls-matrix experiment kind: the TLS stacks a
// cell compares (pqrepro's engine and crypto/tls), the server child the host's client
// handshakes with (TLSServer), the host board's executor (HostRun), the engine as the server a
// board's own TLS client connects to (TLSBoardServer, also behind pqrepro tls-serve) and the
// device layer's executor (Board).
package tlsmatrix
