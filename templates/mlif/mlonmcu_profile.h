/* Per-kernel profiling hooks (feature `profile`): a backend wraps every kernel call in
 * MLONMCU_KERNEL(index, call); without MLONMCU_PROFILE the wrapper is the bare call. */
#ifndef MLONMCU_PROFILE_H
#define MLONMCU_PROFILE_H

#include <stddef.h>

#ifndef MLONMCU_PROFILE
#define MLONMCU_PROFILE 0
#endif

#if MLONMCU_PROFILE
#ifdef __cplusplus
extern "C" {
#endif
void mlonmcu_profile_begin(size_t kernel);
void mlonmcu_profile_end(size_t kernel);
#ifdef __cplusplus
}
#endif
#define MLONMCU_KERNEL(index, call) \
  do {                              \
    mlonmcu_profile_begin(index);   \
    call;                           \
    mlonmcu_profile_end(index);     \
  } while (0)
#else
#define MLONMCU_KERNEL(index, call) call
#endif

#endif
