/* The contract between a backend and the mlif platform: every backend implements this API. */
#ifndef MLONMCU_MODEL_H
#define MLONMCU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called once before the first inference; returns 0 on success. */
int mlonmcu_model_init(void);
/* Runs one inference on the input buffers; returns 0 on success. The input buffers may be
 * overwritten: set them before every call. */
int mlonmcu_model_run(void);

size_t mlonmcu_model_num_inputs(void);
size_t mlonmcu_model_num_outputs(void);
void *mlonmcu_model_input_ptr(size_t index);
size_t mlonmcu_model_input_size(size_t index);   /* bytes */
const void *mlonmcu_model_output_ptr(size_t index);
size_t mlonmcu_model_output_size(size_t index);  /* bytes */
/* Bytes of working memory (activations) the model uses. */
size_t mlonmcu_model_arena_size(void);

/* Only in firmware built with MLONMCU_ARENA_PROBE (backends whose arena is sized on the
 * target): the smallest arena the model can run with, 0 if even the probe's is too small. */
size_t mlonmcu_model_arena_probe(void);

#ifdef __cplusplus
}
#endif

#endif
