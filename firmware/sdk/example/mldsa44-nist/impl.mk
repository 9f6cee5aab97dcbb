# The example signature implementation (BYOI.md): the project's ML-DSA-44 in a folder of its own
# behind the NIST/PQClean signature API. `make byoi-example EXAMPLE=mldsa44-nist DEST=dir`
# copies it (this file, api.h, sign.c and the ML-DSA and Keccak sources) to dir; then:
# make IMPL=dir/impl.mk qemu-mps2-an386
IMPL_ALG := ML-DSA-44
IMPL_NAME := mldsa44-example
IMPL_VERSION := 1.0.0
IMPL_API := nist-sign
IMPL_SIGN_NAMES := ctx
IMPL_SRCS := sign.c mldsa/mldsa44.c keccak/keccak.c
