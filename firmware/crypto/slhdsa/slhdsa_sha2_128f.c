/* SLH-DSA-SHA2-128f: see slhdsa_impl.h. */
#define SLH_SHA2 1
#define SLH_CAT 128
#define SLH_FAST 1
#define NS(x) slhdsa_sha2_128f_##x
#define WANT_N SLHDSA_SHA2_128F_N
#define WANT_PK SLHDSA_SHA2_128F_PKBYTES
#define WANT_SK SLHDSA_SHA2_128F_SKBYTES
#define WANT_SIG SLHDSA_SHA2_128F_SIGBYTES
#include "slhdsa_impl.h"
