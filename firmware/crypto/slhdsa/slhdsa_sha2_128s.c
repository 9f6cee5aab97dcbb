/* SLH-DSA-SHA2-128s: see slhdsa_impl.h. */
#define SLH_SHA2 1
#define SLH_CAT 128
#define SLH_FAST 0
#define NS(x) slhdsa_sha2_128s_##x
#define WANT_N SLHDSA_SHA2_128S_N
#define WANT_PK SLHDSA_SHA2_128S_PKBYTES
#define WANT_SK SLHDSA_SHA2_128S_SKBYTES
#define WANT_SIG SLHDSA_SHA2_128S_SIGBYTES
#include "slhdsa_impl.h"
