/* ML-DSA-87: see mldsa_impl.h. */
#define MLDSA_SET 87
#include "mldsa_impl.h"
