/* SLH-DSA-SHAKE-192s: see slhdsa_impl.h. */
#define SLH_SHA2 0
#define SLH_CAT 192
#define SLH_FAST 0
#define NS(x) slhdsa_shake_192s_##x
#define WANT_N SLHDSA_SHAKE_192S_N
#define WANT_PK SLHDSA_SHAKE_192S_PKBYTES
#define WANT_SK SLHDSA_SHAKE_192S_SKBYTES
#define WANT_SIG SLHDSA_SHAKE_192S_SIGBYTES
#include "slhdsa_impl.h"
