# The example implementation (BYOI.md): the project's ML-KEM-768 in a folder of its own behind
# the NIST/PQClean KEM API. `make byoi-example DEST=dir` copies it (this file, api.h, kem.c and
# the ML-KEM and Keccak sources) to dir; then: make IMPL=dir/impl.mk qemu-mps2-an386
IMPL_ALG := ML-KEM-768
IMPL_NAME := mlkem768-example
IMPL_VERSION := 1.0.0
IMPL_API := nist-kem-derand
IMPL_SRCS := kem.c mlkem/mlkem768.c keccak/keccak.c
IMPL_INCLUDES := .
