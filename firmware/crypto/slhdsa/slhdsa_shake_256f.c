/* SLH-DSA-SHAKE-256f: see slhdsa_impl.h. */
#define SLH_SHA2 0
#define SLH_CAT 256
#define SLH_FAST 1
#define NS(x) slhdsa_shake_256f_##x
#define WANT_N SLHDSA_SHAKE_256F_N
#define WANT_PK SLHDSA_SHAKE_256F_PKBYTES
#define WANT_SK SLHDSA_SHAKE_256F_SKBYTES
#define WANT_SIG SLHDSA_SHAKE_256F_SIGBYTES
#include "slhdsa_impl.h"
