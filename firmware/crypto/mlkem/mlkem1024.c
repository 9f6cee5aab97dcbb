/* ML-KEM-1024: see mlkem_impl.h. */
#define MLKEM_K 4
#include "mlkem_impl.h"
