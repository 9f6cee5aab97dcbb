/* Wycheproof's RSA-2048 key and two valid signatures (testdata/rsa), for test/rsabench.c. */
	.section .rodata.rsavec, "a"
	.global rsa_key, rsa_key_end, rsa_sig_pkcs1, rsa_sig_pss
	.p2align 2
rsa_key:
	.incbin "testdata/rsa/key2048.der"
rsa_key_end:
	.p2align 2
rsa_sig_pkcs1:
	.incbin "testdata/rsa/pkcs1-tc1.sig"
	.p2align 2
rsa_sig_pss:
	.incbin "testdata/rsa/pss-tc1.sig"
