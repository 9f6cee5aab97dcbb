/* ML-DSA-65: see mldsa_impl.h. */
#define MLDSA_SET 65
#include "mldsa_impl.h"
