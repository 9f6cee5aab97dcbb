/* SLH-DSA-SHA2-256f: see slhdsa_impl.h. */
#define SLH_SHA2 1
#define SLH_CAT 256
#define SLH_FAST 1
#define NS(x) slhdsa_sha2_256f_##x
#define WANT_N SLHDSA_SHA2_256F_N
#define WANT_PK SLHDSA_SHA2_256F_PKBYTES
#define WANT_SK SLHDSA_SHA2_256F_SKBYTES
#define WANT_SIG SLHDSA_SHA2_256F_SIGBYTES
#include "slhdsa_impl.h"
