// The core's graph IR: the small, runtime-neutral description of a model that
// the TFLite delegate and the ONNX Runtime EP build from their own graphs.
// Tensors carry shape, dtype, quantization and optional constant data; ops
// carry a kind and typed attributes. support/ decides per op whether the NPU
// can run it; compiler/ lowers the claimed ops.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nacc::ir {

// Element types. int8 (activations, weights), int4 (weights of CONV_2D and
// FULLY_CONNECTED, NACC_SPEC §9 DATA_FORM 10) and int32 (bias) run on the
// NPU; the others exist so a frontend can describe what the rules decline
// (and parameter tensors such as ONNX's int64 shapes). kInt4 data is held
// unpacked in the IR, one sign-extended element per byte with values in
// [-8, 7] (the frontend unpacks its packed storage; the compiler packs the
// weight blocks again). kInt4 is last so the other values keep their numbers
// (graph digests).
enum class DType { kInt8, kUInt8, kInt16, kInt32, kInt64, kFloat32, kOther, kInt4 };

const char* dtype_name(DType dtype);  // "int8", "uint8", ..., "other"
// Bytes per element; 0 for kOther (such a tensor cannot carry data).
int dtype_size(DType dtype);
// Inverse of dtype_name; throws InvalidArgument listing the known names.
DType parse_dtype(const std::string& name);

// Affine quantization real = scale * (q - zero_point).
// Empty vectors: not quantized (e.g. float32). One entry: per tensor.
// N > 1 entries: per channel along `axis`, N == shape[axis].
struct QuantParams {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  int axis = 0;  // channel axis; meaningful only when per_channel()

  bool empty() const { return scales.empty(); }
  bool per_channel() const { return scales.size() > 1; }
  bool operator==(const QuantParams& o) const;
};

struct Tensor {
  std::string name;
  // Dimensions; -1 or 0 marks a dynamic / unknown dimension.
  std::vector<int64_t> shape;
  DType dtype = DType::kInt8;
  QuantParams quant;
  // Constant contents (little-endian, row-major, elements() * dtype_size
  // bytes), or nullopt for a runtime tensor (activation or graph input).
  std::optional<std::vector<uint8_t>> data;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_static() const;  // every dimension > 0
  bool is_constant() const { return data.has_value(); }
  // Product of the dimensions; -1 when not static.
  int64_t elements() const;
  // Dimension i, counted from the end when negative (-1 = last).
  int64_t dim(int i) const;
};

// Op kinds the NPU runs or may run, plus kOther for every op the core does
// not implement (the frontend's op name is kept in Op::type_name).
enum class OpKind {
  kConv2D,
  kDepthwiseConv2D,
  kFullyConnected,
  kBatchMatMul,
  kMaxPool2D,
  kAveragePool2D,
  kAdd,
  kSub,
  kMul,
  kRelu,
  kRelu6,
  kReluN1To1,
  kLogistic,
  kTanh,
  kHardSwish,
  kLeakyRelu,
  kQuantize,       // int8 -> int8 requantize (float -> int8 is declined)
  kReshape,        // also SQUEEZE, EXPAND_DIMS: a view, no data moves
  kPad,
  kConcatenation,
  kMean,
  // SLICE, also STRIDED_SLICE, SPLIT, SPLIT_V: output k is the input read
  // from Attributes::slice_begin[k] with Attributes::slice_strides (a byte
  // copy; one or more outputs).
  kSlice,
  // Nearest-neighbour upsampling by integer factors (input [1, H, W, C] to
  // [1, f_h H, f_w W, C]) where the op's index mapping is that replication.
  kResizeNearest,
  kSpaceToDepth,   // [1, H, W, C] -> [1, H/b, W/b, b*b*C], Attributes::block_size
  kDepthToSpace,   // [1, H, W, b*b*C] -> [1, b*H, b*W, C]
  kMaximum,        // element-wise max / min of the raw int8 values (TFLite's kernels
  kMinimum,        // compare the stored values, whatever the quantization)
  // TFLite TRANSPOSE_CONV: inputs [input, weights [C_out, KH, KW, C_in], bias?]
  // (the frontend drops the output-shape operand: the output tensor's shape);
  // output (y, x) sums in(i, j) * w(y + pad_top - s_h*i, x + pad_left - s_w*j)
  // over the in-bounds taps. Attributes: stride, padding.top / left (as
  // TFLite's ComputePaddingHeightWidth computes them from the output size),
  // activation.
  kTransposeConv,
  // TFLite RESIZE_BILINEAR (int8): TFLite's integer interpolation (10-bit
  // fractions, round half away from zero) of the raw values; input [1, H, W,
  // C] to [1, H', W', C], Attributes::align_corners / half_pixel_centers.
  kResizeBilinear,
  // TFLite TRANSPOSE: output dimension k is input dimension perm[k]
  // (Attributes::perm; the frontend drops the perm operand). A byte copy.
  kTranspose,
  kOther,          // host-only: the frontend's op name in Op::type_name
};

// TFLite spelling: "CONV_2D", "DEPTHWISE_CONV_2D", ..., "OTHER".
const char* op_kind_name(OpKind kind);
// Inverse of op_kind_name; throws InvalidArgument listing the known names.
OpKind parse_op_kind(const std::string& name);
// Every kind but kOther, in enum order.
const std::vector<OpKind>& npu_op_kinds();
// One line on how the NPU runs the kind (for docs/supported_ops.md).
const char* op_kind_description(OpKind kind);

// TFLite ActivationFunctionType. Only the first four can be fused on the
// NPU (clamp in the output stage); the rules decline the others.
enum class Activation { kNone, kRelu, kReluN1To1, kRelu6, kTanh, kSignBit };
const char* activation_name(Activation act);  // "NONE", "RELU", ...
Activation parse_activation(const std::string& name);

// Whose requantization an op reproduces: the host runtime the frontend
// stands in for, so the core computes what that runtime computes.
enum class RequantMode : uint8_t {
  // TFLite's reference kernels: the 32-bit fixed-point multiplier
  // (QuantizeMultiplier), FULLY_CONNECTED's real scale, TFLite's MEAN.
  kTflite,
  // ONNX Runtime's CPU EP. CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and
  // BATCH_MATMUL: QLinearConv / QLinearMatMul / QGemm's float32 output stage
  // (scale float(s_x * s_w[c]) / s_y, float(acc + bias) * scale rounded half
  // to even). ADD / SUB / MUL, AVERAGE_POOL_2D, MEAN, CONCATENATION: the
  // kernel Attributes::onnx_kernel names (none selected: ONNX Runtime's
  // float arithmetic, which the rules decline where the NPU has no mode).
  kOnnxRuntime,
};
const char* requant_mode_name(RequantMode mode);  // "tflite", "onnxruntime"
// Inverse of requant_mode_name; throws InvalidArgument listing the names.
RequantMode parse_requant_mode(const std::string& name);

// Explicit padding of a 2-D window, elements per side, each >= 0.
struct Padding {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  bool operator==(const Padding& o) const {
    return top == o.top && bottom == o.bottom && left == o.left && right == o.right;
  }
};

// Typed op attributes. Each kind reads the fields it needs and ignores the
// rest. Parameters that TFLite passes as constant input tensors (MEAN axes,
// PAD paddings) are given here by the frontend, already read out.
struct Attributes {
  // Window ops (conv, depthwise, pools).
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;  // conv, depthwise
  Padding padding;                     // explicit, after SAME/VALID resolution
  int kernel_h = 0, kernel_w = 0;      // pools only (convs take it from the filter)
  int depth_multiplier = 1;            // depthwise: C_out = C_in * depth_multiplier
  // Fused activation of conv, depthwise, FC, pools, ADD/SUB/MUL, CONCATENATION.
  Activation activation = Activation::kNone;
  int axis = 0;                        // CONCATENATION axis (negative: from the end)
  std::vector<int> axes;               // MEAN reduction axes (negative: from the end)
  bool keep_dims = false;              // MEAN
  float alpha = 0.0f;                  // LEAKY_RELU slope
  // LUT ops (RELU*, LOGISTIC, TANH, LEAKY_RELU, HARD_SWISH): the frontend's
  // own table when its semantics are not TFLite's (ONNX: dequantize in
  // float32, apply the function, quantize with round-half-to-even), 256
  // entries, entry i = output for the int8 input (int8)i. Empty = TFLite's
  // table for the op's quantization.
  std::vector<int8_t> lut;
  // Whose requantization the op reproduces (RequantMode); the ONNX frontend
  // sets kOnnxRuntime on the ops whose arithmetic differs from TFLite's.
  RequantMode requant = RequantMode::kTflite;
  // ADD / SUB / MUL, AVERAGE_POOL_2D, MEAN (GlobalAveragePool), CONCATENATION
  // from ONNX: compute what ONNX Runtime's CPU EP computes for the node
  // (quant/onnxruntime.h), which depends on how that EP would run it; set by
  // the ONNX frontend. kNone: TFLite's arithmetic.
  enum class OnnxKernel : uint8_t { kNone, kFusedS8, kFusedU8, kUnfused };
  OnnxKernel onnx_kernel = OnnxKernel::kNone;
  // AVERAGE_POOL_2D with onnx_kernel kUnfused: ONNX Runtime's float
  // AveragePool runs MLAS's NCHW vector kernel, which sums each window column
  // first (false: its NCHWc kernel, row by row; the ONNX frontend decides).
  bool ort_pool_by_columns = false;
  // CONV_2D from ONNX with onnx_kernel kUnfused: ONNX Runtime runs
  // DequantizeLinear -> float32 Conv (MLAS: im2col, SGEMM) -> QuantizeLinear,
  // the NPU's MAC_FP32 mode (docs/device_model.md §4). For output pixel n
  // (row-major over the whole output, n = y * W + x) and channel c the sum
  // runs over K in ONNX's order (input channel, kernel row, kernel column),
  // in blocks of `ort_kblock` products, each a chain of fused multiply-adds
  // from 0.0f, the block sums added in order; pixels n >= ort_kblock_split
  // (MLAS's last thread segment; -1: none) use `ort_kblock_tail`. Then the
  // float32 bias (the int32 bias times its DequantizeLinear scale, which the
  // bias tensor's quant carries) is added and the sum quantized: round half
  // to even of sum / s_y, plus the zero point. 0: not set (the int32 path).
  int ort_kblock = 0;
  int64_t ort_kblock_split = -1;
  int ort_kblock_tail = 0;
  // DEPTHWISE_CONV_2D / FULLY_CONNECTED from ONNX with onnx_kernel kUnfused
  // whose float32 op ONNX Runtime runs on MLAS's one-row kernels (a depthwise
  // Conv with depth multiplier 1: one filter row per group; Gemm / MatMul
  // with one row of A): products x_f * w_f rounded to float32 and added, no
  // fused multiply-add, no K blocks (the NPU's MAC_FP32 mode with the sum
  // orders below, docs/device_model.md §4). x_f, w_f and the bias as for
  // ort_kblock; quantized the same way.
  //   kGroups4 (MlasSgemmKernelM1: depthwise, MatMul, Gemm transB = 0): K in
  //     order in groups of 4, g = ((p0 + p1) + p2) + p3, a remainder of 2 as
  //     p0 + p1, then 1 as p0; C = g + C group by group. FULLY_CONNECTED: C
  //     starts at the float32 bias (Gemm's beta = 1 C; 0.0f without one);
  //     DEPTHWISE_CONV_2D: C starts as the first group, the bias added last.
  //   kLanes8 (MlasSgemmKernelM1TransposeB: Gemm transB = 1), FULLY_CONNECTED
  //     only: lane j = k mod 8 sums its products in K order from 0.0f; the
  //     lanes reduce by the output's place among the N outputs: all but the
  //     last N mod 4 ((((l0+l1)+l2)+l3) + (((l4+l5)+l6)+l7)), then a pair
  //     ((l0+l2)+(l4+l6)) + ((l1+l3)+(l5+l7)) if N mod 4 >= 2, then a single
  //     output ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) if N is odd; then + the
  //     bias. (The kernel takes outputs by 4, 2, 1 within each MLAS thread
  //     segment, and every segment but the last is a multiple of 16 outputs:
  //     the order does not depend on the thread count.)
  // DEPTHWISE_CONV_2D with depth multiplier > 1 (several filter rows per
  // group: MLAS's SGEMM) carries ort_kblock instead. kNone: not set.
  enum class OrtSumOrder : uint8_t { kNone = 0, kGroups4 = 1, kLanes8 = 2 };
  OrtSumOrder ort_sum_order = OrtSumOrder::kNone;
  // PAD: (before, after) per input dimension.
  std::vector<std::array<int64_t, 2>> paddings;
  // SLICE (and STRIDED_SLICE, SPLIT, SPLIT_V, which the frontend reduces to
  // it): output k holds in[slice_begin[k][d] + slice_strides[d] * i_d] for
  // its index (i_d); one begin per output and input dimension, one stride
  // (>= 1) per input dimension. The output shapes give the extents.
  std::vector<std::vector<int64_t>> slice_begin;
  std::vector<int64_t> slice_strides;
  // TRANSPOSE: output dimension k is input dimension perm[k].
  std::vector<int> perm;
  // SPACE_TO_DEPTH / DEPTH_TO_SPACE block size (>= 1; 0: not set).
  int block_size = 0;
  // RESIZE_NEAREST_NEIGHBOR's index mapping (TFLite's options).
  bool align_corners = false, half_pixel_centers = false;
  // Options set on the frontend's node that the core does not implement
  // (e.g. "keep_num_dims", "adj_x", "asymmetric_quantize_inputs",
  // "non-constant paddings"); any entry declines the op.
  std::vector<std::string> unsupported_options;
};

struct Op {
  OpKind kind = OpKind::kOther;
  std::string name;       // node name for messages; empty -> "#<index>"
  // The frontend's op name: required for kOther ("SOFTMAX"), optional for
  // the others (e.g. "SQUEEZE" for a kReshape).
  std::string type_name;
  std::vector<int> inputs;   // tensor ids; -1 = an omitted optional input
  std::vector<int> outputs;  // tensor ids
  Attributes attrs;

  // type_name when set, otherwise op_kind_name(kind).
  std::string display_type() const;
};

// What an op input is for; decides which rules look at it.
enum class OperandRole {
  kActivation,  // a runtime int8 feature map / matrix
  kWeights,     // constant int8 filter or FC weights
  kBias,        // constant int32 bias (optional)
  kParameter,   // shape / axes / paddings tensors: read by the frontend into
                // Attributes, ignored by the rules
};

// Inputs an op kind takes: between min_inputs and max_inputs (-1: no upper
// bound) with roles[i] for input i (the last role repeats); one output.
struct OpSignature {
  int min_inputs = 0;
  int max_inputs = 0;
  std::vector<OperandRole> roles;
  // Role of input `index` (the last role for indices past the list).
  OperandRole role(size_t index) const;
};
const OpSignature& op_signature(OpKind kind);

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  std::vector<int> inputs;   // graph input tensor ids
  std::vector<int> outputs;  // graph output tensor ids

  // Appends a tensor after checking it (quantization vector sizes, axis in
  // range, per-channel count == shape[axis], data size); returns its id.
  // Throws InvalidArgument.
  int add_tensor(Tensor tensor);
  // Appends an op after checking its tensor ids and attribute signs; returns
  // its index. Throws InvalidArgument.
  int add_op(Op op);

  // Checked access; throws InvalidArgument for an id out of range.
  const Tensor& tensor(int id) const;
  const Op& op(int index) const;

  // Name of op `index` for messages: "'name'" or "#index".
  std::string op_label(int index) const;

  // Whole-graph check: ids in range, one producer per tensor, every tensor
  // valid, and for each op of an NPU kind its operand count and (where the
  // shapes are static and the ranks as expected) its shape consistency.
  // Throws InvalidArgument naming the op and what is wrong.
  void validate() const;
};

// Checks one tensor as add_tensor does; throws InvalidArgument.
void check_tensor(const Tensor& tensor);

// Operand count of `op` against op_signature(op.kind): a description of the
// mismatch, or nullopt. kOther is never wrong.
std::optional<std::string> op_arity_error(const Graph& graph, const Op& op);

// Output shape of `op` against what its inputs and attributes give (window
// output sizes, channel counts, bias length, broadcasting, reshape element
// count, ...): a description of the mismatch, or nullopt. Returns nullopt
// when it cannot tell: a dynamic shape, an unexpected rank, or options the
// core does not model (Attributes::unsupported_options).
std::optional<std::string> op_shape_error(const Graph& graph, const Op& op);

// ---- window helpers -------------------------------------------------------

enum class PaddingMode { kSame, kValid };
PaddingMode parse_padding_mode(const std::string& name);  // "SAME" / "VALID"

// Output extent of a window along one axis:
// (in + pad_before + pad_after - dilation * (kernel - 1) - 1) / stride + 1,
// or 0 when the padded input is smaller than the window. stride >= 1.
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                           int64_t pad_after, int64_t dilation = 1);

// TFLite's padding for SAME / VALID (tensorflow/lite/kernels/padding.h):
// SAME: out = ceil(in / stride), total = max((out - 1) * stride +
// effective_kernel - in, 0), before = total / 2, after = total - before
// (the extra element goes to the bottom / right). VALID: all zero.
// NumPy broadcast of two shapes (aligned at the last dimension); nullopt when
// incompatible.
std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b);

Padding tflite_padding(PaddingMode mode, int64_t in_h, int64_t in_w, int64_t kernel_h,
                       int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                       int64_t dilation_h = 1, int64_t dilation_w = 1);

// Kernel height and width of a window op: the filter's for CONV_2D
// ([O,KH,KW,I]) and DEPTHWISE_CONV_2D ([1,KH,KW,C]), the attributes' for
// pools. nullopt when not a window op or the filter shape is not 4-D.
std::optional<std::array<int64_t, 2>> window_kernel(const Graph& graph, const Op& op);

// Resolves SAME / VALID into op.attrs.padding from the input and kernel
// shapes (for frontends that carry TFLite's padding enum). The input and, for
// convolutions, the filter must already be in the graph with static H, W.
void resolve_tflite_padding(const Graph& graph, Op& op, PaddingMode mode);

// Shape as "[1,8,8,3]".
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace nacc::ir
