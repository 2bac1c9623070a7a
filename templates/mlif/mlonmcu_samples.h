/* Input samples embedded in the firmware (kept in their own section, excluded from ROM figures). */
#ifndef MLONMCU_SAMPLES_H
#define MLONMCU_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

extern const size_t mlonmcu_num_samples;
extern const size_t mlonmcu_sample_num_inputs;
/* mlonmcu_sample_data[sample * mlonmcu_sample_num_inputs + input] */
extern const uint8_t *const mlonmcu_sample_data[];
extern const size_t mlonmcu_sample_size[];

#endif
