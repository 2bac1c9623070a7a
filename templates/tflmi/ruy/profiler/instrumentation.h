/* Stand-in for ruy's profiler header, which TFLM's reference kernels include: profiling off. */
#ifndef MLONMCU_RUY_PROFILER_INSTRUMENTATION_H
#define MLONMCU_RUY_PROFILER_INSTRUMENTATION_H

namespace ruy {
namespace profiler {

class ScopeLabel {
 public:
  template <typename... Args>
  explicit ScopeLabel(Args...) {}
};

}  // namespace profiler
}  // namespace ruy

#endif
