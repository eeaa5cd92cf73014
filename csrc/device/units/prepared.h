// Weights of one layer prepared once for a unit's fast path: the execution
// plan (device/plan.h) calls a unit on every replay with the same weights,
// so it packs them when the plan is built instead of on every call. A
// prepared object belongs to the weights (and, for depthwise, the output
// stage) it was made from; the reference loops ignore it.
#pragma once

#include <cstdint>
#include <memory>

#include "arch/unit_params.h"
#include "common/shape.h"

namespace nacc {

class PreparedWeights {
 public:
  virtual ~PreparedWeights() = default;
};

// Each returns nullptr when the CPU has no fast path to prepare for.
// conv2d_s8: filter Format [C_out, KH, KW, C_in].
std::shared_ptr<const PreparedWeights> prepare_conv2d_s8(const Shape4& filter_shape,
                                                         const int8_t* filter);
// fully_connected_s8: weights Format [N, K].
std::shared_ptr<const PreparedWeights> prepare_fully_connected_s8(int k, int n,
                                                                  const int8_t* weights);
// depthwise_conv2d_s8: filter Format [1, KH, KW, C_out] with its bias and
// output stage (the fast path keeps them beside the packed filter).
std::shared_ptr<const PreparedWeights> prepare_depthwise_conv2d_s8(
    const Shape4& filter_shape, const int8_t* filter, const int32_t* bias,
    const OutputStage& out_stage);

// conv2d_s8_mac_fp32: filter Format [C_out, KH, KW, C_in] with its 4 float32
// entries per output channel (MacFp32Params::entries): the float32 weights
// s_w[c] * w in ONNX's K order, the bias and output scales beside them.
std::shared_ptr<const PreparedWeights> prepare_conv2d_mac_fp32(const Shape4& filter_shape,
                                                               const int8_t* filter,
                                                               const float* entries);

}  // namespace nacc
