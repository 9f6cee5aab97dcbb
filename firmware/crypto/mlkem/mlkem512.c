/* ML-KEM-512: see mlkem_impl.h. */
#define MLKEM_K 2
#include "mlkem_impl.h"
