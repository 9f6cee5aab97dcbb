/* SLH-DSA-SHA2-256s: see slhdsa_impl.h. */
#define SLH_SHA2 1
#define SLH_CAT 256
#define SLH_FAST 0
#define NS(x) slhdsa_sha2_256s_##x
#define WANT_N SLHDSA_SHA2_256S_N
#define WANT_PK SLHDSA_SHA2_256S_PKBYTES
#define WANT_SK SLHDSA_SHA2_256S_SKBYTES
#define WANT_SIG SLHDSA_SHA2_256S_SIGBYTES
#include "slhdsa_impl.h"
