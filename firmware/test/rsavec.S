/* Wycheproof's RSA-2048 key and five valid signatures, and two private keys for signing
 * (testdata/rsa), for test/rsabench.c. */
	.section .rodata.rsavec, "a"
	.global rsa_key, rsa_key_end, rsa_sig_pkcs1, rsa_sig_pss, rsa_sig_pss_same, rsa_signkeys, rsa_signkeys_end
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
	.p2align 2
rsa_sig_pss_same: /* three signatures of the message "123400" with different salts */
	.incbin "testdata/rsa/pss-tc4.sig"
	.incbin "testdata/rsa/pss-tc73.sig"
	.incbin "testdata/rsa/pss-tc74.sig"
	.p2align 2
rsa_signkeys: /* two rsa_privkey_set blobs of the same length */
	.incbin "testdata/rsa/signkey-a.blob"
	.incbin "testdata/rsa/signkey-b.blob"
rsa_signkeys_end:
