// Op -> unit lowering: geometry and the TFLite-exact unit parameters of each
// op kind the compiler implements (see lower.h). Every float -> fixed-point
// derivation of the project's compiled programs happens here.
#include "compiler/lower.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "arch/fields.h"
#include "arch/limits.h"
#include "arch/registers.h"
#include "common/error.h"
#include "support/conv_parts.h"
#include "support/pool_regions.h"
#include "support/resize_nearest.h"
#include "support/transpose_copy.h"

namespace nacc::compiler {

using ir::OpKind;

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::kConv: return "conv";
    case Unit::kDepthwise: return "depthwise";
    case Unit::kFullyConnected: return "fully_connected";
    case Unit::kMatmul: return "matmul";
    case Unit::kMaxPool: return "max_pool";
    case Unit::kAvgPool: return "avg_pool";
    case Unit::kElementwise: return "elementwise";
    case Unit::kActivation: return "activation";
    case Unit::kView: return "view";
    case Unit::kLayout: return "vnchwconv";
  }
  return "?";
}

int LoweredOp::split_channels() const {
  switch (unit) {
    case Unit::kConv:
    case Unit::kFullyConnected:
    case Unit::kMatmul:
      return out_shape.c;
    default:
      return in_shape.c;
  }
}

int LoweredOp::in_channels(int group) const {
  switch (unit) {
    case Unit::kConv:
    case Unit::kFullyConnected:
    case Unit::kMatmul:
      return in_shape.c;
    default:
      return group;
  }
}

int LoweredOp::out_channels(int group) const {
  return unit == Unit::kDepthwise ? group * depth_multiplier : group;
}

int64_t LoweredOp::weight_bytes(int group) const {
  const int64_t n = weight_elements(group);
  return int4_weights ? (n + 1) / 2 : n;
}

int64_t LoweredOp::weight_elements(int group) const {
  switch (unit) {
    case Unit::kConv:
      return int64_t(group) * kernel_h * kernel_w * in_shape.c;
    case Unit::kDepthwise:
      return int64_t(group) * depth_multiplier * kernel_h * kernel_w;
    case Unit::kFullyConnected:
      return int64_t(group) * in_shape.c;
    case Unit::kMatmul:
      return int64_t(group) * matmul_k();
    default:
      return 0;
  }
}

int LoweredOp::matmul_k() const {
  return im2col ? kernel_h * kernel_w * in_shape.c : in_shape.c;
}

Shape4 nhwc_of(const std::vector<int64_t>& shape) {
  check_arg(shape.size() <= 4, "nhwc_of: rank ", shape.size(), " > 4");
  int64_t d[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < shape.size(); ++i) d[4 - shape.size() + i] = shape[i];
  for (int64_t v : d) {
    check_arg(v >= 1 && v <= limits::kMaxFeatureMapDim, "nhwc_of: dimension ", v,
              " out of range [1, ", limits::kMaxFeatureMapDim, "]");
  }
  return Shape4{int(d[0]), int(d[1]), int(d[2]), int(d[3])};
}

void conv_requantization(float input_scale, const std::vector<float>& filter_scales,
                         float output_scale, int channels, std::vector<int32_t>* multiplier,
                         std::vector<int32_t>* shift) {
  check_arg(filter_scales.size() == 1 || int(filter_scales.size()) == channels,
            "conv_requantization: ", filter_scales.size(), " filter scales for ", channels,
            " channels");
  multiplier->resize(channels);
  shift->resize(channels);
  for (int c = 0; c < channels; ++c) {
    const double filter_scale = static_cast<double>(filter_scales[filter_scales.size() == 1 ? 0 : c]);
    const double effective =
        static_cast<double>(input_scale) * filter_scale / static_cast<double>(output_scale);
    const QuantizedMultiplier q = quantize_multiplier(effective);
    (*multiplier)[c] = q.multiplier;
    (*shift)[c] = q.shift;
  }
}

std::vector<double> fully_connected_real_scales(float input_scale,
                                                const std::vector<float>& filter_scales,
                                                float output_scale, int channels) {
  check_arg(filter_scales.size() == 1 || int(filter_scales.size()) == channels,
            "fully_connected_real_scales: ", filter_scales.size(), " filter scales for ",
            channels, " channels");
  std::vector<double> out(channels);
  for (int c = 0; c < channels; ++c) {
    out[c] = static_cast<double>(input_scale) *
             static_cast<double>(filter_scales[filter_scales.size() == 1 ? 0 : c]) /
             static_cast<double>(output_scale);
  }
  return out;
}

FusedActivation fused_activation_of(ir::Activation act, const std::string& label) {
  switch (act) {
    case ir::Activation::kNone: return FusedActivation::kNone;
    case ir::Activation::kRelu: return FusedActivation::kRelu;
    case ir::Activation::kReluN1To1: return FusedActivation::kReluN1To1;
    case ir::Activation::kRelu6: return FusedActivation::kRelu6;
    default:
      throw Unsupported(str_cat(label, ": fused activation ", ir::activation_name(act),
                                " cannot be clamped in the output stage"));
  }
}

namespace {

// What every lowering of graph.op(op_index) starts from: its kind and the
// label its messages name it by (op_index is set by each lowering: copy_io
// clears it).
LoweredOp lowering_base(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base;
  base.kind = op.kind;
  base.label = str_cat(op.display_type(), " ", graph.op_label(op_index));
  return base;
}

// Runs a multi-pass lowering's `body`: an InvalidArgument one of its checks
// throws means the op has no such lowering, so it becomes Unsupported (the op
// is declined with the message), named by `label` unless it already is.
template <class Body>
std::vector<LoweredOp> declined_on_invalid(const std::string& label, Body&& body) {
  try {
    return body();
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    throw Unsupported(what.rfind(label, 0) == 0 ? what : str_cat(label, ": ", what));
  }
}

// The output stage's ACT_MODE for a fused activation: the clamp bounds carry
// the function (docs/device_model.md §4); the mode states the intent.
ActMode act_mode_of(FusedActivation act) {
  switch (act) {
    case FusedActivation::kRelu: return ActMode::RELU;
    case FusedActivation::kRelu6: return ActMode::RELU6;
    default: return ActMode::NONE;
  }
}

struct Quant {
  float scale = 0.0f;
  int32_t zero_point = 0;
};

Quant per_tensor(const ir::Tensor& t, const std::string& label) {
  if (t.quant.scales.size() != 1 || t.quant.zero_points.size() != 1) {
    throw Unsupported(str_cat(label, ": tensor '", t.name, "' must be quantized per tensor"));
  }
  return {t.quant.scales[0], t.quant.zero_points[0]};
}

std::vector<int8_t> int8_data(const ir::Tensor& t, const std::string& label, const char* what) {
  if (!t.is_constant()) {
    throw Unsupported(str_cat(label, ": ", what, " '", t.name, "' must be a constant tensor"));
  }
  if (t.dtype != ir::DType::kInt8 && t.dtype != ir::DType::kInt4) {
    throw Unsupported(str_cat(label, ": ", what, " '", t.name, "' must be int8 or int4"));
  }
  const auto& d = *t.data;
  std::vector<int8_t> out(d.size());
  if (!d.empty()) std::memcpy(out.data(), d.data(), d.size());
  return out;
}

std::vector<int32_t> int32_data(const ir::Tensor& t, const std::string& label, const char* what) {
  if (!t.is_constant()) {
    throw Unsupported(str_cat(label, ": ", what, " '", t.name, "' must be a constant tensor"));
  }
  if (t.dtype != ir::DType::kInt32) {
    throw Unsupported(str_cat(label, ": ", what, " '", t.name, "' must be int32"));
  }
  const auto& d = *t.data;
  std::vector<int32_t> out(d.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = int32_t(uint32_t(d[4 * i]) | uint32_t(d[4 * i + 1]) << 8 |
                     uint32_t(d[4 * i + 2]) << 16 | uint32_t(d[4 * i + 3]) << 24);
  }
  return out;
}

// A 16x8 op's int64 bias (8-byte entries within 40 bits).
std::vector<int64_t> int64_bias(const ir::Tensor& t, const std::string& label) {
  if (!t.is_constant()) {
    throw Unsupported(str_cat(label, ": bias '", t.name, "' must be a constant tensor"));
  }
  if (t.dtype != ir::DType::kInt64) {
    throw Unsupported(str_cat(label, ": bias '", t.name, "' must be int64 (16x8)"));
  }
  const auto& d = *t.data;
  std::vector<int64_t> out(d.size() / 8);
  constexpr int64_t lim = int64_t{1} << (limits::kBias16Bits - 1);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t u = 0;
    for (int k = 0; k < 8; ++k) u |= uint64_t(d[8 * i + size_t(k)]) << (8 * k);
    out[i] = int64_t(u);
    if (out[i] < -lim || out[i] >= lim) {
      throw Unsupported(str_cat(label, ": bias entry ", i, " = ", out[i], " does not fit ",
                                limits::kBias16Bits, " bits (NACC_SPEC §9)"));
    }
  }
  return out;
}

// 16x8 (NACC_SPEC §9): int16 input and output with zero point 0.
bool int16_maps_of(const ir::Tensor& in, const ir::Tensor& out, const std::string& label) {
  const bool i16 = in.dtype == ir::DType::kInt16;
  if (i16 != (out.dtype == ir::DType::kInt16)) {
    throw Unsupported(str_cat(label, ": mixed int8 / int16 feature maps"));
  }
  if (i16 && (in.quant.zero_points.size() != 1 || in.quant.zero_points[0] != 0 ||
              out.quant.zero_points.size() != 1 || out.quant.zero_points[0] != 0)) {
    throw Unsupported(str_cat(label, ": int16 feature maps need zero point 0"));
  }
  return i16;
}

// ONNX Runtime's float32 output scales (QLinearConv / QLinearMatMul / QGemm
// on the CPU EP): float(input_scale * filter_scale[c]) / output_scale, every
// step in float32 (NACC_ACT_PARA.QUANT_FP32_SCALE, docs/compiler.md §2.2).
std::vector<float> onnx_fp32_scales(float input_scale, const std::vector<float>& filter_scales,
                                    float output_scale, int channels, const std::string& label) {
  check_arg(filter_scales.size() == 1 || int(filter_scales.size()) == channels, label, ": ",
            filter_scales.size(), " filter scales for ", channels, " output channels");
  std::vector<float> out(static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    const float product = input_scale * filter_scales[filter_scales.size() == 1 ? 0 : size_t(c)];
    out[size_t(c)] = product / output_scale;
    if (!(std::isfinite(out[size_t(c)]) && out[size_t(c)] > 0.0f)) {
      throw Unsupported(str_cat(label, ": output scale ", out[size_t(c)], " of channel ", c,
                                " is not finite and > 0"));
    }
  }
  return out;
}

void check_weight_zero_points(const ir::Tensor& w, const std::string& label) {
  for (int32_t zp : w.quant.zero_points) {
    if (zp != 0) throw Unsupported(str_cat(label, ": weights '", w.name, "' zero point ", zp, " != 0"));
  }
  if (w.quant.scales.empty()) {
    throw Unsupported(str_cat(label, ": weights '", w.name, "' are not quantized"));
  }
}

// Window geometry: explicit top/left padding, the right/bottom padding the
// sizes imply (docs/device_model.md §3), both within the 4-bit fields.
void set_window(LoweredOp& l, const ir::Op& op, int kh, int kw) {
  const auto& a = op.attrs;
  l.kernel_h = kh;
  l.kernel_w = kw;
  l.stride_h = a.stride_h;
  l.stride_w = a.stride_w;
  l.pad_top = int(a.padding.top);
  l.pad_left = int(a.padding.left);
  l.pad_bottom = std::max(0, (l.out_shape.h - 1) * l.stride_h + kh - l.in_shape.h - l.pad_top);
  l.pad_right = std::max(0, (l.out_shape.w - 1) * l.stride_w + kw - l.in_shape.w - l.pad_left);
  const auto check = [&](const char* what, int v) {
    if (v < 0 || v > limits::kMaxPadding) {
      throw Unsupported(str_cat(l.label, ": ", what, " padding ", v, " out of range [0, ",
                                limits::kMaxPadding, "] (NACC_PADDING)"));
    }
  };
  check("top", l.pad_top);
  check("left", l.pad_left);
  check("bottom", l.pad_bottom);
  check("right", l.pad_right);
  if (a.dilation_h != 1 || a.dilation_w != 1) {
    throw Unsupported(str_cat(l.label, ": dilation ", a.dilation_h, "x", a.dilation_w, " != 1"));
  }
  // The output size must be what the window gives (no cropping).
  const int oh = (l.in_shape.h + l.pad_top + l.pad_bottom - kh) / l.stride_h + 1;
  const int ow = (l.in_shape.w + l.pad_left + l.pad_right - kw) / l.stride_w + 1;
  check_arg(oh == l.out_shape.h && ow == l.out_shape.w, l.label, ": output ", l.out_shape.str(),
            " does not match the window (", oh, "x", ow, ")");
}

// The fused activation's clamp in the output's range (int8, or int16 for
// 16x8 ops) and ACT_MODE.
void set_activation_range(LoweredOp& l, FusedActivation act, const Quant& qo) {
  if (l.int16_maps) {
    fused_activation_range_int16(act, qo.scale, qo.zero_point, &l.act_min, &l.act_max);
  } else {
    fused_activation_range_int8(act, qo.scale, qo.zero_point, &l.act_min, &l.act_max);
  }
  l.act_mode = act_mode_of(act);
}

// ONNX Runtime's unfused float32 Conv (ir::Attributes::ort_kblock): the
// NPU's MAC_FP32 mode. Its parameters per output channel (s_x, s_w[c], the
// float32 bias float(b[c]) * s_b[c], s_y) and the K blocks as register fields.
// Throws Unsupported where the mode cannot express the node.
// Whether the op is ONNX Runtime's unfused float32 Conv / depthwise / Gemm
// that the EP gave MLAS's sum order (ort_kblock or ort_sum_order).
bool is_mac_fp32(const ir::Op& op) {
  return op.attrs.requant == ir::RequantMode::kOnnxRuntime &&
         op.attrs.onnx_kernel == ir::Attributes::OnnxKernel::kUnfused &&
         (op.attrs.ort_kblock > 0 || op.attrs.ort_sum_order != ir::Attributes::OrtSumOrder::kNone);
}

void set_mac_fp32(const ir::Graph& g, const ir::Op& op, float s_x, float s_y, LoweredOp& l) {
  const ir::Attributes& a = op.attrs;
  using Order = ir::Attributes::OrtSumOrder;
  const bool fc = op.kind == OpKind::kFullyConnected;
  const bool dw = op.kind == OpKind::kDepthwiseConv2D;
  // The sum order (NACC_ACT_PARA.MAC_FP32_ORDER): MLAS's one-row kernels for
  // a depthwise Conv of depth multiplier 1 and a one-row Gemm / MatMul
  // (ort_sum_order), else its SGEMM's blocks of fused multiply-adds (ort_kblock).
  if (a.ort_sum_order != Order::kNone) {
    if (!(dw || fc) || (dw && a.ort_sum_order != Order::kGroups4) || a.ort_kblock != 0) {
      throw Unsupported(str_cat(l.label, ": ONNX Runtime's one-row float32 sum order ",
                                int(a.ort_sum_order), " on ", op.display_type(),
                                " (GROUPS4: depthwise, fully connected; LANES8: fully connected)"));
    }
    l.mac_fp32_order = a.ort_sum_order == Order::kGroups4 ? Fp32SumOrder::kGroups4
                                                           : Fp32SumOrder::kLanes8;
  } else if (fc) {
    throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Gemm with K blocks (MLAS's ",
                              "SGEMM, more than one row) is not modelled"));
  } else if (dw && a.ort_kblock_split >= 0) {
    throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 depthwise Conv with a split ",
                              "K block (a grouped Conv's blocks are one size)"));
  }
  if (l.int16_maps || l.int4_weights) {
    throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Conv with ",
                              l.int16_maps ? "int16 feature maps" : "int4 weights",
                              " (MAC_FP32 takes int8 maps and weights)"));
  }
  const ir::Tensor& w = g.tensor(op.inputs[1]);
  const int c_out = l.out_shape.c;
  const int64_t k = fc ? int64_t(l.in_shape.c)
                      : int64_t(l.kernel_h) * l.kernel_w * (dw ? 1 : l.in_shape.c);
  // A K block of at least K products is one chain: any power of two that large.
  auto block_log2 = [&](int64_t block, const char* what) {
    int lg = 0;
    while ((int64_t{1} << lg) < block && lg < limits::kMaxKblockLog2) ++lg;
    if (block < 1 || ((int64_t{1} << lg) != block && (int64_t{1} << lg) < k)) {
      throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Conv ", what, " ", block,
                                " is not a power of two in [1, 2^", limits::kMaxKblockLog2,
                                "] below K = ", k, " (NACC_FP32_KBLOCK)"));
    }
    return lg;
  };
  if (fc) {
    // LANES8's reduction tree by output channel: the last N mod 4 differ
    // (the emitter writes the tail's first channel per command).
    const int64_t n = l.out_shape.c;
    l.kblock_log2 = 0;
    l.kblock_split = l.mac_fp32_order == Fp32SumOrder::kLanes8 ? n - n % 4 : 0;
    l.kblock_tail_log2 = l.mac_fp32_order == Fp32SumOrder::kLanes8 ? int(n % 4) : 0;
  } else if (l.mac_fp32_order == Fp32SumOrder::kGroups4) {
    l.kblock_log2 = l.kblock_tail_log2 = 0;
    l.kblock_split = 0;  // no K blocks
  }
  const int64_t pixels = int64_t(l.out_shape.h) * l.out_shape.w;
  if (!fc && l.mac_fp32_order == Fp32SumOrder::kFmaBlocks) {
    l.kblock_log2 = block_log2(a.ort_kblock, "K block");
    const bool split = a.ort_kblock_split >= 0 && a.ort_kblock_split < pixels;
    l.kblock_tail_log2 = split ? block_log2(a.ort_kblock_tail, "tail K block") : l.kblock_log2;
    l.kblock_split = split ? a.ort_kblock_split : pixels;
    if (l.kblock_split >= (int64_t{1} << limits::kKblockSplitBits)) {
      throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Conv splits its K blocks at ",
                                "output pixel ", l.kblock_split, ", past the ",
                                limits::kKblockSplitBits, "-bit NACC_FP32_KBLOCK.KBLOCK_SPLIT"));
    }
  }
  std::vector<float> bias_f(size_t(c_out), 0.0f);
  if (!l.bias.empty()) {
    const ir::Tensor& b = g.tensor(op.inputs[2]);
    const std::vector<float>& sb = b.quant.scales;
    if (sb.size() != 1 && int(sb.size()) != c_out) {
      throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Conv needs the bias '", b.name,
                                "' scale (per tensor or per channel), it has ", sb.size()));
    }
    for (int c = 0; c < c_out; ++c) {  // DequantizeLinear of the int32 bias, in float32
      bias_f[size_t(c)] = static_cast<float>(l.bias[size_t(c)]) * sb[sb.size() == 1 ? 0 : size_t(c)];
    }
  }
  check_arg(w.quant.scales.size() == 1 || int(w.quant.scales.size()) == c_out, l.label, ": ",
            w.quant.scales.size(), " filter scales for ", c_out, " output channels");
  l.fp32_scale.assign(size_t(c_out) * limits::kMacFp32EntryFloats, 0.0f);
  for (int c = 0; c < c_out; ++c) {
    float* e = l.fp32_scale.data() + size_t(c) * limits::kMacFp32EntryFloats;
    e[0] = s_x;
    e[1] = w.quant.scales[w.quant.scales.size() == 1 ? 0 : size_t(c)];
    e[2] = bias_f[size_t(c)];
    e[3] = s_y;
    for (int j = 0; j < 4; ++j) {
      if (!std::isfinite(e[j]) || (j != 2 && !(e[j] > 0.0f))) {
        throw Unsupported(str_cat(l.label, ": ONNX Runtime's float32 Conv parameter ", e[j],
                                  " of channel ", c, " is not finite", j != 2 ? " and > 0" : ""));
      }
    }
  }
  l.bias.clear();  // in the entries (BIAS_EN = 0)
  l.multiplier.clear();
  l.shift.clear();
  l.mac_fp32 = true;
}

void lower_conv_like(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& w = g.tensor(op.inputs[1]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  const bool depthwise = op.kind == OpKind::kDepthwiseConv2D;
  l.unit = depthwise ? Unit::kDepthwise : Unit::kConv;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  check_arg(w.rank() == 4, l.label, ": weights rank ", w.rank(), " != 4");
  const int kh = int(w.shape[1]), kw = int(w.shape[2]);
  if (op.kind == OpKind::kTransposeConv || op.attrs.dilation_h > 1 || op.attrs.dilation_w > 1 ||
      (!depthwise && support::needs_space_to_depth(g, op))) {
    // The whole window as given; lower_conv_parts cuts it into undilated
    // phases, lower_space_to_depth gathers it into a window within the limits,
    // lower_transpose_conv cuts a TRANSPOSE_CONV into its output phases.
    l.kernel_h = kh;
    l.kernel_w = kw;
    l.stride_h = op.attrs.stride_h;
    l.stride_w = op.attrs.stride_w;
    l.pad_top = int(op.attrs.padding.top);
    l.pad_left = int(op.attrs.padding.left);
    l.pad_bottom = int(op.attrs.padding.bottom);
    l.pad_right = int(op.attrs.padding.right);
  } else {
    set_window(l, op, kh, kw);
  }
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  check_weight_zero_points(w, l.label);
  l.input_zero_point = qi.zero_point;
  l.output_zero_point = qo.zero_point;
  l.weights = int8_data(w, l.label, "weights");
  l.int4_weights = w.dtype == ir::DType::kInt4;
  l.int16_maps = int16_maps_of(in, out, l.label);
  if (l.int16_maps && (l.int4_weights || op.attrs.requant != ir::RequantMode::kTflite)) {
    throw Unsupported(str_cat(l.label, ": 16x8 takes int8 weights and TFLite's requantization"));
  }
  const int c_out = l.out_shape.c;
  if (depthwise && l.int4_weights) {
    throw Unsupported(str_cat(l.label, ": int4 depthwise weights (TFLite 2.21 has no reference "
                              "kernel for them; NACC_SPEC §9)"));
  }
  if (depthwise) {
    const int m = op.attrs.depth_multiplier;
    if (m != 1 && m != 2 && m != 4 && m != 8) {
      throw Unsupported(str_cat(l.label, ": depth multiplier ", m, " not in {1, 2, 4, 8}"));
    }
    l.depth_multiplier = m;
    check_arg(c_out == l.in_shape.c * m && w.shape[3] == c_out && w.shape[0] == 1, l.label,
              ": depthwise channels do not match (input ", l.in_shape.c, ", multiplier ", m,
              ", weights ", ir::shape_str(w.shape), ", output ", c_out, ")");
  } else {
    check_arg(w.shape[0] == c_out && w.shape[3] >= 1 && l.in_shape.c % w.shape[3] == 0 &&
                  c_out % (l.in_shape.c / w.shape[3]) == 0,
              l.label, ": weights ",
              ir::shape_str(w.shape), " do not match input ", l.in_shape.str(), " / output ",
              l.out_shape.str());
  }
  if (op.inputs.size() > 2 && op.inputs[2] >= 0 && l.int16_maps) {
    l.bias64 = int64_bias(g.tensor(op.inputs[2]), l.label);
    check_arg(int(l.bias64.size()) == c_out, l.label, ": bias has ", l.bias64.size(),
              " entries, expected ", c_out);
  } else if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
    l.bias = int32_data(g.tensor(op.inputs[2]), l.label, "bias");
    check_arg(int(l.bias.size()) == c_out, l.label, ": bias has ", l.bias.size(),
              " entries, expected ", c_out);
  }
  if (is_mac_fp32(op)) {
    set_mac_fp32(g, op, qi.scale, qo.scale, l);  // ONNX Runtime's float32 Conv (MAC_FP32)
  } else if (op.attrs.requant == ir::RequantMode::kOnnxRuntime) {
    l.fp32_scale = onnx_fp32_scales(qi.scale, w.quant.scales, qo.scale, c_out, l.label);
  } else {
    conv_requantization(qi.scale, w.quant.scales, qo.scale, c_out, &l.multiplier, &l.shift);
  }
  const FusedActivation act = fused_activation_of(op.attrs.activation, l.label);
  set_activation_range(l, act, qo);
  if (l.int16_maps) {
    // TFLite's 16x8 output stage: (acc * m16 + 2^(14 - s)) >> (15 - s) needs s <= 14;
    // the device takes [-31, 7] (unit_params.h requantize_output_16x8).
    for (size_t c = 0; c < l.shift.size(); ++c) {
      if (l.shift[c] > 7 || l.shift[c] < -31) {
        throw Unsupported(str_cat(l.label, ": 16x8 output shift ", l.shift[c], " of channel ", c,
                                  " outside [-31, 7]"));
      }
    }
  }
}

void lower_fully_connected(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& w = g.tensor(op.inputs[1]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.unit = Unit::kFullyConnected;
  check_arg(w.rank() == 2, l.label, ": weights rank ", w.rank(), " != 2");
  const int64_t n = w.shape[0], k = w.shape[1];
  const int64_t m = in.elements() / k;
  check_arg(m * k == in.elements() && out.elements() == m * n, l.label, ": input ",
            ir::shape_str(in.shape), " / weights ", ir::shape_str(w.shape), " / output ",
            ir::shape_str(out.shape), " are not [M, K] x [N, K] -> [M, N]");
  // FULL_KER_SIZE = IN_FM_WIDTH * ceil(IN_FM_CH / 64) - 1 is an 8-bit field.
  const int64_t groups = (k + limits::kMacLanes - 1) / limits::kMacLanes;
  if (groups > 256) {
    throw Unsupported(str_cat(l.label, ": ", k, " inputs per output need ", groups,
                              " 64-lane groups; NACC_FULL_CONV_PARA.FULL_KER_SIZE allows 256"));
  }
  l.in_shape = nhwc_of({1, m, 1, k});
  l.out_shape = nhwc_of({1, m, 1, n});
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  check_weight_zero_points(w, l.label);
  l.input_zero_point = qi.zero_point;
  l.output_zero_point = qo.zero_point;
  l.weights = int8_data(w, l.label, "weights");
  l.int4_weights = w.dtype == ir::DType::kInt4;
  l.int16_maps = int16_maps_of(in, out, l.label);
  if (l.int16_maps && op.attrs.requant != ir::RequantMode::kTflite) {
    throw Unsupported(str_cat(l.label, ": 16x8 takes TFLite's requantization"));
  }
  if (l.int16_maps && l.int4_weights) {
    // 16x8 with int4 weights (TFLite's FULLY_CONNECTED version 13: the
    // reference kernel unpacks them and runs the 16x8 kernel). One command has
    // one data form (NACC_CTRL.DATA_FORM: 16-bit maps or int4 weights), so the
    // 16-bit unit takes the unpacked values as int8 weights: the same products.
    l.int4_weights = false;
  }
  if (op.inputs.size() > 2 && op.inputs[2] >= 0 && l.int16_maps) {
    l.bias64 = int64_bias(g.tensor(op.inputs[2]), l.label);
    check_arg(int64_t(l.bias64.size()) == n, l.label, ": bias has ", l.bias64.size(),
              " entries, expected ", n);
  } else if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
    l.bias = int32_data(g.tensor(op.inputs[2]), l.label, "bias");
    check_arg(int64_t(l.bias.size()) == n, l.label, ": bias has ", l.bias.size(),
              " entries, expected ", n);
  }
  if (is_mac_fp32(op)) {
    set_mac_fp32(g, op, qi.scale, qo.scale, l);  // ONNX Runtime's one-row float32 Gemm (MAC_FP32)
  } else if (op.attrs.requant == ir::RequantMode::kOnnxRuntime) {
    l.fp32_scale = onnx_fp32_scales(qi.scale, w.quant.scales, qo.scale, int(n), l.label);
  } else {
    l.real_scale = fully_connected_real_scales(qi.scale, w.quant.scales, qo.scale, int(n));
  }
  const FusedActivation act = fused_activation_of(op.attrs.activation, l.label);
  set_activation_range(l, act, qo);
}

// BATCH_MATMUL of two runtime activations, [.., M, K] x [.., K, N] -> [.., M, N]
// with every leading dimension 1 (the rules decline batches, adj_x / adj_y):
// NPU_OP_MATMUL with A = M rows of K, B read from external memory.
// Requantization: TFLite's (batch_matmul.cc: QuantizeMultiplier of
// double(float(s_a * s_b)) / double(s_y), MultiplyByQuantizedMultiplier), or
// with ir::RequantMode::kOnnxRuntime ONNX Runtime's QLinearMatMul float32
// stage (docs/compiler.md §2).
void lower_batch_matmul(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& a = g.tensor(op.inputs[0]);
  const ir::Tensor& b = g.tensor(op.inputs[1]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.unit = Unit::kMatmul;
  check_arg(a.rank() >= 2 && b.rank() >= 2 && out.rank() >= 2, l.label, ": operands ",
            ir::shape_str(a.shape), " x ", ir::shape_str(b.shape), " must have rank >= 2");
  if (b.is_constant()) {
    throw Unsupported(str_cat(l.label, ": B '", b.name, "' is a constant (a FULLY_CONNECTED)"));
  }
  for (const ir::Tensor* t : {&a, &b, &out}) {
    for (int d = 0; d + 2 < t->rank(); ++d) {
      if (t->shape[size_t(d)] != 1) {
        throw Unsupported(str_cat(l.label, ": '", t->name, "' ", ir::shape_str(t->shape),
                                  " has batch dimensions (batch must be 1)"));
      }
    }
  }
  if (!op.attrs.unsupported_options.empty()) {
    throw Unsupported(str_cat(l.label, ": option ", op.attrs.unsupported_options[0], " is not implemented"));
  }
  const int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  check_arg(b.dim(-2) == k && out.dim(-2) == m && out.dim(-1) == n, l.label, ": ",
            ir::shape_str(a.shape), " x ", ir::shape_str(b.shape), " -> ",
            ir::shape_str(out.shape), " is not [M, K] x [K, N] -> [M, N]");
  l.in_shape = nhwc_of({1, m, 1, k});
  l.out_shape = nhwc_of({1, m, 1, n});
  l.input2 = op.inputs[1];
  const Quant qa = per_tensor(a, l.label), qb = per_tensor(b, l.label), qo = per_tensor(out, l.label);
  l.input_zero_point = qa.zero_point;
  l.b_zero_point = qb.zero_point;
  l.output_zero_point = qo.zero_point;
  if (op.attrs.requant == ir::RequantMode::kOnnxRuntime) {
    l.fp32_scale.assign(size_t(n), (qa.scale * qb.scale) / qo.scale);
  } else {
    // batch_matmul.cc: the scale product in float32, then divided in double.
    const float product = qa.scale * qb.scale;
    const QuantizedMultiplier q = quantize_multiplier(static_cast<double>(product) /
                                                      static_cast<double>(qo.scale));
    l.multiplier.assign(size_t(n), q.multiplier);
    l.shift.assign(size_t(n), q.shift);
  }
  const FusedActivation act = fused_activation_of(op.attrs.activation, l.label);
  fused_activation_range_int8(act, qo.scale, qo.zero_point, &l.act_min, &l.act_max);
  l.act_mode = act_mode_of(act);
}

// The pooling unit's own average pool: 2x2, stride 2 (NACC_SPEC §2).
bool is_pool_unit_average(const ir::Op& op) {
  const auto& a = op.attrs;
  return a.kernel_h == limits::kAvgPoolKernel && a.kernel_w == limits::kAvgPoolKernel &&
         a.stride_h == limits::kAvgPoolStride && a.stride_w == limits::kAvgPoolStride;
}

void lower_pool(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.unit = op.kind == OpKind::kMaxPool2D ? Unit::kMaxPool : Unit::kAvgPool;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  set_window(l, op, op.attrs.kernel_h, op.attrs.kernel_w);
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  const ir::Attributes::OnnxKernel ok = op.attrs.onnx_kernel;
  const bool ort_float = l.unit == Unit::kAvgPool && ok != ir::Attributes::OnnxKernel::kNone;
  if (!ort_float && (qi.scale != qo.scale || qi.zero_point != qo.zero_point)) {
    throw Unsupported(str_cat(l.label, ": input and output quantization differ"));
  }
  if (l.unit == Unit::kAvgPool && !ort_float && !is_pool_unit_average(op)) {
    // TFLite's average pool other than 2x2 stride 2 is
    // lower_average_pool_regions'; ONNX Runtime's float32 pools (POOL_FP32)
    // take the max pool's windows.
    throw Unsupported(str_cat(l.label, ": average pool must be 2x2 with stride 2"));
  }
  l.input_zero_point = qi.zero_point;
  l.output_zero_point = qo.zero_point;
  l.int16_maps = int16_maps_of(in, out, l.label);
  const FusedActivation act = fused_activation_of(op.attrs.activation, l.label);
  set_activation_range(l, act, qo);
  if (ort_float && l.int16_maps) throw Unsupported(str_cat(l.label, ": int16 with ONNX Runtime"));
  if (ort_float) {
    // QLinearAveragePool, or the unfused DequantizeLinear -> float
    // AveragePool -> QuantizeLinear (NACC_ACT_PARA.POOL_FP32, POOL_FP32_MODE):
    // the zero points in the kernel's value domain (U8_DOMAIN), the two
    // scales as float32.
    PoolParams pp;
    pp.act_min = l.act_min;
    pp.act_max = l.act_max;
    const OrtKernel kernel = ok == ir::Attributes::OnnxKernel::kFusedU8   ? OrtKernel::kFusedU8
                             : ok == ir::Attributes::OnnxKernel::kFusedS8 ? OrtKernel::kFusedS8
                                                                          : OrtKernel::kUnfused;
    ort_average_pool_params(kernel, {qi.scale, qi.zero_point}, {qo.scale, qo.zero_point},
                            op.attrs.ort_pool_by_columns, &pp);
    l.pool_fp32 = true;
    l.pool_fp32_mode = pp.float_mode;
    l.u8_domain = pp.domain.u8;
    l.fp32_scale = {pp.input_scale, pp.output_scale};
    l.input_zero_point = pp.input_zero_point;
    l.output_zero_point = pp.output_zero_point;
  }
}

bool is_channel_vector(const Shape4& s, const Shape4& out) {
  return s.h == 1 && s.w == 1 && (s.c == out.c || s.c == 1);
}

// The clamp of a Relu / Relu6 / ReluN1To1 between an ONNX op and its
// QuantizeLinear: the float clip, then QuantizeLinear, is max / min of the
// quantized bound (round half to even of bound / scale in float32).
void ort_activation_range(FusedActivation act, float scale, int32_t zp, int32_t* lo, int32_t* hi) {
  const auto q = [&](float bound) {
    const float v = std::nearbyint(bound / scale) + static_cast<float>(zp);
    return static_cast<int32_t>(std::fmin(std::fmax(v, -128.0f), 127.0f));
  };
  *lo = -128;
  *hi = 127;
  switch (act) {
    case FusedActivation::kRelu: *lo = q(0.0f); break;
    case FusedActivation::kRelu6: *lo = q(0.0f); *hi = q(6.0f); break;
    case FusedActivation::kReluN1To1: *lo = q(-1.0f); *hi = q(1.0f); break;
    default: break;
  }
}

// ADD / SUB / MUL as ONNX Runtime's CPU EP computes the node
// (ir::Attributes::onnx_kernel; quant/onnxruntime.h): the float32 modes of
// the element-wise unit (NACC_ACT_PARA.ELEMENT_FP32, U8_DOMAIN).
void lower_ort_elementwise(const ir::Op& op, const Quant& qa, const Quant& qb, const Quant& qo,
                           FusedActivation act, bool swapped, bool both_full, LoweredOp& l) {
  using K = ir::Attributes::OnnxKernel;
  const OrtKernel kernel = op.attrs.onnx_kernel == K::kFusedU8   ? OrtKernel::kFusedU8
                           : op.attrs.onnx_kernel == K::kFusedS8 ? OrtKernel::kFusedS8
                                                                 : OrtKernel::kUnfused;
  if (op.kind == OpKind::kAdd && kernel != OrtKernel::kUnfused && swapped && both_full) {
    // QLinearAdd nests B inside A for two full tensors; the NPU nests its
    // second input, which is the constant A here.
    throw Unsupported(str_cat(l.label, ": QLinearAdd with a constant full-size first operand"));
  }
  const ElementwiseMode mode = op.kind == OpKind::kAdd   ? ElementwiseMode::ADD
                               : op.kind == OpKind::kSub ? ElementwiseMode::SUB
                                                         : ElementwiseMode::MUL;
  int32_t lo = -128, hi = 127;
  ort_activation_range(act, qo.scale, qo.zero_point, &lo, &hi);
  l.eltwise = ort_elementwise_params(mode, kernel, {qa.scale, qa.zero_point},
                                     {qb.scale, qb.zero_point}, {qo.scale, qo.zero_point}, lo, hi,
                                     swapped);
  l.fp32_scale.assign(l.eltwise.float_params, l.eltwise.float_params + 3);
  l.u8_domain = l.eltwise.domain.u8;
  l.input_zero_point = qa.zero_point;
  l.output_zero_point = l.eltwise.output_zero_point;  // in the domain (OUT_FM_OFFSET)
  l.act_min = lo;
  l.act_max = hi;
  l.act_mode = act_mode_of(act);
}

void lower_elementwise(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  l.unit = Unit::kElementwise;
  int a = op.inputs[0], b = op.inputs[1];
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.out_shape = nhwc_of(out.shape);
  Shape4 sa = nhwc_of(g.tensor(a).shape), sb = nhwc_of(g.tensor(b).shape);
  const Quant qo = per_tensor(out, l.label);
  Quant qa = per_tensor(g.tensor(a), l.label), qb = per_tensor(g.tensor(b), l.label);
  // The IFM must be an operand of the output's shape and a runtime tensor;
  // ADD and MUL are symmetric, so their operands may swap (exactly: each
  // input keeps its own offset, multiplier and shift).
  const bool symmetric = op.kind != OpKind::kSub;
  const bool a_full = sa == l.out_shape, b_full = sb == l.out_shape;
  const bool a_const = g.tensor(a).is_constant(), b_const = g.tensor(b).is_constant();
  const bool swap = symmetric && ((!a_full && b_full) || (a_full && b_full && a_const && !b_const));
  if (swap) {
    std::swap(a, b);
    std::swap(sa, sb);
    std::swap(qa, qb);
  }
  if (sa != l.out_shape) {
    throw Unsupported(str_cat(l.label, ": the first operand ", sa.str(),
                              " is broadcast against ", sb.str(),
                              "; only the second operand of SUB may be broadcast"));
  }
  if (g.tensor(a).is_constant()) {
    throw Unsupported(str_cat(l.label, ": a constant operand needs a runtime operand beside it"));
  }
  if (sb != l.out_shape && !is_channel_vector(sb, l.out_shape)) {
    throw Unsupported(str_cat(l.label, ": operand ", sb.str(), " is neither ", l.out_shape.str(),
                              " nor a [1,1,1,C] vector"));
  }
  l.input = a;
  l.input2 = b;
  l.in_shape = sa;
  l.input2_broadcast = sb != l.out_shape;
  l.int16_maps = int16_maps_of(g.tensor(a), out, l.label);
  if (l.int16_maps) {
    if (g.tensor(b).dtype != ir::DType::kInt16 ||
        op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
      throw Unsupported(str_cat(l.label, ": 16x8 element-wise ops are TFLite's ADD, SUB and MUL "
                                         "of two int16 operands"));
    }
    if (g.tensor(b).is_constant()) {
      throw Unsupported(str_cat(l.label, ": a constant int16 operand (fold it on the host)"));
    }
  }
  if (g.tensor(b).is_constant()) {
    l.input2_is_constant = true;
    l.input2_constant = int8_data(g.tensor(b), l.label, "operand");
    if (l.input2_broadcast && sb.c != l.out_shape.c) {  // a scalar: one entry per channel
      l.input2_constant.assign(l.out_shape.c, l.input2_constant.at(0));
    }
  } else if (l.input2_broadcast && sb.c != l.out_shape.c) {
    // A runtime scalar: element-wise ops ignore the layout, so view both
    // full-size tensors as [1, H, W*C, 1] and re-read the one byte per pixel.
    const int64_t wide = int64_t(l.out_shape.w) * l.out_shape.c;
    if (wide > limits::kMaxFeatureMapDim) {
      throw Unsupported(str_cat(l.label, ": a runtime scalar operand against a row of ", wide,
                                " elements (the [1, H, W*C, 1] view needs W*C <= ",
                                limits::kMaxFeatureMapDim, ")"));
    }
    l.out_shape = Shape4{1, l.out_shape.h, int(wide), 1};
    l.in_shape = l.out_shape;
  }
  const FusedActivation act = fused_activation_of(op.attrs.activation, l.label);
  if (op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
    // One element: both operands are scalars to ONNX Runtime, which folds A's
    // term (its input0-scalar path), as the NPU does with A as its second input.
    lower_ort_elementwise(op, qa, qb, qo, act, swap,
                          a_full && b_full && l.out_shape.elements() > 1, l);
    return;
  }
  if (l.int16_maps) {  // 16x8: zero offsets, the int16 clamp
    if (op.kind == OpKind::kMul) {
      // 16x8 MUL (reference_integer_ops::Mul on int16): the 32-bit MBQM of the
      // int32 product.
      l.eltwise = tflite_mul_params(qa.scale, 0, qb.scale, 0, qo.scale, 0, act);
      fused_activation_range_int16(act, qo.scale, 0, &l.eltwise.act_min, &l.eltwise.act_max);
      if (l.eltwise.output_shift > 0) {
        throw Unsupported(str_cat(l.label, ": int16 MUL with s1 * s2 / s_out >= 1 (a left shift "
                                           "of the int32 product could overflow)"));
      }
    } else {  // ADD / SUB: left_shift 15
      l.eltwise = tflite_add_sub_params_16x8(
          op.kind == OpKind::kAdd ? ElementwiseMode::ADD : ElementwiseMode::SUB, qa.scale,
          qb.scale, qo.scale, act);
    }
    l.act_min = l.eltwise.act_min;
    l.act_max = l.eltwise.act_max;
    l.act_mode = act_mode_of(act);
    l.multiplier = {l.eltwise.output_multiplier};
    l.shift = {l.eltwise.output_shift};
    return;
  }
  switch (op.kind) {
    case OpKind::kAdd:
      l.eltwise = tflite_add_params(qa.scale, qa.zero_point, qb.scale, qb.zero_point, qo.scale,
                                    qo.zero_point, act);
      break;
    case OpKind::kSub:
      l.eltwise = tflite_sub_params(qa.scale, qa.zero_point, qb.scale, qb.zero_point, qo.scale,
                                    qo.zero_point, act);
      break;
    default:
      l.eltwise = tflite_mul_params(qa.scale, qa.zero_point, qb.scale, qb.zero_point, qo.scale,
                                    qo.zero_point, act);
      break;
  }
  validate_elementwise_params(l.eltwise);
  l.input_zero_point = qa.zero_point;
  l.output_zero_point = qo.zero_point;
  l.act_min = l.eltwise.act_min;
  l.act_max = l.eltwise.act_max;
  l.act_mode = act_mode_of(act);
  l.multiplier = {l.eltwise.output_multiplier};
  l.shift = {l.eltwise.output_shift};
}

void lower_tflite_lut(const ir::Op& op, const Quant& qi, const Quant& qo, LoweredOp& l);

// Single-input int8 -> int8 ops: the activation unit in LUT mode, with the
// frontend's table (ir::Attributes::lut) when it gives one, else TFLite's.
// An int16 requantization (16x8) with the 32-bit MultiplyByQuantizedMultiplier
// `q`, clamped to [lo, hi]: an identity 1x1 16-bit depthwise pass (weights 1,
// no bias: the accumulator is the input value) with the 32-bit output stage
// (QUANT_MUL32); MBQM's left shift wraps in int32 as TFLite's does.
void lower_requantize16(const ir::Op& op, const QuantizedMultiplier& q, int32_t lo, int32_t hi,
                        LoweredOp& l) {
  l.unit = Unit::kDepthwise;
  ir::Op window = op;
  window.attrs.padding = {};
  window.attrs.stride_h = window.attrs.stride_w = 1;
  window.attrs.dilation_h = window.attrs.dilation_w = 1;
  set_window(l, window, 1, 1);
  const int c = l.in_shape.c;
  l.weights.assign(size_t(c), 1);
  l.multiplier.assign(size_t(c), q.multiplier);
  l.shift.assign(size_t(c), q.shift);
  l.mul32 = true;
  l.input_zero_point = l.output_zero_point = 0;
  l.act_min = lo;
  l.act_max = hi;
  l.act_mode = ActMode::NONE;
}

// QUANTIZE int16 -> int16 (16x8; TFLite 2.21 quantize.cc, reference_ops::
// Requantize): MBQM(x, QuantizeMultiplier(double(s_in) / double(s_out)))
// clamped to int16 (zero points 0), checked against BUILTIN_REF.
void lower_quantize16(const ir::Op& op, const ir::Tensor& in, const ir::Tensor& out,
                      LoweredOp& l) {
  l.int16_maps = int16_maps_of(in, out, l.label);
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  const QuantizedMultiplier q =
      quantize_multiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale));
  lower_requantize16(op, q, -32768, 32767, l);
}

// RELU / RELU6 on int16 (16x8): TFLite's QuantizedReluX applies
// MultiplyByQuantizedMultiplier with QuantizeMultiplier(float(s_in / s_out)),
// then clamps to [max(-32768, round(lo / s)), min(32767, round(hi / s))]
// (float32). With one scale the multiplier is (2^30, 1), the identity: an
// identity 1x1 max-pool pass with that clamp; another output scale: the
// 16-bit depthwise requantization pass (lower_requantize16).
void lower_relu16(const ir::Op& op, const ir::Tensor& in, const ir::Tensor& out, LoweredOp& l) {
  l.int16_maps = int16_maps_of(in, out, l.label);
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  const auto q = [&](float f) {
    return static_cast<int32_t>(std::round(f / qo.scale));
  };
  const int32_t lo = std::max(-32768, q(0.0f));
  const int32_t hi = op.kind == OpKind::kRelu6 ? std::min(32767, q(6.0f)) : 32767;
  if (qi.scale != qo.scale) {
    const float ratio = qi.scale / qo.scale;  // float32, as ReluPrepare
    lower_requantize16(op, quantize_multiplier(static_cast<double>(ratio)), lo, hi, l);
    return;
  }
  l.unit = Unit::kMaxPool;
  ir::Op window = op;
  window.attrs.padding = {};
  window.attrs.stride_h = window.attrs.stride_w = 1;
  window.attrs.dilation_h = window.attrs.dilation_w = 1;
  set_window(l, window, 1, 1);
  l.act_min = lo;
  l.act_max = hi;
  l.act_mode = ActMode::NONE;
}

// LOGISTIC / TANH 16x8: the activation unit's 16-bit table modes (NACC_SPEC
// §9), ACT_MODE SIGMOID / TANH with the input multiplier and shift of TFLite's
// Prepare as the one QUANT_MUL / QUANT_SHIFT entry. TFLite requires the output
// scale 2^-15 (Prepare fails otherwise); the output is not clamped further.
void lower_sigmoid_tanh16(const ir::Op& op, const ir::Tensor& in, const ir::Tensor& out,
                          LoweredOp& l) {
  l.int16_maps = int16_maps_of(in, out, l.label);
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  if (qo.scale != 1.0f / 32768.0f) {
    throw Unsupported(str_cat(l.label, ": int16 ", op.kind == OpKind::kTanh ? "TANH" : "LOGISTIC",
                              " output scale ", qo.scale, " (TFLite requires 2^-15)"));
  }
  const bool tanh = op.kind == OpKind::kTanh;
  SigmoidTanh16Params p;
  try {
    p = tflite_sigmoid_tanh16_params(tanh, qi.scale);
  } catch (const InvalidArgument& e) {
    throw Unsupported(str_cat(l.label, ": ", e.what()));
  }
  l.act_mode = tanh ? ActMode::TANH : ActMode::SIGMOID;
  l.multiplier = {p.multiplier};
  l.shift = {p.shift};
  l.act_min = -32768;
  l.act_max = 32767;
}

// MAXIMUM / MINIMUM of a runtime tensor and a constant of one value c (the
// rules checked it): the activation unit's table, entry i = max / min of the
// stored values (int8)i and c, which is what TFLite's int8 kernel computes
// element by element (maximum_minimum.cc compares the raw values).
void lower_max_min(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& a = g.tensor(op.inputs[0]);
  const ir::Tensor& b = g.tensor(op.inputs[1]);
  if (a.is_constant() == b.is_constant()) {
    throw Unsupported(str_cat(l.label, ": needs one runtime operand and one constant"));
  }
  const int x = a.is_constant() ? op.inputs[1] : op.inputs[0];
  const ir::Tensor& c = a.is_constant() ? a : b;
  const ir::Tensor& in = g.tensor(x);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  if (in.dtype != ir::DType::kInt8 || out.dtype != ir::DType::kInt8 || c.dtype != ir::DType::kInt8 ||
      !c.data || c.data->empty()) {
    throw Unsupported(str_cat(l.label, ": int8 operands only"));
  }
  const int8_t v = static_cast<int8_t>((*c.data)[0]);
  for (uint8_t e : *c.data) {
    if (static_cast<int8_t>(e) != v) {
      throw Unsupported(str_cat(l.label, ": the constant operand holds more than one value"));
    }
  }
  l.input = x;
  l.unit = Unit::kActivation;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  check_arg(l.in_shape == l.out_shape, l.label, ": input ", l.in_shape.str(), " != output ",
            l.out_shape.str());
  for (int i = 0; i < limits::kLutEntries; ++i) {
    const int8_t q = static_cast<int8_t>(static_cast<uint8_t>(i));
    l.lut[size_t(i)] = op.kind == OpKind::kMaximum ? std::max(q, v) : std::min(q, v);
  }
  l.input_zero_point = l.output_zero_point = 0;
  l.has_lut = true;
  l.act_mode = ActMode::LUT;
  l.act_min = -128;
  l.act_max = 127;
}

void lower_activation(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.unit = Unit::kActivation;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  check_arg(l.in_shape == l.out_shape, l.label, ": input ", l.in_shape.str(), " != output ",
            l.out_shape.str());
  if (in.dtype == ir::DType::kInt16 && (op.kind == OpKind::kRelu || op.kind == OpKind::kRelu6)) {
    lower_relu16(op, in, out, l);
    return;
  }
  if (in.dtype == ir::DType::kInt16 && (op.kind == OpKind::kLogistic || op.kind == OpKind::kTanh)) {
    lower_sigmoid_tanh16(op, in, out, l);
    return;
  }
  if (in.dtype == ir::DType::kInt16 && op.kind == OpKind::kQuantize) {
    lower_quantize16(op, in, out, l);
    return;
  }
  if (in.dtype != ir::DType::kInt8 || out.dtype != ir::DType::kInt8) {
    throw Unsupported(str_cat(l.label, ": ", ir::dtype_name(in.dtype), " -> ",
                              ir::dtype_name(out.dtype), " (the activation unit maps int8 to int8)"));
  }
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  l.input_zero_point = qi.zero_point;
  l.output_zero_point = qo.zero_point;
  const std::vector<int8_t>& given = op.attrs.lut;
  if (!given.empty()) {
    // The frontend's own table (e.g. the ONNX Runtime EP's ONNX semantics):
    // used as given, whatever the op kind's TFLite arithmetic would be.
    if (given.size() != static_cast<size_t>(limits::kLutEntries)) {
      throw Unsupported(str_cat(l.label, ": the frontend's lookup table has ", given.size(),
                                " entries, the activation unit takes ", limits::kLutEntries));
    }
    std::memcpy(l.lut.data(), given.data(), given.size());
  } else {
    lower_tflite_lut(op, qi, qo, l);
  }
  l.has_lut = true;
  l.act_mode = ActMode::LUT;
  l.act_min = -128;
  l.act_max = 127;
}

// TFLite's own table for the op's quantization (activations.cc, quantize.cc).
void lower_tflite_lut(const ir::Op& op, const Quant& qi, const Quant& qo, LoweredOp& l) {
  switch (op.kind) {
    case OpKind::kHardSwish:
      l.lut = lut_tflite_hard_swish(qi.scale, qi.zero_point, qo.scale, qo.zero_point);
      break;
    case OpKind::kLeakyRelu:
      l.lut = lut_tflite_leaky_relu(qi.scale, qi.zero_point, qo.scale, qo.zero_point,
                                    op.attrs.alpha);
      break;
    case OpKind::kQuantize:
      l.lut = lut_tflite_requantize(qi.scale, qi.zero_point, qo.scale, qo.zero_point);
      break;
    case OpKind::kLogistic:
      l.lut = lut_tflite_logistic(qi.scale, qi.zero_point, qo.scale, qo.zero_point);
      break;
    case OpKind::kTanh:
      l.lut = lut_tflite_tanh(qi.scale, qi.zero_point, qo.scale, qo.zero_point);
      break;
    default: {
      // The RELU family: TFLite's requantize-and-clamp on all 256 inputs.
      const ReluKind kind = op.kind == OpKind::kRelu    ? ReluKind::kRelu
                            : op.kind == OpKind::kRelu6 ? ReluKind::kRelu6
                                                        : ReluKind::kReluN1To1;
      l.lut = lut_tflite_relu(kind, qi.scale, qi.zero_point, qo.scale, qo.zero_point);
      break;
    }
  }
}


// ---- graph-level lowerings (PAD, MEAN) ------------------------------------------

// The identity output stage: multiplier 2^30 with shift 1 is exactly 1.0
// (MultiplyByQuantizedMultiplier(x, 2^30, 1) == x for every int32 x that
// doubles without overflow).
constexpr int32_t kUnitMultiplier = int32_t(1) << 30;
constexpr int kUnitShift = 1;

// A PAD that does not fold into its consumer (support/pad_fold.h): an
// identity depthwise pass. Weights are one-hot at tap (bottom, right) of a
// (top + bottom + 1) x (left + right + 1) window with window padding
// top + bottom and left + right, so output (y, x) reads input
// (y - top, x - left); IN_FM_OFFSET = -pad value and OUT_FM_OFFSET = pad
// value make valid pixels pass unchanged and padded ones the pad value.
// Every window holds at least one input pixel (no all-padding tile).
void lower_pad(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  const auto& p = op.attrs.paddings;
  check_arg(p.size() == 4 && in.rank() == 4, l.label, ": PAD needs a 4-D input");
  if (p[0][0] || p[0][1] || p[3][0] || p[3][1]) {
    throw Unsupported(str_cat(l.label, ": pads batch or channels"));
  }
  const int top = int(p[1][0]), bottom = int(p[1][1]), left = int(p[2][0]), right = int(p[2][1]);
  if (top + bottom > limits::kMaxPadding || left + right > limits::kMaxPadding) {
    throw Unsupported(str_cat(l.label, ": a standalone PAD pads at most ", limits::kMaxPadding,
                              " rows and columns in all (height ", top, "+", bottom, ", width ",
                              left, "+", right, ")"));
  }
  l.unit = Unit::kDepthwise;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  const int kh = top + bottom + 1, kw = left + right + 1;
  ir::Op window = op;
  window.attrs.padding = {top + bottom, top + bottom, left + right, left + right};
  window.attrs.stride_h = window.attrs.stride_w = 1;
  window.attrs.dilation_h = window.attrs.dilation_w = 1;
  set_window(l, window, kh, kw);
  const Quant qo = per_tensor(out, l.label);
  // The IR's PAD pads with the output zero point (TFLite's int8 PAD; PADV2
  // with another value is declined by the frontend).
  l.input_zero_point = qo.zero_point;
  l.output_zero_point = qo.zero_point;
  const int c = l.in_shape.c;
  l.weights.assign(size_t(kh) * kw * c, 0);
  const size_t tap = size_t(bottom) * kw + right;
  for (int ch = 0; ch < c; ++ch) l.weights[tap * c + ch] = 1;
  l.multiplier.assign(c, kUnitMultiplier);
  l.shift.assign(c, kUnitShift);
  // 16x8: the 16x8 output stage of the unit multiplier is the identity too
  // (m16 = 2^14, (acc * 2^14 + 2^13) >> 14 = acc).
  l.int16_maps = int16_maps_of(in, out, l.label);
  l.act_min = l.int16_maps ? -32768 : -128;
  l.act_max = l.int16_maps ? 32767 : 127;
  l.act_mode = ActMode::NONE;
}

// MEAN over height and width: a depthwise window over the whole input with
// unit weights and TFLite's MEAN requantization (quant/tflite.h): the unit
// computes MBQM(sum(x - zi), m', s') + zo exactly as TFLite's reference does.
// The sum over all H x W cells of each channel on the matrix unit: A = one
// row of K = H*W ones (constant region), B = the input viewed as [K, C] (its
// NHWC bytes as they are: row k is cell k's C channels), B's zero point the
// input's, so acc[c] = sum_k 1 * (x[k][c] - zi) in int32 — the same sum the
// depthwise window forms, with no window limit (MATRIX_A_XSIZE and IN_FM_CH
// are 16-bit). The caller sets the output stage.
void lower_ones_matmul(const ir::Tensor& in, int32_t b_zero_point, LoweredOp& l) {
  const Shape4 s = nhwc_of(in.shape);
  const int64_t cells = int64_t(s.h) * s.w;
  if (cells > limits::kMaxFeatureMapDim) {
    throw Unsupported(str_cat(l.label, ": ", s.h, "x", s.w, " = ", cells, " cells exceed ",
                              limits::kMaxFeatureMapDim,
                              " (the ones operand's K, NACC_MATRIX_A.MATRIX_A_XSIZE)"));
  }
  l.unit = Unit::kMatmul;
  l.ones_a = true;
  l.input2 = l.input;
  l.in_shape = Shape4{1, 1, 1, int(cells)};
  l.out_shape = Shape4{1, 1, 1, s.c};
  l.input_zero_point = 0;  // A's (the ones)
  l.b_zero_point = b_zero_point;
}

void lower_mean(const ir::Graph& g, const ir::Op& op, LoweredOp& l) {
  const ir::Tensor& in = g.tensor(op.inputs[0]);
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  l.unit = Unit::kDepthwise;
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = Shape4{1, 1, 1, l.in_shape.c};
  check_arg(in.rank() == 4 && out.elements() == l.in_shape.c, l.label, ": input ",
            ir::shape_str(in.shape), " / output ", ir::shape_str(out.shape),
            " is not a reduction over height and width");
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(out, l.label);
  const int c = l.in_shape.c;
  const int64_t cells = int64_t(l.in_shape.h) * l.in_shape.w;
  l.int16_maps = int16_maps_of(in, out, l.label);
  if (l.int16_maps) {
    // TFLite's int16 MEAN (reduce.cc, kReference for every resolver:
    // reference_ops::QuantizedMeanOrSum) sums the int16 values in int32 and
    // applies the int8 formula with zero points 0: one 16-bit depthwise
    // window with unit weights and the 32-bit output stage (QUANT_MUL32); the
    // sum of at most 15 x 15 int16 values fits int32.
    if (l.in_shape.h > limits::kMaxKernel || l.in_shape.w > limits::kMaxKernel ||
        op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
      throw Unsupported(str_cat(l.label, ": an int16 MEAN over ", l.in_shape.h, "x",
                                l.in_shape.w, " cells (one 16-bit depthwise window holds ",
                                limits::kMaxKernel, "x", limits::kMaxKernel, ")"));
    }
    l.mul32 = true;
  }
  if (l.in_shape.h <= limits::kMaxKernel && l.in_shape.w <= limits::kMaxKernel) {
    ir::Op window = op;
    window.attrs.padding = {};
    window.attrs.stride_h = window.attrs.stride_w = 1;
    window.attrs.dilation_h = window.attrs.dilation_w = 1;
    set_window(l, window, l.in_shape.h, l.in_shape.w);
    l.weights.assign(size_t(cells) * c, 1);
    l.input_zero_point = qi.zero_point;
  } else {
    lower_ones_matmul(in, qi.zero_point, l);
  }
  l.output_zero_point = qo.zero_point;
  switch (op.attrs.onnx_kernel) {
    case ir::Attributes::OnnxKernel::kNone: {
      const QuantizedMultiplier r = tflite_mean_requantization(qi.scale, qo.scale, cells);
      l.multiplier.assign(c, r.multiplier);
      l.shift.assign(c, r.shift);
      break;
    }
    case ir::Attributes::OnnxKernel::kUnfused:
      throw Unsupported(str_cat(l.label, ": ONNX Runtime's unfused GlobalAveragePool (float "
                                "mean, then QuantizeLinear) has no NPU mode"));
    default:
      // QLinearGlobalAveragePool: sum(x - z_x) in int32, the float32 output
      // stage with s_x / (s_y * N) (the same in the S8 and U8 domains).
      l.fp32_scale.assign(c, ort_global_average_pool_scale(qi.scale, qo.scale, cells));
      break;
  }
  l.act_min = l.int16_maps ? -32768 : -128;
  l.act_max = l.int16_maps ? 32767 : 127;
  l.act_mode = ActMode::NONE;
}

// One part of CONCATENATION (see lower.h): input `k` of the op copied into
// channels [offset, offset + c_k) of the output.
LoweredOp concat_part(const ir::Graph& g, const ir::Op& op, const LoweredOp& base, int k,
                      int offset, int total) {
  LoweredOp l = base;
  const ir::Tensor& in = g.tensor(op.inputs[k]);
  l.label = str_cat(base.label, " input ", k);
  if (in.is_constant()) {
    throw Unsupported(str_cat(l.label, ": '", in.name, "' is a constant (fold it on the host)"));
  }
  l.unit = Unit::kMaxPool;
  l.input = op.inputs[k];
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = l.in_shape;
  ir::Op window = op;
  window.attrs.padding = {};
  window.attrs.stride_h = window.attrs.stride_w = 1;
  window.attrs.dilation_h = window.attrs.dilation_w = 1;
  set_window(l, window, 1, 1);
  const Quant qi = per_tensor(in, l.label), qo = per_tensor(g.tensor(op.outputs[0]), l.label);
  if (qi.scale != qo.scale || qi.zero_point != qo.zero_point) {
    throw Unsupported(str_cat(l.label, ": input and output quantization differ"));
  }
  if (op.attrs.activation != ir::Activation::kNone) {
    throw Unsupported(str_cat(l.label, ": fused activation ", ir::activation_name(op.attrs.activation),
                              " (TFLite's CONCATENATION requires NONE)"));
  }
  l.input_zero_point = l.output_zero_point = qo.zero_point;
  l.int16_maps = int16_maps_of(in, g.tensor(op.outputs[0]), l.label);
  l.act_min = l.int16_maps ? -32768 : -128;
  l.act_max = l.int16_maps ? 32767 : 127;
  l.act_mode = ActMode::NONE;
  l.out_channel_offset = offset;
  l.out_pixel_pitch = total;
  return l;
}

}  // namespace

std::vector<LoweredOp> lower_concatenation(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(op.kind == OpKind::kConcatenation && !op.inputs.empty() && op.outputs.size() == 1,
            base.label, ": not a CONCATENATION with inputs and one output");
  base.output = op.outputs[0];
  const ir::Tensor& out = graph.tensor(base.output);
  const int rank = out.rank();
  const int axis = op.attrs.axis < 0 ? op.attrs.axis + rank : op.attrs.axis;
  // The axis in the NHWC view with leading ones: 3 channels, 2 columns, 1 rows.
  const int view_axis = 4 - rank + axis;
  if (axis < 0 || axis >= rank || view_axis < 1) {
    throw Unsupported(str_cat(base.label, ": axis ", op.attrs.axis, " of a rank-", rank,
                              " output is neither the channels, the columns nor the rows"));
  }
  const Shape4 o = nhwc_of(out.shape);
  std::vector<LoweredOp> parts;
  int offset = 0;
  try {
    for (int k = 0; k < int(op.inputs.size()); ++k) {
      if (view_axis == 3) {
        parts.push_back(concat_part(graph, op, base, k, offset, o.c));
      } else {
        // Rows or columns: the input written dense at its first row
        // (offset x W x C bytes) or column (offset x C bytes, rows W_out x C apart).
        LoweredOp l = concat_part(graph, op, base, k, 0, 0);
        l.out_pixel_pitch = 0;
        l.out_byte_offset = int64_t(offset) * (view_axis == 1 ? int64_t(o.w) * o.c : o.c) * l.elem();
        if (view_axis == 2) l.out_row_pitch = int64_t(o.w) * o.c * l.elem();
        parts.push_back(std::move(l));
      }
      const Shape4& in = parts.back().in_shape;
      const bool fits = view_axis == 3   ? in.h == o.h && in.w == o.w
                        : view_axis == 2 ? in.h == o.h && in.c == o.c
                                         : in.w == o.w && in.c == o.c;
      check_arg(fits && in.n == o.n, base.label, ": input ", k, " ", in.str(), " does not match output ",
                o.str());
      offset += view_axis == 3 ? in.c : view_axis == 2 ? in.w : in.h;
    }
  } catch (const InvalidArgument& e) {
    throw Unsupported(e.what());
  }
  const int total = view_axis == 3 ? o.c : view_axis == 2 ? o.w : o.h;
  check_arg(offset == total, base.label, ": inputs have ", offset, " on the axis, output ", total);
  return parts;
}

std::vector<LoweredOp> lower_slice(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(op.kind == OpKind::kSlice && op.inputs.size() == 1 && op.inputs[0] >= 0 &&
                !op.outputs.empty() && op.attrs.slice_begin.size() == op.outputs.size(),
            base.label, ": not a SLICE with one input and an origin per output");
  if (auto e = ir::op_shape_error(graph, op)) throw Unsupported(str_cat(base.label, ": ", *e));
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  if (in.is_constant()) {
    throw Unsupported(str_cat(base.label, ": its input '", in.name, "' is a constant (fold it on the host)"));
  }
  if (in.dtype != ir::DType::kInt8) {
    throw Unsupported(str_cat(base.label, ": ", ir::dtype_name(in.dtype), " input (8-bit copies only)"));
  }
  const int rank = in.rank();
  if (rank > 4 || !in.is_static()) {
    throw Unsupported(str_cat(base.label, ": input ", ir::shape_str(in.shape), " is not a static ",
                              "tensor of rank at most 4"));
  }
  // The tensors as NHWC views with leading ones (nhwc_of).
  const auto view = [&](const std::vector<int64_t>& v, int64_t fill) {
    std::array<int64_t, 4> r{fill, fill, fill, fill};
    for (int d = 0; d < rank; ++d) r[size_t(4 - rank + d)] = v[size_t(d)];
    return r;
  };
  const std::array<int64_t, 4> is = view(in.shape, 1), st = view(op.attrs.slice_strides, 1);
  std::vector<LoweredOp> parts;
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const ir::Tensor& out = graph.tensor(op.outputs[k]);
    const std::array<int64_t, 4> os = view(out.shape, 1), b = view(op.attrs.slice_begin[k], 0);
    LoweredOp l = base;
    l.label = op.outputs.size() == 1 ? base.label : str_cat(base.label, " output ", k);
    if (out.dtype != in.dtype) {
      throw Unsupported(str_cat(l.label, ": output is ", ir::dtype_name(out.dtype), ", input ",
                                ir::dtype_name(in.dtype)));
    }
    if (os[0] != 1) {
      throw Unsupported(str_cat(l.label, ": output ", ir::shape_str(out.shape), " holds ", os[0],
                                " images (the fourth dimension from the end must be 1)"));
    }
    if (os[3] > 1 && st[3] != 1) {
      throw Unsupported(str_cat(l.label, ": channel stride ", st[3], " (each pixel's channels are "
                                         "read as one contiguous run)"));
    }
    // A 1x1 max-pool identity (input and output offset 0, the full int8
    // clamp: a byte copy) whose DMA reads pixel (i, j) of the output from
    // byte ((b_n*H + b_h + s_h*i)*W + b_w + s_w*j)*C + b_c of the input.
    l.unit = Unit::kMaxPool;
    l.input = op.inputs[0];
    l.output = op.outputs[k];
    l.in_shape = l.out_shape = Shape4{1, int(os[1]), int(os[2]), int(os[3])};
    l.input_zero_point = l.output_zero_point = 0;
    l.act_min = -128;
    l.act_max = 127;
    l.act_mode = ActMode::NONE;
    l.in_pixel_pitch = st[2] * is[3];
    l.in_row_pitch = st[1] * is[2] * is[3];
    l.in_byte_offset = ((b[0] * is[1] + b[1]) * is[2] + b[2]) * is[3] + b[3];
    l.lowering = "slice_copy";
    parts.push_back(std::move(l));
  }
  return parts;
}

namespace {

// The op's one int8 runtime input and output as 4-D NHWC of one image, for
// the copy lowerings (lower_resize_nearest, lower_space_depth).
void copy_io(const ir::Graph& graph, const ir::Op& op, LoweredOp& base) {
  base.op_index = -1;
  check_arg(!op.inputs.empty() && op.inputs[0] >= 0 && op.outputs.size() == 1, base.label,
            ": needs an input and one output");
  if (auto e = ir::op_shape_error(graph, op)) throw Unsupported(str_cat(base.label, ": ", *e));
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  const ir::Tensor& out = graph.tensor(op.outputs[0]);
  if (in.is_constant()) {
    throw Unsupported(str_cat(base.label, ": its input '", in.name, "' is a constant (fold it on the host)"));
  }
  // int16: an NCHW <-> NHWC one only (the layout unit's b16 form, or the
  // copy passes over the bytes of each element).
  const bool int16_layout = in.dtype == ir::DType::kInt16 && out.dtype == ir::DType::kInt16 &&
                            support::layout_transpose(in.shape, op.attrs.perm, nullptr, 2);
  if (!int16_layout && (in.dtype != ir::DType::kInt8 || out.dtype != ir::DType::kInt8)) {
    throw Unsupported(str_cat(base.label, ": ", ir::dtype_name(in.dtype), " -> ",
                              ir::dtype_name(out.dtype),
                              " (8-bit copies, or an int16 NCHW <-> NHWC conversion)"));
  }
  if (in.rank() != 4 || out.rank() != 4 || in.shape[0] != 1 || out.shape[0] != 1) {
    throw Unsupported(str_cat(base.label, ": ", ir::shape_str(in.shape), " -> ",
                              ir::shape_str(out.shape), " are not one NHWC image"));
  }
  base.input = op.inputs[0];
  base.output = op.outputs[0];
}

// A 1x1 max-pool identity pass (offsets 0, the full int8 clamp: a byte copy)
// of `shape` pixels, addressed through the pitch fields the caller sets.
LoweredOp copy_pass(const LoweredOp& base, const std::string& what, Shape4 shape) {
  LoweredOp l = base;
  l.label = what.empty() ? base.label : str_cat(base.label, " ", what);
  l.unit = Unit::kMaxPool;
  l.in_shape = l.out_shape = shape;
  l.input_zero_point = l.output_zero_point = 0;
  l.act_min = -128;
  l.act_max = 127;
  l.act_mode = ActMode::NONE;
  return l;
}

}  // namespace

std::vector<LoweredOp> lower_resize_nearest(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  check_arg(op.kind == OpKind::kResizeNearest, base.label, ": not a RESIZE_NEAREST_NEIGHBOR");
  copy_io(graph, op, base);
  base.op_index = op_index;
  const Shape4 is = nhwc_of(graph.tensor(base.input).shape);
  const Shape4 os = nhwc_of(graph.tensor(base.output).shape);
  std::string why;
  const auto fh = support::nearest_replication_factor(is.h, os.h, op.attrs.align_corners,
                                                      op.attrs.half_pixel_centers, &why);
  if (!fh) throw Unsupported(str_cat(base.label, ": height ", why));
  const auto fw = support::nearest_replication_factor(is.w, os.w, op.attrs.align_corners,
                                                      op.attrs.half_pixel_centers, &why);
  if (!fw) throw Unsupported(str_cat(base.label, ": width ", why));
  if (*fh * *fw > support::kMaxResizeReplicas) {
    throw Unsupported(str_cat(base.label, ": ", *fh, "x", *fw, " replicas exceed ",
                              support::kMaxResizeReplicas));
  }
  // Replica (a, b) copies the whole input to the output pixels
  // (f_h*i + a, f_w*j + b): pixel pitch f_w*C, row pitch f_h*W_out*C.
  std::vector<LoweredOp> parts;
  for (int a = 0; a < *fh; ++a) {
    for (int b = 0; b < *fw; ++b) {
      LoweredOp l = copy_pass(base, *fh * *fw == 1 ? "" : str_cat("replica ", a, ",", b), is);
      l.out_pixel_pitch = *fw * os.c;
      l.out_row_pitch = int64_t(*fh) * os.w * os.c;
      l.out_byte_offset = (int64_t(a) * os.w + b) * os.c;
      l.lowering = "resize_copy";
      parts.push_back(std::move(l));
    }
  }
  return parts;
}

std::vector<LoweredOp> lower_resize_bilinear(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  check_arg(op.kind == OpKind::kResizeBilinear, base.label, ": not a RESIZE_BILINEAR");
  copy_io(graph, op, base);
  base.op_index = op_index;
  const Shape4 is = nhwc_of(graph.tensor(base.input).shape);
  const Shape4 os = nhwc_of(graph.tensor(base.output).shape);
  std::string why;
  const auto ah = support::bilinear_axis(is.h, os.h, op.attrs.align_corners,
                                         op.attrs.half_pixel_centers, &why);
  if (!ah) throw Unsupported(str_cat(base.label, ": height ", why));
  const auto aw = support::bilinear_axis(is.w, os.w, op.attrs.align_corners,
                                         op.attrs.half_pixel_centers, &why);
  if (!aw) throw Unsupported(str_cat(base.label, ": width ", why));
  if (auto e = support::bilinear_error(*ah, *aw)) throw Unsupported(str_cat(base.label, ": ", *e));
  // The raw sum of the weighted inputs (input and output offset 0, no bias),
  // divided by the two denominators' product as TFLite rounds (half away).
  const QuantizedMultiplier q =
      tflite_average_pool_division(int64_t(ah->denominator) * aw->denominator);
  std::vector<LoweredOp> parts;
  for (const support::BilinearRun& r : ah->runs) {
    for (const support::BilinearRun& c : aw->runs) {
      LoweredOp l = base;
      l.label = str_cat(base.label, " rows ", r.out_start, "+", ah->factor, "x", r.count, " cols ",
                        c.out_start, "+", aw->factor, "x", c.count);
      l.unit = Unit::kDepthwise;
      l.depth_multiplier = 1;
      l.kernel_h = r.taps;
      l.kernel_w = c.taps;
      l.stride_h = l.stride_w = 1;
      l.in_shape = Shape4{1, r.count + r.taps - 1, c.count + c.taps - 1, is.c};
      l.out_shape = Shape4{1, r.count, c.count, os.c};
      l.in_pixel_pitch = is.c;
      l.in_row_pitch = int64_t(is.w) * is.c;
      l.in_byte_offset = (int64_t(r.in_start) * is.w + c.in_start) * is.c;
      l.out_pixel_pitch = aw->factor * os.c;
      l.out_row_pitch = int64_t(ah->factor) * os.w * os.c;
      l.out_byte_offset = (int64_t(r.out_start) * os.w + c.out_start) * os.c;
      l.input_zero_point = 0;
      l.output_zero_point = 0;
      l.act_min = -128;
      l.act_max = 127;
      l.act_mode = ActMode::NONE;
      l.weights.assign(size_t(r.taps) * c.taps * is.c, 0);
      for (int ty = 0; ty < r.taps; ++ty) {
        for (int tx = 0; tx < c.taps; ++tx) {
          std::fill_n(l.weights.begin() + (size_t(ty) * c.taps + tx) * is.c, is.c,
                      int8_t(r.w[ty] * c.w[tx]));
        }
      }
      l.multiplier.assign(size_t(is.c), q.multiplier);
      l.shift.assign(size_t(is.c), q.shift);
      l.lowering = "bilinear_passes";
      parts.push_back(std::move(l));
    }
  }
  return parts;
}

namespace {

// A TRANSPOSE NCHW [1, C, H, W] -> NHWC (perm 0, 2, 3, 1) or back (perm 0, 3,
// 1, 2) of int8 with C > 1 and H*W > 1 (otherwise the bytes do not move) as
// the layout unit's passes (LoweredOp::LayoutConversion), or nothing when
// the unit cannot express it (the copy passes of transpose_copy then do it):
//  - P = H*W and Cp = C rounded up to 32: the channel rows are read or
//    written at pitch P, the pixels at pitch Cp (32-byte blocks, NACC_SPEC
//    §7); the NCHW tensor is its own rows area when C and H*W are multiples
//    of 32, the NHWC tensor its own pixel area when C is and P = H*W;
//    otherwise the staging tensor holds the area (NPU_OP_DMA_START copies
//    the rows in or out, one per channel when H*W is not a multiple of 32);
//  - C not a multiple of 32: the pixels of Cp bytes are gathered into (or
//    scattered from) the dense NHWC tensor by an identity 1x1 pool pass with
//    pixel pitch Cp, as other copies are (copy_pass).
// The destination stride of one iteration (32 pixels of Cp bytes) is Cp
// blocks, a 16-bit field: Cp <= 65535.
std::optional<std::vector<LoweredOp>> lower_layout_transpose(const ir::Graph& graph,
                                                             const ir::Op& op, LoweredOp base) {
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  const ir::Tensor& out = graph.tensor(op.outputs[0]);
  bool to_nhwc = true;
  if (in.is_constant() || !support::layout_transpose(in.shape, op.attrs.perm, &to_nhwc,
                                                     ir::dtype_size(in.dtype))) {
    return std::nullopt;
  }
  const ir::Tensor& planar = to_nhwc ? in : out;  // [1, C, H, W]
  const int64_t C = planar.shape[1], H = planar.shape[2], W = planar.shape[3];
  const int64_t HW = H * W;
  // C0: the elements of one 32-byte block (32 int8, b8; 16 int16, b16).
  const int64_t e = ir::dtype_size(in.dtype), c0 = limits::kUbBlockBytes / e;
  const int64_t Cp = (C + c0 - 1) / c0 * c0, P = (HW + c0 - 1) / c0 * c0;
  const bool rows_direct = C % c0 == 0 && HW % c0 == 0;
  const bool slab_direct = C % c0 == 0 && P == HW;
  LoweredOp l = base;
  l.unit = Unit::kLayout;
  l.lowering = "vnchwconv";
  l.in_shape = nhwc_of(in.shape);
  l.out_shape = nhwc_of(out.shape);
  l.layout.to_nhwc = to_nhwc;
  l.layout.c = int(C);
  l.layout.h = int(H);
  l.layout.w = int(W);
  l.layout.elem = int(e);
  int64_t staging = 0;  // bytes
  if (!slab_direct) {
    l.layout.slab_offset = 0;
    staging = P * Cp * e;  // a multiple of 512: the rows area after it stays aligned
  }
  if (!rows_direct) {
    l.layout.rows_offset = staging;
    staging += Cp * P * e;
  }
  if (staging > 0) {
    l.input2 = kStagingTensor;
    // int8 bytes of the staging tensor (add_staging_tensors).
    l.staging_shape = Shape4{1, 1, 1, int(staging)};
  }
  std::vector<LoweredOp> parts;
  if (C % c0 != 0) {
    // Pixels of Cp elements in the staging tensor <-> the dense NHWC tensor,
    // an 8-bit copy of the C * e bytes of each pixel.
    LoweredOp g =
        copy_pass(base, to_nhwc ? "gather" : "scatter", Shape4{1, int(H), int(W), int(C * e)});
    g.lowering = "vnchwconv";
    if (to_nhwc) {
      g.input = kStagingTensor;
      g.in_pixel_pitch = Cp * e;
      g.in_row_pitch = W * Cp * e;
      g.in_byte_offset = l.layout.slab_offset;
    } else {
      g.output = kStagingTensor;
      g.out_pixel_pitch = int(Cp * e);
      g.out_row_pitch = W * Cp * e;
      g.out_byte_offset = l.layout.slab_offset;
    }
    g.staging_shape = l.staging_shape;
    if (to_nhwc) {
      parts.push_back(std::move(l));
      parts.push_back(std::move(g));
    } else {
      parts.push_back(std::move(g));
      parts.push_back(std::move(l));
    }
  } else {
    parts.push_back(std::move(l));
  }
  return parts;
}

}  // namespace

std::vector<LoweredOp> lower_transpose(const ir::Graph& graph, int op_index, TransposeForm form) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  check_arg(op.kind == OpKind::kTranspose && op.inputs.size() == 1 && op.inputs[0] >= 0 &&
                op.outputs.size() == 1,
            base.label, ": not a TRANSPOSE with one input and one output");
  if (auto e = ir::op_shape_error(graph, op)) throw Unsupported(str_cat(base.label, ": ", *e));
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  const ir::Tensor& out = graph.tensor(op.outputs[0]);
  if (in.is_constant()) {
    throw Unsupported(str_cat(base.label, ": its input '", in.name, "' is a constant (fold it on the host)"));
  }
  // int16: an NCHW <-> NHWC one only (the layout unit's b16 form, or the
  // copy passes over the bytes of each element).
  const bool int16_layout = in.dtype == ir::DType::kInt16 && out.dtype == ir::DType::kInt16 &&
                            support::layout_transpose(in.shape, op.attrs.perm, nullptr, 2);
  if (!int16_layout && (in.dtype != ir::DType::kInt8 || out.dtype != ir::DType::kInt8)) {
    throw Unsupported(str_cat(base.label, ": ", ir::dtype_name(in.dtype), " -> ",
                              ir::dtype_name(out.dtype),
                              " (8-bit copies, or an int16 NCHW <-> NHWC conversion)"));
  }
  if (form == TransposeForm::kLayoutUnit) {
    LoweredOp b = base;
    b.op_index = op_index;
    b.input = op.inputs[0];
    b.output = op.outputs[0];
    if (auto layout = lower_layout_transpose(graph, op, b)) return *layout;
  }
  std::string why;
  // int16: the bytes, each element a run of 2 that stays innermost.
  std::vector<int64_t> byte_shape = in.shape;
  std::vector<int> byte_perm = op.attrs.perm;
  if (int16_layout) {
    byte_shape.push_back(2);
    byte_perm.push_back(int(byte_perm.size()));
  }
  bool to_nhwc = true;
  std::optional<support::TransposeCopy> t;
  if (form == TransposeForm::kChannelCopies) {
    // One pass per channel: its row of H*W elements <-> every C-th element
    // of the pixels (rows and pixels through the DMA pitches).
    if (!support::layout_transpose(in.shape, op.attrs.perm, &to_nhwc, ir::dtype_size(in.dtype))) {
      throw Unsupported(str_cat(base.label, ": not an NCHW <-> NHWC TRANSPOSE"));
    }
    const ir::Tensor& planar = to_nhwc ? in : out;
    const int64_t e = ir::dtype_size(in.dtype);
    const int64_t C = planar.shape[1], H = planar.shape[2], W = planar.shape[3];
    const support::CopyDim chan{C, H * W * e, e}, rows{H, W * e, W * C * e}, cols{W, e, C * e};
    const auto swap = [](support::CopyDim d) { return support::CopyDim{d.size, d.out_stride, d.in_stride}; };
    t.emplace();
    t->run = e;
    t->outer = {to_nhwc ? chan : swap(chan)};
    t->rows = to_nhwc ? rows : swap(rows);
    t->cols = to_nhwc ? cols : swap(cols);
  } else {
    t = support::transpose_copy(byte_shape, byte_perm, &why);
    if (!t) throw Unsupported(str_cat(base.label, ": ", why));
  }
  if (auto e = support::transpose_copy_error(*t)) throw Unsupported(str_cat(base.label, ": ", *e));
  base.op_index = op_index;
  base.input = op.inputs[0];
  base.output = op.outputs[0];
  std::vector<LoweredOp> parts;
  const int64_t passes = t->passes();
  for (int64_t p = 0; p < passes; ++p) {
    int64_t rest = p, in_off = 0, out_off = 0;
    for (size_t d = t->outer.size(); d-- > 0;) {
      const int64_t i = rest % t->outer[d].size;
      rest /= t->outer[d].size;
      in_off += i * t->outer[d].in_stride;
      out_off += i * t->outer[d].out_stride;
    }
    LoweredOp l = copy_pass(base, passes == 1 ? "" : str_cat("pass ", p),
                            Shape4{1, int(t->rows.size), int(t->cols.size), int(t->run)});
    l.in_pixel_pitch = t->cols.in_stride;
    l.in_row_pitch = t->rows.in_stride;
    l.out_pixel_pitch = int(t->cols.out_stride);
    l.out_row_pitch = t->rows.out_stride;
    l.in_byte_offset = in_off;
    l.out_byte_offset = out_off;
    l.lowering = "transpose_copy";
    parts.push_back(std::move(l));
  }
  return parts;
}

std::vector<LoweredOp> lower_space_depth(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  check_arg(op.kind == OpKind::kSpaceToDepth || op.kind == OpKind::kDepthToSpace, base.label,
            ": not a SPACE_TO_DEPTH or DEPTH_TO_SPACE");
  copy_io(graph, op, base);
  base.op_index = op_index;
  const int bs = op.attrs.block_size;
  const Shape4 is = nhwc_of(graph.tensor(base.input).shape);
  const Shape4 os = nhwc_of(graph.tensor(base.output).shape);
  std::vector<LoweredOp> parts;
  for (int r = 0; r < bs; ++r) {
    const std::string what = bs == 1 ? "" : str_cat("block row ", r);
    if (op.kind == OpKind::kSpaceToDepth) {
      // out[i, j, (r*b + u)*C + c] = in[b*i + r, b*j + u, c]: input rows r,
      // r + b, .. as pixels of b*C bytes, written at channel r*b*C.
      LoweredOp l = copy_pass(base, what, Shape4{1, os.h, os.w, bs * is.c});
      l.in_pixel_pitch = int64_t(bs) * is.c;
      l.in_row_pitch = int64_t(bs) * is.w * is.c;
      l.in_byte_offset = int64_t(r) * is.w * is.c;
      l.out_pixel_pitch = os.c;
      l.out_channel_offset = r * bs * is.c;
      l.lowering = "space_to_depth_copy";
      parts.push_back(std::move(l));
    } else {
      // out[b*i + r, b*j + u, c] = in[i, j, (r*b + u)*C + c]: input channels
      // from r*b*C (b*C of them), written as b*C-byte pixels of rows r, r + b, ..
      LoweredOp l = copy_pass(base, what, Shape4{1, is.h, is.w, bs * os.c});
      l.in_pixel_pitch = is.c;
      l.in_row_pitch = int64_t(is.w) * is.c;
      l.in_byte_offset = int64_t(r) * bs * os.c;
      l.out_pixel_pitch = bs * os.c;
      l.out_row_pitch = int64_t(bs) * os.w * os.c;
      l.out_byte_offset = int64_t(r) * os.w * os.c;
      l.lowering = "depth_to_space_copy";
      parts.push_back(std::move(l));
    }
  }
  return parts;
}

std::vector<LoweredOp> lower_average_pool_regions(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(op.kind == OpKind::kAveragePool2D && !op.inputs.empty() && op.inputs[0] >= 0 &&
                op.outputs.size() == 1,
            base.label, ": not an AVERAGE_POOL_2D with an input and one output");
  if (op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
    throw Unsupported(str_cat(base.label, ": ONNX Runtime's average pool runs on the pooling "
                                          "unit only (2x2, stride 2)"));
  }
  base.input = op.inputs[0];
  base.output = op.outputs[0];
  const ir::Tensor& in = graph.tensor(base.input);
  const ir::Tensor& out = graph.tensor(base.output);
  return declined_on_invalid(base.label, [&]() -> std::vector<LoweredOp> {
    std::vector<LoweredOp> parts;
    const Shape4 is = nhwc_of(in.shape), os = nhwc_of(out.shape);
    const Quant qi = per_tensor(in, base.label), qo = per_tensor(out, base.label);
    if (qi.scale != qo.scale || qi.zero_point != qo.zero_point) {
      throw Unsupported(str_cat(base.label, ": input and output quantization differ"));
    }
    check_arg(is.c == os.c && is.n == 1 && os.n == 1, base.label, ": input ", is.str(),
              " / output ", os.str(), " are not one image of the same channels");
    const auto& a = op.attrs;
    if (a.dilation_h != 1 || a.dilation_w != 1) {
      throw Unsupported(str_cat(base.label, ": dilation ", a.dilation_h, "x", a.dilation_w));
    }
    base.act_mode = act_mode_of(fused_activation_of(a.activation, base.label));
    // int16 (16x8): 16-bit depthwise passes with the 32-bit output stage
    // (QUANT_MUL32), whose division is exact for int16 sums of at most
    // kMaxAveragePoolCells16 cells (quant/tflite.h).
    base.int16_maps = int16_maps_of(in, out, base.label);
    base.mul32 = base.int16_maps;
    if (base.int16_maps) {
      fused_activation_range_int16(fused_activation_of(a.activation, base.label), qo.scale,
                                   qo.zero_point, &base.act_min, &base.act_max);
    } else {
      fused_activation_range_int8(fused_activation_of(a.activation, base.label), qo.scale,
                                  qo.zero_point, &base.act_min, &base.act_max);
    }
    using support::PoolBand;
    const std::vector<PoolBand> ys = support::average_pool_bands(os.h, is.h, a.kernel_h,
                                                                 a.stride_h, int(a.padding.top));
    const std::vector<PoolBand> xs = support::average_pool_bands(os.w, is.w, a.kernel_w,
                                                                 a.stride_w, int(a.padding.left));
    if (ys.empty() || xs.empty()) {
      throw Unsupported(str_cat(base.label, ": an output window holds no input cell"));
    }
    const bool window_fits = a.kernel_h <= limits::kMaxKernel && a.kernel_w <= limits::kMaxKernel;
    if (!window_fits && base.int16_maps) {
      throw Unsupported(str_cat(base.label, ": an int16 window ", a.kernel_h, "x", a.kernel_w,
                                " (the ones matrix product is 8-bit)"));
    }
    if (!window_fits) {
      // One window over every input cell: the sum on the matrix unit.
      if (os.h != 1 || os.w != 1 || ys[0].count != is.h || xs[0].count != is.w) {
        throw Unsupported(str_cat(base.label, ": window ", a.kernel_h, "x", a.kernel_w,
                                  " is neither at most ", limits::kMaxKernel,
                                  " nor one window over the whole input"));
      }
      LoweredOp l = base;
      lower_ones_matmul(in, 0, l);
      const QuantizedMultiplier q =
          tflite_average_pool_division(int64_t(is.h) * is.w);
      l.multiplier.assign(size_t(os.c), q.multiplier);
      l.shift.assign(size_t(os.c), q.shift);
      l.output_zero_point = 0;
      l.lowering = "ones_matmul";
      parts.push_back(std::move(l));
      return parts;
    }
    if (ys.size() * xs.size() > size_t(support::kMaxAveragePoolRegions)) {
      throw Unsupported(str_cat(base.label, ": ", ys.size() * xs.size(), " region passes exceed ",
                                support::kMaxAveragePoolRegions));
    }
    for (const PoolBand& y : ys) {
      for (const PoolBand& x : xs) {
        LoweredOp l = base;
        l.label = ys.size() * xs.size() == 1
                      ? base.label
                      : str_cat(base.label, " region rows ", y.out_start, "+", y.out_size,
                                " cols ", x.out_start, "+", x.out_size);
        l.unit = Unit::kDepthwise;
        l.in_shape = Shape4{1, y.in_size, x.in_size, is.c};
        l.out_shape = Shape4{1, y.out_size, x.out_size, os.c};
        l.in_y0 = y.in_start;
        l.in_x0 = x.in_start;
        l.in_tensor_w = is.w;
        l.out_y0 = y.out_start;
        l.out_x0 = x.out_start;
        l.out_tensor_w = os.w;
        ir::Op window = op;
        window.attrs.padding = {y.pad_before, 0, x.pad_before, 0};
        window.attrs.stride_h = y.stride;
        window.attrs.stride_w = x.stride;
        set_window(l, window, y.kernel, x.kernel);
        // Sum of the raw values: input offset 0 (padding then adds 0 too),
        // output offset 0, the division by this region's count.
        l.input_zero_point = 0;
        l.output_zero_point = 0;
        l.weights.assign(size_t(y.kernel) * x.kernel * is.c, 1);
        const int64_t n = int64_t(y.count) * x.count;
        const QuantizedMultiplier q = base.int16_maps ? tflite_average_pool_division16(n)
                                                      : tflite_average_pool_division(n);
        l.multiplier.assign(size_t(is.c), q.multiplier);
        l.shift.assign(size_t(is.c), q.shift);
        l.lowering = "avg_regions";
        parts.push_back(std::move(l));
      }
    }
    return parts;
  });
}

// LEAKY_RELU on int16 (16x8): TFLite 2.21's reference_ops::QuantizeLeakyRelu,
//   out = clamp(MBQM(x, m_id, s_id)) for x >= 0, clamp(MBQM(x, m_a, s_a)) otherwise,
// (m_id, s_id) = QuantizeMultiplier(float(s_in / s_out)), (m_a, s_a) =
// QuantizeMultiplier(float(s_in * alpha / s_out)) (LeakyReluPrepare's float32
// expressions). With multipliers >= 0, MBQM keeps the sign of x (and maps 0
// to 0), so for alpha >= 0
//   out = clamp(MBQM(x, id), 0, 32767) + clamp(MBQM(x, alpha), -32768, 0)
// exactly: one term is 0 for every x (a negative alpha: the alpha term is
// clamp(MBQM(x, alpha), 0, 32767), see below). Three 16-bit parts: the identity term
// into the output, the alpha term into the op's staging tensor (both 1x1
// depthwise passes with the 32-bit stage, lower_requantize16), then ADD of
// the two with one scale (left shift 15, input multipliers 1/2, output
// multiplier 2^-14: every step exact, the sum within int16).
std::vector<LoweredOp> lower_leaky_relu16(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(op.inputs.size() == 1 && op.inputs[0] >= 0 && op.outputs.size() == 1, base.label,
            ": needs one input and one output");
  base.input = op.inputs[0];
  base.output = op.outputs[0];
  const ir::Tensor& in = graph.tensor(base.input);
  const ir::Tensor& out = graph.tensor(base.output);
  return declined_on_invalid(base.label, [&]() -> std::vector<LoweredOp> {
    base.in_shape = nhwc_of(in.shape);
    base.out_shape = nhwc_of(out.shape);
    check_arg(base.in_shape == base.out_shape, base.label, ": input ", base.in_shape.str(),
              " != output ", base.out_shape.str());
    base.int16_maps = int16_maps_of(in, out, base.label);
    const Quant qi = per_tensor(in, base.label), qo = per_tensor(out, base.label);
    const float identity_real = qi.scale / qo.scale;
    const float alpha_real = qi.scale * op.attrs.alpha / qo.scale;
    if (!std::isfinite(alpha_real)) {
      throw Unsupported(str_cat(base.label, ": int16 LEAKY_RELU with alpha ", op.attrs.alpha,
                                " (s_in * alpha / s_out is not finite)"));
    }
    std::vector<LoweredOp> parts(3, base);
    lower_requantize16(op, quantize_multiplier(static_cast<double>(identity_real)), 0, 32767,
                       parts[0]);
    parts[0].lowering = "leaky_relu_identity";
    if (alpha_real >= 0.0f) {
      lower_requantize16(op, quantize_multiplier(static_cast<double>(alpha_real)), -32768, 0,
                         parts[1]);
    } else {
      // A negative alpha: TFLite's negative multiplier m_a (QuantizeMultiplier
      // of the negative quotient) maps x < 0 to values >= 0 and x >= 0 to
      // values <= 0, so the term is clamp(MBQM(x, m_a, s_a), 0, 32767).
      // MBQM depends on x and m only through their product (and x * 2^s's
      // wrap, which is odd in x below a left shift of 16), so MBQM(x, m_a,
      // s_a) = MBQM(-x, -m_a, s_a): the pass with weight -1 (the accumulator
      // holds -x, even for x = -32768) and the positive multiplier -m_a.
      const QuantizedMultiplier qa = quantize_multiplier_signed(static_cast<double>(alpha_real));
      if (qa.multiplier == std::numeric_limits<int32_t>::min() || qa.shift > 15) {
        throw Unsupported(str_cat(base.label, ": int16 LEAKY_RELU with alpha ", op.attrs.alpha,
                                  " (its multiplier ", qa.multiplier, " shift ", qa.shift,
                                  " has no positive twin for -x)"));
      }
      lower_requantize16(op, QuantizedMultiplier{-qa.multiplier, qa.shift}, 0, 32767, parts[1]);
      parts[1].weights.assign(parts[1].weights.size(), -1);
    }
    parts[1].output = kStagingTensor;
    parts[1].label = str_cat(base.label, " alpha term");
    parts[1].lowering = "leaky_relu_alpha";
    LoweredOp& sum = parts[2];
    sum.label = str_cat(base.label, " sum");
    sum.unit = Unit::kElementwise;
    sum.input = base.output;
    sum.input2 = kStagingTensor;
    sum.eltwise = tflite_add_sub_params_16x8(ElementwiseMode::ADD, 1.0f, 1.0f, 1.0f,
                                             FusedActivation::kNone);
    sum.act_min = sum.eltwise.act_min;
    sum.act_max = sum.eltwise.act_max;
    sum.act_mode = ActMode::NONE;
    sum.multiplier = {sum.eltwise.output_multiplier};
    sum.shift = {sum.eltwise.output_shift};
    sum.lowering = "leaky_relu_sum";
    return parts;
  });
}

namespace {

// An int16 MEAN whose window does not fit one 16-bit depthwise window (a side
// above 15): lower_mean16_split.
bool is_int16_mean_split(const ir::Graph& graph, const ir::Op& op) {
  if (op.kind != OpKind::kMean || op.inputs.empty() || op.inputs[0] < 0) return false;
  const ir::Tensor& in = graph.tensor(op.inputs[0]);
  return in.dtype == ir::DType::kInt16 && in.rank() == 4 &&
         (in.shape[1] > limits::kMaxKernel || in.shape[2] > limits::kMaxKernel);
}

// MUL of two int16 operands with an int8 output: lower_mul16_to_8.
bool is_int16_to_int8_mul(const ir::Graph& graph, const ir::Op& op) {
  return op.kind == OpKind::kMul && op.inputs.size() == 2 && op.inputs[0] >= 0 &&
         op.inputs[1] >= 0 && op.outputs.size() == 1 &&
         graph.tensor(op.inputs[0]).dtype == ir::DType::kInt16 &&
         graph.tensor(op.inputs[1]).dtype == ir::DType::kInt16 &&
         graph.tensor(op.outputs[0]).dtype == ir::DType::kInt8;
}

// QUANTIZE with an int16 input and an int8 output: lower_quantize16_to_8.
bool is_int16_to_int8_quantize(const ir::Graph& graph, const ir::Op& op) {
  return op.kind == OpKind::kQuantize && op.inputs.size() == 1 && op.inputs[0] >= 0 &&
         op.outputs.size() == 1 && graph.tensor(op.inputs[0]).dtype == ir::DType::kInt16 &&
         graph.tensor(op.outputs[0]).dtype == ir::DType::kInt8;
}

// The split x = 2^k * hi + lo of lower_mean16_split, hi = MBQM(x, 2^30, 1 - k)
// (x / 2^k, rounded twice): the largest |hi| and |lo| over every int16 x.
struct SplitBounds {
  int32_t hi = 0, lo = 0;
};
SplitBounds int16_split_bounds() {
  static const SplitBounds bounds = [] {
    SplitBounds b;
    const int k = support::kInt16SumSplitShift;
    for (int32_t x = -32768; x <= 32767; ++x) {
      const int32_t hi = multiply_by_quantized_multiplier(x, int32_t(1) << 30, 1 - k);
      const int32_t lo = x - hi * (int32_t(1) << k);
      b.hi = std::max(b.hi, std::abs(hi));
      b.lo = std::max(b.lo, std::abs(lo));
    }
    return b;
  }();
  return bounds;
}

}  // namespace

// The second part of an int16 -> int8 op: the op's int16 staging tensor u
// (shape s, every value in [-128 - zo, 127 - zo]) read as bytes, the low byte
// of each element (pixel pitch 2 bytes, one channel; little-endian), u mod 2^8
// as int8, mapped by the activation unit's LUT to wrap8(b + zo) = u + zo into
// the op's int8 output. `l` starts as the op's base.
void low_bytes_part(const LoweredOp& base, const Shape4& s, int32_t zo, LoweredOp& l) {
  const int64_t pixels = int64_t(s.h) * s.w;
  if (pixels > limits::kMaxFeatureMapDim) {
    throw Unsupported(str_cat(base.label, ": ", pixels, " pixels exceed ",
                              limits::kMaxFeatureMapDim, " (the byte view's rows)"));
  }
  l.label = str_cat(base.label, " low bytes");
  l.unit = Unit::kActivation;
  l.input = kStagingTensor;
  l.input2 = -1;
  l.output = base.output;
  l.staging_shape = s;
  l.in_shape = l.out_shape = Shape4{1, int(pixels), s.c, 1};
  l.in_pixel_pitch = 2;
  l.in_row_pitch = int64_t(2) * s.c;
  for (int i = 0; i < limits::kLutEntries; ++i) {
    l.lut[size_t(i)] = static_cast<int8_t>(static_cast<uint8_t>(i + zo));
  }
  l.has_lut = true;
  l.act_mode = ActMode::LUT;
  l.input_zero_point = l.output_zero_point = 0;
  l.act_min = -128;
  l.act_max = 127;
  l.lowering = "int16_low_bytes_lut";
}

// See lower.h.
std::vector<LoweredOp> lower_mul16_to_8(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(is_int16_to_int8_mul(graph, op), base.label, ": not a MUL int16 x int16 -> int8");
  base.input = op.inputs[0];
  base.input2 = op.inputs[1];
  base.output = op.outputs[0];
  const ir::Tensor& a = graph.tensor(base.input);
  const ir::Tensor& b = graph.tensor(base.input2);
  const ir::Tensor& out = graph.tensor(base.output);
  return declined_on_invalid(base.label, [&]() -> std::vector<LoweredOp> {
    const Shape4 s = nhwc_of(out.shape);
    if (a.shape != out.shape || b.shape != out.shape) {
      throw Unsupported(str_cat(base.label, ": int16 x int16 -> int8 MUL of ",
                                ir::shape_str(a.shape), " and ", ir::shape_str(b.shape),
                                " (no broadcast)"));
    }
    if (a.is_constant() || b.is_constant()) {
      throw Unsupported(str_cat(base.label, ": a constant int16 operand (fold it on the host)"));
    }
    const Quant qa = per_tensor(a, base.label), qb = per_tensor(b, base.label);
    const Quant qo = per_tensor(out, base.label);
    if (qa.zero_point != 0 || qb.zero_point != 0) {
      throw Unsupported(str_cat(base.label, ": int16 zero points must be 0"));
    }
    const FusedActivation act = fused_activation_of(op.attrs.activation, base.label);
    int32_t lo = -128, hi = 127;
    fused_activation_range_int8(act, qo.scale, qo.zero_point, &lo, &hi);
    // TFLite 2.21's int16 x int16 -> int8 MUL (the LSTM kernels' Q0.15 product,
    // scales unused): zo + RoundingDivideByPOT(SaturatingRoundingDoublingHighMul
    // (a, b), 8) clamped to the fused range, = MBQM(a * b, 2^16, -8) + zo
    // (docs/compiler.md), which is the element-wise unit's MUL_S16_S8 with
    // input offsets 0, QUANT_MUL 2^16, QUANT_SHIFT -8, OUT_FM_OFFSET zo and
    // [lo, hi] as the clamp: one command.
    LoweredOp l = base;
    l.unit = Unit::kElementwise;
    l.int16_maps = true;  // DATA_FORM = INT16: 2-byte input elements
    l.in_shape = l.out_shape = s;
    l.eltwise = ElementwiseParams{};
    l.eltwise.mode = ElementwiseMode::MUL_S16_S8;
    l.eltwise.input1_offset = l.eltwise.input2_offset = 0;
    l.eltwise.left_shift = 0;
    l.eltwise.output_multiplier = int32_t(1) << 16;
    l.eltwise.output_shift = -8;
    l.eltwise.output_zero_point = qo.zero_point;
    l.eltwise.act_min = l.act_min = lo;
    l.eltwise.act_max = l.act_max = hi;
    validate_mul_s16_s8_params(l.eltwise);
    l.input_zero_point = 0;
    l.output_zero_point = qo.zero_point;
    l.act_mode = ActMode::NONE;
    l.multiplier = {l.eltwise.output_multiplier};
    l.shift = {l.eltwise.output_shift};
    l.lowering = "int16_mul_s16_s8";
    return {l};
  });
}

// See lower.h.
std::vector<LoweredOp> lower_quantize16_to_8(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(is_int16_to_int8_quantize(graph, op), base.label, ": not a QUANTIZE int16 -> int8");
  base.input = op.inputs[0];
  base.output = op.outputs[0];
  const ir::Tensor& in = graph.tensor(base.input);
  const ir::Tensor& out = graph.tensor(base.output);
  return declined_on_invalid(base.label, [&]() -> std::vector<LoweredOp> {
    const Shape4 s = nhwc_of(in.shape);
    check_arg(nhwc_of(out.shape) == s, base.label, ": input ", s.str(), " != output ",
              nhwc_of(out.shape).str());
    const Quant qi = per_tensor(in, base.label), qo = per_tensor(out, base.label);
    if (qi.zero_point != 0) {
      throw Unsupported(str_cat(base.label, ": int16 input zero point ", qi.zero_point, " != 0"));
    }
    std::vector<LoweredOp> parts(2, base);
    // MBQM(x, m, s) clamped to [-128 - zo, 127 - zo] into the int16 staging
    // tensor: clamp(v + zo, -128, 127) = clamp(v, -128 - zo, 127 - zo) + zo.
    LoweredOp& scaled = parts[0];
    scaled.in_shape = scaled.out_shape = s;
    scaled.int16_maps = true;
    scaled.staging_shape = s;
    lower_requantize16(
        op, quantize_multiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale)),
        -128 - qo.zero_point, 127 - qo.zero_point, scaled);
    scaled.output = kStagingTensor;
    scaled.lowering = "int16_to_int8_requantize";
    low_bytes_part(base, s, qo.zero_point, parts[1]);
    return parts;
  });
}

// See lower.h. T, the op's staging tensor (int16), holds three areas: A = hi
// and B = -lo ([1, H, W, C] each, A then B), then P = the 2G partial sums.
std::vector<LoweredOp> lower_mean16_split(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp base = lowering_base(graph, op_index);
  base.op_index = op_index;
  check_arg(op.inputs.size() >= 1 && op.inputs[0] >= 0 && op.outputs.size() == 1, base.label,
            ": needs an input and one output");
  base.input = op.inputs[0];
  base.output = op.outputs[0];
  const ir::Tensor& in = graph.tensor(base.input);
  const ir::Tensor& out = graph.tensor(base.output);
  return declined_on_invalid(base.label, [&]() -> std::vector<LoweredOp> {
    const Shape4 s = nhwc_of(in.shape);
    check_arg(in.rank() == 4 && out.elements() == s.c, base.label, ": input ",
              ir::shape_str(in.shape), " / output ", ir::shape_str(out.shape),
              " is not a reduction over height and width");
    base.int16_maps = int16_maps_of(in, out, base.label);
    if (!base.int16_maps || op.attrs.onnx_kernel != ir::Attributes::OnnxKernel::kNone) {
      throw Unsupported(str_cat(base.label, ": the split sum is TFLite's int16 MEAN only"));
    }
    const Quant qi = per_tensor(in, base.label), qo = per_tensor(out, base.label);
    const int64_t cells = int64_t(s.h) * s.w;
    const auto split = support::int16_sum_split(cells);
    if (!split) {
      throw Unsupported(str_cat(base.label, ": an int16 MEAN over ", s.h, "x", s.w, " = ", cells,
                                " cells (no group of at most ", limits::kMaxKernel,
                                " cells divides them into at most ", limits::kMaxKernel, "x",
                                limits::kMaxKernel, " partial sums of hi and lo)"));
    }
    // Exactness: every partial sum fits int16 (the identity stage does not
    // clamp it), and the total fits int32 (QUANT_MUL32's accumulator).
    const SplitBounds b = int16_split_bounds();
    check_arg(int64_t(split->group) * std::max(b.hi, b.lo) <= 32767 &&
                  cells * 32768 < (int64_t(1) << 31),
              base.label, ": the split sums leave int16 / int32");
    const int c = s.c, k = support::kInt16SumSplitShift;
    const int64_t area = cells * c * 2;  // bytes of A (and of B)
    const Shape4 staging{1, 1, int(2 * cells + 2 * split->groups), c};
    ir::Op window = op;
    window.attrs.padding = {};
    window.attrs.stride_h = window.attrs.stride_w = 1;
    window.attrs.dilation_h = window.attrs.dilation_w = 1;
    const QuantizedMultiplier identity{int32_t(1) << 30, 1};
    std::vector<LoweredOp> parts(4, base);
    for (LoweredOp& p : parts) {
      p.staging_shape = staging;
      p.in_shape = p.out_shape = s;
    }
    // hi = MBQM(x, 2^30, 1 - k) into A.
    LoweredOp& high = parts[0];
    lower_requantize16(op, QuantizedMultiplier{int32_t(1) << 30, 1 - k}, -32768, 32767, high);
    high.output = kStagingTensor;
    high.label = str_cat(base.label, " hi");
    high.lowering = "int16_mean_split";
    // -lo = 2^k hi - x into B: ADD/SUB's 16x8 arithmetic with left shift 15,
    // every step exact: hi 2^15 * 2^-1 = 2^14 hi, x 2^15 * 2^-1 * 2^-6 = 2^8 x,
    // their difference 2^8 (2^k hi - x) (|.| <= 2^8 * 33), times 2^-1 * 2^-7.
    LoweredOp& low = parts[1];
    low.label = str_cat(base.label, " lo");
    low.unit = Unit::kElementwise;
    low.input = kStagingTensor;  // A
    low.input2 = base.input;
    low.output = kStagingTensor;
    low.out_byte_offset = area;  // B
    low.eltwise.mode = ElementwiseMode::SUB;
    low.eltwise.left_shift = 15;
    low.eltwise.input1_multiplier = int32_t(1) << 30;
    low.eltwise.input1_shift = 0;
    low.eltwise.input2_multiplier = int32_t(1) << 30;
    low.eltwise.input2_shift = -k;
    low.eltwise.output_multiplier = int32_t(1) << 30;
    low.eltwise.output_shift = -(k + 1);
    low.eltwise.act_min = low.act_min = -32768;
    low.eltwise.act_max = low.act_max = 32767;
    low.act_mode = ActMode::NONE;
    low.multiplier = {low.eltwise.output_multiplier};
    low.shift = {low.eltwise.output_shift};
    low.lowering = "int16_mean_split_lo";
    // The partial sums: A and B read as 2G rows of `group` cells, one 1 x group
    // window per row, the identity stage, into P.
    LoweredOp& partial = parts[2];
    partial.label = str_cat(base.label, " partial sums");
    partial.unit = Unit::kDepthwise;
    partial.input = partial.output = kStagingTensor;
    partial.in_shape = Shape4{1, 2 * split->groups, split->group, c};
    partial.out_shape = Shape4{1, 2 * split->groups, 1, c};
    partial.out_byte_offset = 2 * area;  // P
    set_window(partial, window, 1, split->group);
    partial.weights.assign(size_t(split->group) * c, 1);
    partial.multiplier.assign(c, identity.multiplier);
    partial.shift.assign(c, identity.shift);
    partial.mul32 = true;
    partial.act_min = -32768;
    partial.act_max = 32767;
    partial.act_mode = ActMode::NONE;
    partial.lowering = "int16_mean_partial_sums";
    // The total: P as one rows x cols window, taps [0, G) (hi) weighing 2^k,
    // [G, 2G) (-lo) weighing -1, with TFLite's MEAN requantization.
    LoweredOp& total = parts[3];
    total.label = str_cat(base.label, " total");
    total.unit = Unit::kDepthwise;
    total.input = kStagingTensor;
    total.in_byte_offset = 2 * area;
    total.in_shape = Shape4{1, split->rows, split->cols, c};
    total.out_shape = Shape4{1, 1, 1, c};
    set_window(total, window, split->rows, split->cols);
    total.weights.resize(size_t(2 * split->groups) * c);
    for (int t = 0; t < 2 * split->groups; ++t) {
      std::fill_n(total.weights.begin() + int64_t(t) * c, c,
                  int8_t(t < split->groups ? (1 << k) : -1));
    }
    const QuantizedMultiplier r = tflite_mean_requantization(qi.scale, qo.scale, cells);
    total.multiplier.assign(c, r.multiplier);
    total.shift.assign(c, r.shift);
    total.mul32 = true;
    total.act_min = -32768;
    total.act_max = 32767;
    total.act_mode = ActMode::NONE;
    total.lowering = "int16_mean_total";
    return parts;
  });
}

std::vector<LoweredOp> lower_op_parts(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  if (op.kind == OpKind::kLeakyRelu && !op.inputs.empty() && op.inputs[0] >= 0 &&
      graph.tensor(op.inputs[0]).dtype == ir::DType::kInt16) {
    return lower_leaky_relu16(graph, op_index);
  }
  if (is_int16_mean_split(graph, op)) return lower_mean16_split(graph, op_index);
  if (is_int16_to_int8_quantize(graph, op)) return lower_quantize16_to_8(graph, op_index);
  if (is_int16_to_int8_mul(graph, op)) return lower_mul16_to_8(graph, op_index);
  if (op.kind == OpKind::kConcatenation) return lower_concatenation(graph, op_index);
  if (op.kind == OpKind::kSlice) return lower_slice(graph, op_index);
  if (op.kind == OpKind::kResizeNearest) return lower_resize_nearest(graph, op_index);
  if (op.kind == OpKind::kResizeBilinear) return lower_resize_bilinear(graph, op_index);
  if (op.kind == OpKind::kTranspose) return lower_transpose(graph, op_index);
  if (op.kind == OpKind::kSpaceToDepth || op.kind == OpKind::kDepthToSpace) {
    return lower_space_depth(graph, op_index);
  }
  if (support::is_region_average_pool(op)) return lower_average_pool_regions(graph, op_index);
  if (op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D) {
    return lower_conv_parts(graph, op_index);
  }
  if (op.kind == OpKind::kTransposeConv) return lower_transpose_conv(graph, op_index);
  return {lower_op(graph, op_index)};
}

namespace {

// The op as one LoweredOp (a grouped or dilated convolution: the whole op,
// which lower_conv_parts cuts into parts).
LoweredOp lower_whole(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  LoweredOp l;
  l.op_index = op_index;
  l.kind = op.kind;
  l.label = str_cat(op.display_type(), " ", graph.op_label(op_index));
  check_arg(!op.inputs.empty() && op.inputs[0] >= 0 && op.outputs.size() == 1, l.label,
            ": needs an input and one output");
  l.input = op.inputs[0];
  l.output = op.outputs[0];
  if (graph.tensor(l.input).is_constant() && op.kind != OpKind::kAdd && op.kind != OpKind::kMul &&
      op.kind != OpKind::kMaximum && op.kind != OpKind::kMinimum) {
    throw Unsupported(str_cat(l.label, ": its input '", graph.tensor(l.input).name,
                              "' is a constant (fold it on the host)"));
  }
  try {
    switch (op.kind) {
      case OpKind::kConv2D:
      case OpKind::kDepthwiseConv2D:
      case OpKind::kTransposeConv:
        lower_conv_like(graph, op, l);
        break;
      case OpKind::kFullyConnected:
        lower_fully_connected(graph, op, l);
        break;
      case OpKind::kBatchMatMul:
        lower_batch_matmul(graph, op, l);
        break;
      case OpKind::kAveragePool2D:
        if (support::is_region_average_pool(op)) return lower_average_pool_regions(graph, op_index).at(0);
        lower_pool(graph, op, l);
        break;
      case OpKind::kMaxPool2D:
        lower_pool(graph, op, l);
        break;
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
        lower_elementwise(graph, op, l);
        break;
      case OpKind::kRelu:
      case OpKind::kRelu6:
      case OpKind::kReluN1To1:
      case OpKind::kLogistic:
      case OpKind::kTanh:
      case OpKind::kHardSwish:
      case OpKind::kLeakyRelu:
      case OpKind::kQuantize:
        if (op.kind == OpKind::kLeakyRelu && graph.tensor(l.input).dtype == ir::DType::kInt16) {
          return lower_leaky_relu16(graph, op_index).at(0);
        }
        lower_activation(graph, op, l);
        break;
      case OpKind::kPad:
        lower_pad(graph, op, l);
        break;
      case OpKind::kMean:
        lower_mean(graph, op, l);
        break;
      case OpKind::kMaximum:
      case OpKind::kMinimum:
        lower_max_min(graph, op, l);
        break;
      case OpKind::kConcatenation:
        l = lower_concatenation(graph, op_index).at(0);
        break;
      case OpKind::kReshape:
        l.unit = Unit::kView;
        check_arg(graph.tensor(l.input).elements() == graph.tensor(l.output).elements(), l.label,
                  ": element counts differ");
        break;
      default:
        throw Unsupported(str_cat(l.label, ": ", op.display_type(),
                                  " is not lowered by this compiler version"));
    }
  } catch (const Unsupported&) {
    throw;
  } catch (const InvalidArgument& e) {
    // A parameter the unit cannot take (e.g. an output multiplier >= 1 for
    // ADD): decline the op rather than emit something wrong.
    const std::string what = e.what();
    throw Unsupported(what.rfind(l.label, 0) == 0 ? what : str_cat(l.label, ": ", what));
  }
  l.lowering = l.unit == Unit::kConv ? "direct" : l.ones_a ? "ones_matmul" : unit_name(l.unit);
  return l;
}

template <typename T>
std::vector<T> channel_slice(const std::vector<T>& v, int64_t first, int64_t n, int64_t per_channel = 1) {
  if (v.empty()) return v;
  return std::vector<T>(v.begin() + first * per_channel, v.begin() + (first + n) * per_channel);
}

}  // namespace

std::vector<LoweredOp> lower_space_to_depth(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  const LoweredOp whole = lower_whole(graph, op_index);
  check_arg(op.kind == OpKind::kConv2D && support::needs_space_to_depth(graph, op), whole.label,
            ": not a CONV_2D of a stride above ", limits::kMaxStride, " or a kernel above ",
            limits::kMaxKernel);
  if (auto e = support::space_to_depth_error(graph, op)) {
    throw Unsupported(str_cat(whole.label, ": ", *e));
  }
  const support::SpaceToDepth s = support::space_to_depth(graph, op);
  const Shape4 in = whole.in_shape;
  const int fh = s.rows.factor, fw = s.cols.factor, c = in.c;
  const Shape4 t{1, s.rows.cells, s.cols.cells, int(s.channels)};
  std::vector<LoweredOp> parts;
  // The gather: per row sub-position r, the whole cells' s_w*C bytes, then the
  // last column cell's fewer bytes (positions of T no pass writes are read
  // only by taps of weight 0: support::space_to_depth_error).
  for (int r = 0; r < fh; ++r) {
    const int rows = std::min(t.h, (in.h - r + fh - 1) / fh);  // cells with input row fh*i + r
    if (rows <= 0) continue;
    const int tail = in.w - fw * s.cols.whole_cells;           // positions of the partial cell
    for (const auto& [j0, cols, bytes] :
         {std::tuple{0, s.cols.whole_cells, fw * c},
          std::tuple{s.cols.whole_cells, t.w > s.cols.whole_cells ? 1 : 0, tail * c}}) {
      if (cols <= 0 || bytes <= 0) continue;
      LoweredOp l;
      l.op_index = op_index;
      l.kind = op.kind;
      l.label = str_cat(whole.label, " gather row ", r, j0 ? " last cell" : "");
      l.unit = Unit::kMaxPool;
      l.input = whole.input;
      l.output = kStagingTensor;
      l.in_shape = l.out_shape = Shape4{1, rows, cols, bytes};
      l.input_zero_point = l.output_zero_point = whole.input_zero_point;
      l.act_min = -128;
      l.act_max = 127;
      l.act_mode = ActMode::NONE;
      l.in_pixel_pitch = int64_t(fw) * c;
      l.in_row_pitch = int64_t(fh) * in.w * c;
      l.in_byte_offset = int64_t(r) * in.w * c + int64_t(j0) * fw * c;
      l.out_pixel_pitch = t.c;
      l.out_channel_offset = r * fw * c;
      l.out_row_pitch = int64_t(t.w) * t.c;
      l.out_byte_offset = int64_t(j0) * t.c;
      l.lowering = "space_to_depth";
      parts.push_back(std::move(l));
    }
  }
  // The convolution over T: the weights rearranged to [C_out, KH', KW', s_h*s_w*C].
  LoweredOp conv = whole;
  conv.input = kStagingTensor;
  conv.in_shape = t;
  conv.kernel_h = s.rows.kernel;
  conv.kernel_w = s.cols.kernel;
  conv.stride_h = s.rows.stride;
  conv.stride_w = s.cols.stride;
  conv.pad_top = s.rows.pad_before;
  conv.pad_bottom = s.rows.pad_after;
  conv.pad_left = s.cols.pad_before;
  conv.pad_right = s.cols.pad_after;
  const int c_out = whole.out_shape.c;
  const int kh = int(graph.tensor(op.inputs[1]).shape[1]);
  const int kw = int(graph.tensor(op.inputs[1]).shape[2]);
  conv.weights.assign(size_t(c_out) * conv.kernel_h * conv.kernel_w * t.c, 0);
  for (int o = 0; o < c_out; ++o) {
    for (int qy = 0; qy < conv.kernel_h; ++qy) {
      for (int qx = 0; qx < conv.kernel_w; ++qx) {
        for (int ry = 0; ry < fh; ++ry) {
          const int ty = support::space_to_depth_tap(s.rows, qy, ry);
          if (ty < 0) continue;
          for (int rx = 0; rx < fw; ++rx) {
            const int tx = support::space_to_depth_tap(s.cols, qx, rx);
            if (tx < 0) continue;
            const int8_t* src = &whole.weights[((size_t(o) * kh + ty) * kw + tx) * c];
            int8_t* dst = &conv.weights[((size_t(o) * conv.kernel_h + qy) * conv.kernel_w + qx) * t.c +
                                        size_t(ry * fw + rx) * c];
            std::memcpy(dst, src, size_t(c));
          }
        }
      }
    }
  }
  parts.push_back(std::move(conv));
  return parts;
}

std::vector<LoweredOp> lower_conv_parts(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  if (is_mac_fp32(op)) {
    // ONNX Runtime's float32 Conv sums each output over K in ONNX's order in
    // one command (MAC_FP32): the space-to-depth gather and the group and
    // dilation parts reorder or cut K, so only the direct window is offered.
    const std::string label = str_cat(op.display_type(), " ", graph.op_label(op_index));
    const char* why = nullptr;
    if (op.kind == OpKind::kConv2D && support::needs_space_to_depth(graph, op)) {
      why = "a stride above 3 or a kernel above 15 (the space-to-depth gather reorders K)";
    } else if (op.attrs.dilation_h > 1 || op.attrs.dilation_w > 1) {
      why = "dilation (its phases are separate convolutions)";
    } else if (op.kind == OpKind::kConv2D && support::conv_groups(graph, op) != 1) {
      why = "groups (one convolution per group)";
    }
    if (why) {
      throw Unsupported(str_cat(label, ": ONNX Runtime's float32 Conv (MAC_FP32) with ", why,
                                " is not lowered; the NPU sums K in one command, in ONNX's order"));
    }
  }
  if (op.kind == OpKind::kConv2D && support::needs_space_to_depth(graph, op)) {
    return lower_space_to_depth(graph, op_index);
  }
  LoweredOp whole = lower_whole(graph, op_index);
  const bool conv = op.kind == OpKind::kConv2D;
  const bool dilated = op.attrs.dilation_h > 1 || op.attrs.dilation_w > 1;
  if (!conv && op.kind != OpKind::kDepthwiseConv2D) return {whole};
  const int groups = conv ? support::conv_groups(graph, op) : 1;
  if (groups == 0) {
    throw Unsupported(str_cat(whole.label, ": the filter input channels do not divide the input ",
                              "and output channels into groups"));
  }
  if (groups == 1 && !dilated) return {whole};
  if (whole.int16_maps) {
    // The parts' pitches and offsets are in 1-byte elements.
    throw Unsupported(str_cat(whole.label, ": grouped or dilated convolution with 16-bit "
                                           "feature maps (the parts are 8-bit only)"));
  }

  const Shape4 in = whole.in_shape, out = whole.out_shape;
  std::vector<support::DilationPhase> rows, cols;
  if (dilated) {
    if (whole.stride_h != 1 || whole.stride_w != 1) {
      throw Unsupported(str_cat(whole.label, ": dilation ", op.attrs.dilation_h, "x",
                                op.attrs.dilation_w, " with stride ", whole.stride_h, "x",
                                whole.stride_w));
    }
    const support::ConvPhases p = support::conv_phases(graph, op);
    for (const auto& [axis, kernel] : {std::pair{&p.rows, whole.kernel_h}, std::pair{&p.cols, whole.kernel_w}}) {
      if (auto e = support::dilation_phase_error(*axis, kernel)) {
        throw Unsupported(str_cat(whole.label, ": dilation ", op.attrs.dilation_h, "x",
                                  op.attrs.dilation_w, ": ", *e));
      }
    }
    rows = p.rows;
    cols = p.cols;
  } else {  // one phase: the whole axis with the window as set_window made it
    rows = {support::DilationPhase{0, out.h, 0, in.h, whole.pad_top, whole.pad_bottom}};
    cols = {support::DilationPhase{0, out.w, 0, in.w, whole.pad_left, whole.pad_right}};
  }
  const int dh = std::max(1, op.attrs.dilation_h), dw = std::max(1, op.attrs.dilation_w);
  const int cin_g = in.c / groups, cout_g = out.c / groups;
  const int64_t out_pixel_pitch = int64_t(dw) * out.c;
  if (out_pixel_pitch > int64_t(field_max(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN))) {
    throw Unsupported(str_cat(whole.label, ": an output pixel pitch of ", out_pixel_pitch,
                              " bytes exceeds NACC_DMA_OUT_TRANS_LEN"));
  }
  const int64_t taps = int64_t(whole.kernel_h) * whole.kernel_w;
  std::vector<LoweredOp> parts;
  for (int g = 0; g < groups; ++g) {
    for (const support::DilationPhase& r : rows) {
      for (const support::DilationPhase& c : cols) {
        LoweredOp l = whole;
        l.in_shape = Shape4{1, r.in_size, c.in_size, cin_g};
        l.out_shape = Shape4{1, r.out_size, c.out_size, cout_g};
        l.pad_top = r.pad_before;
        l.pad_bottom = r.pad_after;
        l.pad_left = c.pad_before;
        l.pad_right = c.pad_after;
        l.in_pixel_pitch = int64_t(dw) * in.c;
        l.in_row_pitch = int64_t(dh) * in.w * in.c;
        l.in_byte_offset = (int64_t(r.in_start) * in.w + c.in_start) * in.c + int64_t(g) * cin_g;
        l.out_pixel_pitch = int(out_pixel_pitch);
        l.out_row_pitch = int64_t(dh) * out.w * out.c;
        l.out_byte_offset =
            (int64_t(r.out_start) * out.w + c.out_start) * out.c + int64_t(g) * cout_g;
        if (conv) {
          l.weights = channel_slice(whole.weights, int64_t(g) * cout_g, cout_g, taps * cin_g);
          l.bias = channel_slice(whole.bias, int64_t(g) * cout_g, cout_g);
          l.multiplier = channel_slice(whole.multiplier, int64_t(g) * cout_g, cout_g);
          l.shift = channel_slice(whole.shift, int64_t(g) * cout_g, cout_g);
          l.fp32_scale = channel_slice(whole.fp32_scale, int64_t(g) * cout_g, cout_g);
        }
        parts.push_back(std::move(l));
      }
    }
  }
  return parts;
}

std::vector<LoweredOp> lower_transpose_conv(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  const LoweredOp whole = lower_whole(graph, op_index);
  check_arg(op.kind == OpKind::kTransposeConv, whole.label, ": not a TRANSPOSE_CONV");
  if (whole.int16_maps || whole.int4_weights) {
    throw Unsupported(str_cat(whole.label, ": a TRANSPOSE_CONV with 16-bit maps or int4 weights "
                                           "(the phases are int8 convolutions)"));
  }
  if (auto e = support::transpose_conv_error(graph, op)) {
    throw Unsupported(str_cat(whole.label, ": ", *e));
  }
  const support::TransposeConvPhases p = support::transpose_conv_phases(graph, op);
  const Shape4 in = whole.in_shape, out = whole.out_shape;
  const int sh = op.attrs.stride_h, sw = op.attrs.stride_w;
  const int kh = int(graph.tensor(op.inputs[1]).shape[1]);
  const int kw = int(graph.tensor(op.inputs[1]).shape[2]);
  const int c_in = in.c, c_out = out.c;
  std::vector<LoweredOp> parts;
  for (const support::TransposePhase& r : p.rows) {
    for (const support::TransposePhase& c : p.cols) {
      LoweredOp l = whole;
      if (p.rows.size() * p.cols.size() > 1) {
        l.label = str_cat(whole.label, " phase ", r.residue, ",", c.residue);
      }
      l.kernel_h = r.kernel;
      l.kernel_w = c.kernel;
      l.stride_h = l.stride_w = 1;
      l.pad_top = r.pad_before;
      l.pad_bottom = r.pad_after;
      l.pad_left = c.pad_before;
      l.pad_right = c.pad_after;
      l.in_shape = Shape4{1, r.in_size, c.in_size, c_in};
      l.out_shape = Shape4{1, r.out_size, c.out_size, c_out};
      l.in_pixel_pitch = c_in;
      l.in_row_pitch = int64_t(in.w) * c_in;
      l.in_byte_offset = (int64_t(r.in_start) * in.w + c.in_start) * c_in;
      l.out_pixel_pitch = sw * c_out;
      l.out_row_pitch = int64_t(sh) * out.w * c_out;
      l.out_byte_offset = (int64_t(r.out_start) * out.w + c.out_start) * c_out;
      // The sub-kernel: new tap (ty, tx) holds original tap (a + s_h j,
      // b + s_w j') with j = top_j - ty, j' = top_j' - tx (the window flipped:
      // a later tap of the transposed window meets an earlier input), or 0
      // for the widening taps.
      l.weights.assign(size_t(c_out) * r.kernel * c.kernel * c_in, 0);
      for (int o = 0; o < c_out; ++o) {
        for (int ty = 0; ty < r.kernel; ++ty) {
          const int oy = support::transpose_phase_tap(r, sh, ty);
          if (oy < 0) continue;
          for (int tx = 0; tx < c.kernel; ++tx) {
            const int ox = support::transpose_phase_tap(c, sw, tx);
            if (ox < 0) continue;
            std::memcpy(&l.weights[((size_t(o) * r.kernel + ty) * c.kernel + tx) * c_in],
                        &whole.weights[((size_t(o) * kh + oy) * kw + ox) * c_in], size_t(c_in));
          }
        }
      }
      l.lowering = "transpose_phase";
      parts.push_back(std::move(l));
    }
  }
  return parts;
}

LoweredOp lower_op(const ir::Graph& graph, int op_index) {
  const ir::Op& op = graph.op(op_index);
  if (op.kind == OpKind::kConv2D || op.kind == OpKind::kDepthwiseConv2D) {
    return lower_conv_parts(graph, op_index).at(0);
  }
  if (op.kind == OpKind::kTransposeConv) return lower_transpose_conv(graph, op_index).at(0);
  if (is_int16_mean_split(graph, op)) return lower_mean16_split(graph, op_index).at(0);
  if (is_int16_to_int8_quantize(graph, op)) return lower_quantize16_to_8(graph, op_index).at(0);
  if (is_int16_to_int8_mul(graph, op)) return lower_mul16_to_8(graph, op_index).at(0);
  if (op.kind == OpKind::kSlice) return lower_slice(graph, op_index).at(0);
  if (op.kind == OpKind::kResizeNearest) return lower_resize_nearest(graph, op_index).at(0);
  if (op.kind == OpKind::kResizeBilinear) return lower_resize_bilinear(graph, op_index).at(0);
  if (op.kind == OpKind::kTranspose) return lower_transpose(graph, op_index).at(0);
  if (op.kind == OpKind::kSpaceToDepth || op.kind == OpKind::kDepthToSpace) {
    return lower_space_depth(graph, op_index).at(0);
  }
  return lower_whole(graph, op_index);
}

}  // namespace nacc::compiler
