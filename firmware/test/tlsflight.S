/* The recorded exchange of testdata/tls13c, for the board replay image (test/tlsreplay.c). */
	.section .rodata.tlsflight, "a"
	.global tls_flight, tls_flight_end, tls_ca, tls_ca_end, tls_hello, tls_hello_end
	.p2align 2
tls_flight:
	.incbin "testdata/tls13c/flight.bin"
tls_flight_end:
	.p2align 2
tls_ca:
	.incbin "testdata/tls13c/ca.der"
tls_ca_end:
	.p2align 2
tls_hello:
	.incbin "testdata/tls13c/clienthello.bin"
tls_hello_end:
