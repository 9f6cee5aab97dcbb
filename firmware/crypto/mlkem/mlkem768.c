/* ML-KEM-768: see mlkem_impl.h. */
#define MLKEM_K 3
#include "mlkem_impl.h"
