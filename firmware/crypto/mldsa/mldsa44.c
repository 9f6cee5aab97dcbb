/* ML-DSA-44: see mldsa_impl.h. */
#define MLDSA_SET 44
#include "mldsa_impl.h"
