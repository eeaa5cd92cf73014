// Lowering of one IR op to the NACC unit that runs it: the op's geometry as
// the registers see it (NHWC feature maps, window, padding) and every unit
// parameter derived from the model's float scales exactly as TFLite derives
// them. This is the ONE place where op -> unit-parameter arithmetic lives;
// the frontends and the rest of the compiler never repeat it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/limits.h"
#include "arch/unit_checks.h"
#include "arch/unit_params.h"
#include "common/shape.h"
#include "ir/ir.h"
#include "quant/onnxruntime.h"
#include "quant/tflite.h"

namespace nacc::compiler {

// The unit (and NPU_OP_* opcode) an op runs on.
enum class Unit : uint8_t {
  kConv,            // NPU_OP_CONV, weights [C_out, KH, KW, C_in]
  kDepthwise,       // NPU_OP_DEPTHWISE, weights [KH, KW, C_in * M]
  kFullyConnected,  // NPU_OP_FULLY_CONNECTED, weights [N, K]; IFM is M rows of 1 pixel
  kMatmul,          // NPU_OP_MATMUL: A = IFM rows (or im2col rows), B [K, N] uncompressed
  kMaxPool,         // NPU_OP_POOL, POOL_MODE = MAX
  kAvgPool,         // NPU_OP_POOL, POOL_MODE = AVERAGE
  kElementwise,     // NPU_OP_ELEMENTWISE, second operand at IN_K_DMA_ADDR
  kActivation,      // NPU_OP_ACTIVATION, ACT_MODE = LUT
  kView,            // RESHAPE: no command, the output aliases the input's bytes
  kLayout,          // NPU_OP_VNCHWCONV (+ NPU_OP_DMA_START): NCHW <-> NHWC, see LayoutConversion
};

const char* unit_name(Unit unit);

// A lowered op. Feature maps are NHWC with N = 1 (NACC_SPEC §1); tensors of
// lower rank are read as [1, 1, .., C] (leading ones). FULLY_CONNECTED's
// [M, K] input is H = M rows of W = 1 pixel of C = K channels, its output
// H = M rows of 1 pixel of N channels (docs/device_model.md §4).
struct LoweredOp {
  int op_index = -1;
  std::string label;    // "CONV_2D 'name'" for messages
  ir::OpKind kind = ir::OpKind::kOther;
  Unit unit = Unit::kView;

  // Tensor ids: the IFM, the element-wise second operand (or -1), the OFM.
  int input = -1, input2 = -1, output = -1;
  Shape4 in_shape, out_shape;   // N = 1
  // Element-wise: the second operand is one pixel [1,1,1,C] re-read for every
  // output pixel (pixel pitch 0, NACC_DMA_PARAA.K_TRANS_OFFSET = 0).
  bool input2_broadcast = false;
  // A constant second operand (expanded to [C] when it was a scalar), stored
  // in the constant region.
  std::vector<int8_t> input2_constant;
  bool input2_is_constant = false;

  // Window (NACC_KERNEL, NACC_PADDING). Right/bottom padding is implied by the
  // sizes (docs/device_model.md §3); kept here for checks.
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int depth_multiplier = 1;  // depthwise: 1, 2, 4 or 8 (DW_CH_MULT = log2)

  // Output stage. input_zero_point / output_zero_point are the tensors' zero
  // points (IN_FM_OFFSET = -input_zero_point, OUT_FM_OFFSET = output_zero_point).
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t act_min = -128, act_max = 127;  // NACC_ACT_MIN / NACC_ACT_MAX
  ActMode act_mode = ActMode::NONE;       // NACC_CTRL.ACT_MODE

  // Constants, in the unit's layout.
  std::vector<int8_t> weights;      // conv OHWI, depthwise [KH, KW, C*M], FC [N, K]
  std::vector<int32_t> bias;        // [C_out] or empty (BIAS_EN = 0)
  std::vector<int32_t> multiplier;  // [C_out] (conv, depthwise); [1] element-wise
  std::vector<int32_t> shift;       // same length as multiplier
  // FULLY_CONNECTED: TFLite's reference kernel requantizes in double with
  // effective_scale[n] = double(input_scale) * double(filter_scale[n]) /
  // double(output_scale) (docs/device_model.md §4: the QUANT_MUL array holds
  // these binary64 values in this mode; QUANT_SHIFT is not read).
  std::vector<double> real_scale;   // [N]
  // BATCH_MATMUL from ONNX (ir::RequantMode::kOnnxRuntime): ONNX Runtime's
  // float32 output stage, scale = float(s_a * s_b) / s_y (NACC_ACT_PARA.QUANT_FP32_SCALE).
  std::vector<float> fp32_scale;    // [N] or empty
  // ONNX Runtime's float32 element-wise / average pool (NACC_ACT_PARA.ELEMENT_FP32
  // via eltwise.float_mode, POOL_FP32, U8_DOMAIN; quant/onnxruntime.h):
  // fp32_scale then holds the element-wise mode's 3 float32 or the pool's
  // (input scale, output scale); the zero points are in the U8 or S8 domain.
  // CONV_2D as ONNX Runtime's unfused float32 Conv (ir::Attributes::ort_kblock;
  // NACC_ACT_PARA.MAC_FP32, docs/compiler.md "The float32 convolution"):
  // fp32_scale holds 4 float32 per output channel {s_x, s_w[c], b_f[c], s_y}
  // (b_f = float(int32 bias) * the bias's own scale; `bias` stays empty, so
  // BIAS_EN = 0), and the K blocks as NACC_FP32_KBLOCK's fields: 2^kblock_log2
  // products for the output pixels n < kblock_split (row-major over the whole
  // output), 2^kblock_tail_log2 from there. Direct convolution only (and the
  // subsampled 1x1, whose output is the same): the matrix and im2col modes
  // are not offered.
  bool mac_fp32 = false;
  // NACC_ACT_PARA.MAC_FP32_ORDER: kFmaBlocks (CONV_2D; DEPTHWISE_CONV_2D with
  // depth multiplier > 1), kGroups4 (DEPTHWISE_CONV_2D, FULLY_CONNECTED: MLAS's
  // one-row kernel) or kLanes8 (FULLY_CONNECTED from Gemm transB = 1; then
  // kblock_split is the first output channel of the last N mod 4 and
  // kblock_tail_log2 that count; docs/compiler.md §2.3).
  Fp32SumOrder mac_fp32_order = Fp32SumOrder::kFmaBlocks;
  int kblock_log2 = 0, kblock_tail_log2 = 0;
  int64_t kblock_split = 0;
  // Float32 values per channel in fp32_scale: 4 with mac_fp32, else 1.
  int fp32_entry_floats() const { return mac_fp32 ? limits::kMacFp32EntryFloats : 1; }
  bool pool_fp32 = false;
  PoolFloat pool_fp32_mode = PoolFloat::kQLinear;  // POOL_FP32_MODE
  bool u8_domain = false;
  // Conv, depthwise, fully connected, matmul (the QUANT_FP32_SCALE units).
  bool is_mac_unit() const {
    return unit == Unit::kConv || unit == Unit::kDepthwise || unit == Unit::kFullyConnected ||
           unit == Unit::kMatmul;
  }

  // kMatmul: the B operand. BATCH_MATMUL: the runtime tensor `input2` [K, N]
  // with zero point b_zero_point. im2col convolution (im2col = true): the
  // conv weights transposed to [K, N], K = KH * KW * C_in, stored in the
  // constant region, zero point 0. The command's A rows: BATCH_MATMUL the IFM
  // rows (in_shape [1, M, 1, K]); im2col one row per output pixel, gathered
  // from the NHWC input by the DMA (NACC_CTRL.IM2COL_EN, docs/device_model.md §4).
  bool im2col = false;
  int32_t b_zero_point = 0;
  // kMatmul with A = one row of K ones stored in the constant region (the
  // "ones operand": MEAN and global AVERAGE_POOL_2D over more cells than a
  // window holds, docs/compiler.md "MEAN"). B is the op's input viewed as
  // [K = H*W, N = C] (input2 == input), so acc[c] = sum over the cells of
  // (x - b_zero_point); IN_FM_DMA_ADDR points at the ones.
  bool ones_a = false;
  int matmul_k() const;  // K: in_shape.c, or KH * KW * in_shape.c with im2col

  // How a CONV_2D was lowered (docs/compiler.md §2): "direct" (NPU_OP_CONV),
  // "matrix" (a 1x1 stride-1 conv as NPU_OP_FULLY_CONNECTED over H*W rows),
  // "im2col" (NPU_OP_MATMUL fed by im2col); other ops: their unit's name.
  std::string lowering;
  ElementwiseParams eltwise;        // element-wise registers
  std::array<int8_t, 256> lut{};    // activation LUT (entry i = f((int8)i))
  bool has_lut = false;

  // Where the output goes in its tensor: from channel `out_channel_offset` of
  // each pixel, pixels `out_pixel_pitch` bytes apart (0: out_shape.c, dense).
  // CONCATENATION's parts write their slice of the output this way
  // (NACC_DMA_OUT_TRANS_LEN / NACC_DMA_OFFSET2, docs/device_model.md §2).
  int out_channel_offset = 0;
  int out_pixel_pitch = 0;
  int out_pitch() const { return out_pixel_pitch ? out_pixel_pitch : out_shape.c; }
  // Where the input comes from: pixels `in_pixel_pitch` bytes apart, rows
  // `in_row_pitch` apart (0: dense, in_shape.c and in_shape.w * in_shape.c).
  // A subsampled 1x1 convolution (conv_modes.h) reads every stride-th pixel so.
  int64_t in_pixel_pitch = 0, in_row_pitch = 0;

  // A part of an op that reads and writes a rectangle of its tensors (the
  // average pool's region passes, lower_average_pool_regions): in_shape /
  // out_shape are the rectangle's, (in_y0, in_x0) / (out_y0, out_x0) its first
  // pixel in the tensor and in_tensor_w / out_tensor_w the tensor's width in
  // pixels (0: the rectangle is the whole width, origin 0). The row pitches
  // become tensor width x pixel pitch (NACC_DMA_OFFSET1 / NACC_DMA_OFFSET2).
  int in_y0 = 0, in_x0 = 0, in_tensor_w = 0;
  int out_y0 = 0, out_x0 = 0, out_tensor_w = 0;
  // A part of a grouped or dilated convolution (lower_conv_parts): bytes added
  // to the input and output addresses (the group's first channel, the
  // phase's first pixel) and the output row pitch (0: out_row_pixels() x
  // out_pitch()); the pitches above step over the other groups' channels
  // and the other phases' pixels.
  int64_t in_byte_offset = 0, out_byte_offset = 0, out_row_pitch = 0;
  int in_row_pixels() const { return in_tensor_w ? in_tensor_w : in_shape.w; }
  int out_row_pixels() const { return out_tensor_w ? out_tensor_w : out_shape.w; }

  // Channels of one output pixel and of one input pixel of a command that
  // computes `group` channels of the op's channel-split basis: conv / FC split
  // output channels and read all input channels; the others split channels
  // with the input (depthwise: `group` input channels -> group * M outputs).
  int split_channels() const;               // the basis: C_out or C_in
  int in_channels(int group) const;         // IN_FM_CH of the command
  int out_channels(int group) const;        // OUT_FM_CH of the command
  // Weight elements (kMatmul: B elements) of `group` basis channels.
  int64_t weight_elements(int group) const;
  // Decompressed weight bytes in the K area (kMatmul: B bytes) of `group`
  // basis channels: the elements, or half of them rounded up with int4 weights.
  int64_t weight_bytes(int group) const;
  // int4 weights (NACC_CTRL.DATA_FORM 10, NACC_SPEC §9): `weights` holds the
  // values unpacked (one per byte, in [-8, 7]); each core's weight block is
  // packed two per byte (element 2i in the low nibble) before compression.
  // Conv (direct or matrix mode) and fully connected only.
  bool int4_weights = false;
  // 16-bit feature maps (NACC_CTRL.DATA_FORM 01, NACC_SPEC §9, TFLite's 16x8
  // quantization): int16 elements of 2 bytes in SRAM and on the bus (every
  // pitch and offset of this struct that is "bytes" stays bytes), zero points
  // 0, int8 weights, the bias in `bias64` (8-byte entries within 40 bits), the
  // 16x8 output stage from `multiplier` / `shift`, act_min / act_max in the
  // int16 range. Direct convolution and depthwise only.
  bool int16_maps = false;
  // With int16_maps on the depthwise unit: the 32-bit fixed-point stage
  // (NACC_ACT_PARA.QUANT_MUL32) instead of the 16x8 one — TFLite's int16 MEAN,
  // AVERAGE_POOL_2D and requantizations, whose accumulators fit int32.
  bool mul32 = false;
  std::vector<int64_t> bias64;  // [C_out] with int16_maps (bias stays empty)
  // The op's staging tensor (kStagingTensor), int16 of this shape, when it is
  // not the input shape of the part that first reads it (n = 0: that shape and
  // that part's element size); the int16 MEAN split keeps three areas in it,
  // addressed by the byte offsets above; QUANTIZE int16 -> int8 reads its low
  // bytes with an 8-bit part.
  Shape4 staging_shape{0, 0, 0, 0};
  int elem() const { return int16_maps ? 2 : 1; }  // feature-map bytes per element
  // Output bytes per element: 1 for the element-wise MUL_S16_S8 (int16 inputs,
  // an int8 output), else elem().
  int out_elem() const {
    return unit == Unit::kElementwise && eltwise.mode == ElementwiseMode::MUL_S16_S8 ? 1 : elem();
  }
  // Unit::kLayout: a TRANSPOSE between NCHW [1, C, H, W] and NHWC [1, H, W,
  // C] of int8 through the layout unit (lower_transpose, docs/compiler.md
  // "Layout conversion"). The NCHW side is seen as C channel rows of H*W
  // bytes, the NHWC side as H*W pixels of C bytes; the unit moves 32-byte
  // blocks, so the rows are taken at a pitch of P = H*W rounded up to 32 and
  // the pixels at a pitch of Cp = C rounded up to 32 (NC1HWC0 with C1 = 1 is
  // NHWC of Cp channels). Where a side's tensor has other pitches, that side
  // is a staging area in `input2` (the op's staging tensor) at rows_offset /
  // slab_offset (-1: the tensor itself). to_nhwc: NCHW input -> NHWC output.
  // elem: bytes per element, 1 (int8, the unit's b8 form, C0 = 32) or 2
  // (int16, b16, C0 = 16: rows and pixels padded to 16 elements); c, h, w
  // and the padded sizes count elements, the offsets bytes.
  struct LayoutConversion {
    bool to_nhwc = true;
    int c = 0, h = 0, w = 0, elem = 1;
    int64_t rows_offset = -1, slab_offset = -1;
  };
  LayoutConversion layout;
  bool has_bias() const { return !bias.empty() || !bias64.empty(); }
  int bias_entry_bytes() const { return int16_maps ? 8 : 4; }
};

// Lowers graph.ops[op_index]. Throws nacc::Unsupported naming the op when the
// compiler cannot lower it exactly (an op kind or configuration this version
// does not implement), InvalidArgument for a malformed op.
LoweredOp lower_op(const ir::Graph& graph, int op_index);

// CONCATENATION along the channels, columns or rows (of the NHWC view with
// leading ones): one part per input, each an identity 1x1 max-pool pass (a
// byte copy: TFLite's int8 CONCATENATION requires every input to share the
// output's scale and zero point and no fused activation) that writes the
// input's channels at their offset of the output pixels (pixel pitch C_out),
// or the input dense from its first column (OUT_DMA_ADDR + offset x C, row
// pitch W_out x C) or first row (OUT_DMA_ADDR + offset x W x C).
// lower_op returns the first part. Throws Unsupported as lower_op does.
std::vector<LoweredOp> lower_concatenation(const ir::Graph& graph, int op_index);

// SLICE (also STRIDED_SLICE, SPLIT, SPLIT_V: ir::Attributes::slice_begin):
// one part per output, each an identity 1x1 max-pool pass (input and output
// offset 0 and the full int8 clamp: a byte copy, which is what TFLite's
// reference kernels do for int8, whatever the quantization) whose input DMA
// starts at the output's origin in the input (NACC_IN_FM_DMA_ADDR + offset)
// and steps s_w x C bytes a pixel and s_h x W x C bytes a row
// (FM_TRANS_OFFSET, IN_DMA_ROW_OFFSET); the output is written dense. Tensors
// of rank below 4 are NHWC views with leading ones. Throws Unsupported for a
// channel stride above 1, an output of more than one image or a non-int8
// tensor. lower_op returns the first part.
std::vector<LoweredOp> lower_slice(const ir::Graph& graph, int op_index);

// RESIZE_NEAREST_NEIGHBOR by integer factors f_h x f_w where TFLite's index
// mapping is in = out / f on both axes (support/resize_nearest.h, checked
// index by index in TFLite's float32 arithmetic): one identity 1x1 pool pass
// per replica (a, b), reading the input dense and writing output pixels
// (f_h*i + a, f_w*j + b) through the output offset and pitches
// (OUT_DMA_ADDR + (a*W_out + b)*C, DMA_OUT_TRANS_LEN = f_w*C, OUT_DMA_OFFSET
// = f_h*W_out*C). A byte copy, as TFLite's kernel copies. lower_op returns
// the first part.
std::vector<LoweredOp> lower_resize_nearest(const ir::Graph& graph, int op_index);

// SPACE_TO_DEPTH / DEPTH_TO_SPACE by block b: one identity 1x1 pool pass per
// block row r. SPACE_TO_DEPTH reads input rows r, r + b, .. as pixels of b*C
// bytes (pixel pitch b*C, row pitch b*W*C) and writes them at channel r*b*C
// of the output pixels; DEPTH_TO_SPACE reads input channels [r*b*C,
// (r+1)*b*C) and writes them as b*C-byte runs of output rows r, r + b, ..
// Each output element is the one TFLite's kernel copies there. lower_op
// returns the first part.
std::vector<LoweredOp> lower_space_depth(const ir::Graph& graph, int op_index);

// TRANSPOSE (support/transpose_copy.h): one identity 1x1 pool pass per index
// of the output's outer loops, each copying rows x pixels x a run of
// contiguous bytes from the input through its pitches (FM_TRANS_OFFSET,
// IN_DMA_ROW_OFFSET) to the output through its pitches (DMA_OUT_TRANS_LEN,
// OUT_DMA_OFFSET): every output byte is the input byte the permutation puts
// there, as TFLite's kernel copies. An NCHW <-> NHWC TRANSPOSE
// (support::layout_transpose) has two more forms: kLayoutUnit, the layout
// unit's passes (LoweredOp::LayoutConversion; the copy passes where the unit
// cannot express it), and kChannelCopies, one copy pass per channel (C <=
// kMaxTransposePasses, else Unsupported); compile() lowers it every way and
// keeps the cheapest by its estimate (docs/compiler.md "Layout conversion").
// lower_op returns the first part of kLayoutUnit.
enum class TransposeForm { kLayoutUnit, kCopy, kChannelCopies };
std::vector<LoweredOp> lower_transpose(const ir::Graph& graph, int op_index,
                                       TransposeForm form = TransposeForm::kLayoutUnit);

// RESIZE_BILINEAR by whole factors (support/resize_nearest.h bilinear_axis):
// TFLite's int8 kernel sums the raw values of (at most) 2 x 2 inputs with
// 10-bit weight products and divides by 2^20 rounding half away from zero.
// Per axis the outputs fall into runs (one residue of the factor, the same
// weight pair, consecutive inputs); each run pair is one depthwise pass with
// the weights divided by their common divisor (int8), input and output
// offset 0, no bias, and the exact division by the two denominators'
// product (quant/tflite.h tflite_average_pool_division), written through the
// output offset and pitches f_w C, f_h W_out C. The sum is the reference's
// divided by the common divisors, so the rounded quotient is the same.
// lower_op returns the first part.
std::vector<LoweredOp> lower_resize_bilinear(const ir::Graph& graph, int op_index);

// The parts an op lowers to: CONCATENATION's (lower_concatenation), SLICE's
// (lower_slice), a TFLite
// AVERAGE_POOL_2D's region passes (lower_average_pool_regions), a grouped or
// dilated convolution's (lower_conv_parts), a space-to-depth convolution's
// (lower_space_to_depth), else the one
// LoweredOp of lower_op. Throws Unsupported as lower_op does.
std::vector<LoweredOp> lower_op_parts(const ir::Graph& graph, int op_index);

// LEAKY_RELU on int16 (16x8): the identity term (into the output) and the
// alpha term (into the op's staging tensor) as 16-bit 1x1 depthwise passes
// with the 32-bit output stage, then their exact int16 ADD (lower.cc).
// lower_op returns the first part.
std::vector<LoweredOp> lower_leaky_relu16(const ir::Graph& graph, int op_index);

// MEAN over height and width of int16 maps (16x8) with a side above 15 (no
// 16-bit depthwise window holds it; the ones matrix product is 8-bit), as
// four exact 16-bit parts through the op's staging tensor
// (support/pool_regions.h int16_sum_split, k = kInt16SumSplitShift):
//   hi = MBQM(x, 2^30, 1 - k), |hi| <= 512: a 1x1 depthwise pass (QUANT_MUL32);
//   -lo = 2^k hi - x, |lo| <= 33: an element-wise SUB whose 16x8 steps are exact;
//   the hi and -lo cells summed in 2G groups of `group` <= 15 consecutive cells
//     (1 x group windows, the identity stage: each sum fits int16);
//   the 2G partial sums as one rows x cols window with weights 2^k and -1: the
//     int32 sum of the x, requantized once with TFLite's MEAN (m', s').
// The sum is TFLite's QuantizedMeanOrSum sum exactly, so the output is
// (docs/compiler.md "MEAN"). lower_op returns the first part.
std::vector<LoweredOp> lower_mean16_split(const ir::Graph& graph, int op_index);

// QUANTIZE int16 -> int8 (TFLite 2.21 reference_ops::Requantize: clamp(MBQM(x,
// QuantizeMultiplier(double(s_in) / double(s_out))) + zo, -128, 127)) as two
// passes, each of one element size: the 16-bit identity depthwise pass with
// the 32-bit stage clamped to [-128 - zo, 127 - zo] into the op's int16
// staging tensor, then the activation unit's 8-bit LUT over the low byte of
// each element (pixel pitch 2 bytes), entry b = wrap8(b + zo): the low byte of
// u is u mod 256, so the entry is u + zo exactly. lower_op returns the first.
std::vector<LoweredOp> lower_quantize16_to_8(const ir::Graph& graph, int op_index);

// MUL of two int16 operands (zero point 0, same shape) with an int8 output.
// TFLite 2.21's reference kernel ignores the scales (the LSTM kernels' Q0.15
// product): zo + RoundingDivideByPOT(SaturatingRoundingDoublingHighMul16(a, b),
// 8), clamped to the fused activation's int8 range, which equals
// MBQM(a * b, 2^16, -8) + zo (docs/compiler.md; checked against BUILTIN_REF):
// one element-wise command in the NPU's MUL_S16_S8 mode (NACC_SPEC §9) with
// input offsets 0, QUANT_MUL entry 2^16 (the raw Q31 register value, i.e. the
// real multiplier 2^-15), QUANT_SHIFT -8, OUT_FM_OFFSET zo and the fused range
// as NACC_ACT_MIN / MAX. One part (a vector for lower_op_parts).
std::vector<LoweredOp> lower_mul16_to_8(const ir::Graph& graph, int op_index);

// TFLite AVERAGE_POOL_2D other than 2x2 stride 2 with a window of at most 15
// and a stride of at most 3 per axis: TFLite's reference kernel divides the
// sum of the in-bounds cells by their count (round half away from zero), and
// the count changes only at padded edges. The output is cut into rectangles
// of one count (runs of output rows with the same in-bounds row count x runs
// of columns likewise); each is a depthwise pass with weights 1, input offset
// 0, no bias and the exact division of quant/tflite.h
// tflite_average_pool_division, reading the input rectangle its windows
// cover with the padding those windows really have. A window over the whole
// input with a 1x1 output and more cells than a window holds is one matmul
// with a ones operand instead. lower_op returns the first part.
std::vector<LoweredOp> lower_average_pool_regions(const ir::Graph& graph, int op_index);

// A CONV_2D with groups (input channels = groups x filter input channels)
// and a CONV_2D or DEPTHWISE_CONV_2D with dilation d_h x d_w > 1 (stride 1):
// one ordinary convolution per group and phase. Group g reads its slice of
// input channels (pixel pitch C_in, address + g * C_in / groups) with its
// rows of the filter and writes its slice of output channels (pixel pitch
// C_out). Phase (a, b) of a dilation computes the output pixels (a + d_h*i,
// b + d_w*j), whose windows read only the input sub-grid congruent to
// (a - pad_top, b - pad_left) modulo (d_h, d_w): an undilated window over
// that sub-grid, read and written through pitches d times the dense ones
// (support/conv_parts.h dilation_phases). Every output is the same sum of
// the same products, so the parts are exact. Anything else: the one
// LoweredOp of lower_op. lower_op returns the first part.
std::vector<LoweredOp> lower_conv_parts(const ir::Graph& graph, int op_index);

// TRANSPOSE_CONV with stride s_h x s_w (support/conv_parts.h
// transpose_conv_phases): output (y, x) sums in(i, j) * w(y + pad_top - s_h i,
// x + pad_left - s_w j), so the outputs of one phase ((y + pad_top) mod s_h =
// a, (x + pad_left) mod s_w = b) receive only the taps a + s_h j, b + s_w j'
// and, along each axis, from consecutive inputs: a stride-1 convolution over
// the input with that sub-kernel (flipped, widened by taps of weight 0 where
// an output reads no input), read dense from the phase's first input pixel,
// written from the phase's first output pixel with pixel pitch s_w C_out and
// row pitch s_h W_out C_out, so the s_h s_w phases fill the output
// interleaved. Every output is the same int32 sum of the same products plus
// the bias, through the same per-channel output stage (TFLite's
// reference_integer_ops::TransposeConv), so the parts are exact. lower_op
// returns the first part.
std::vector<LoweredOp> lower_transpose_conv(const ir::Graph& graph, int op_index);

// A part's input or output that is its op's staging tensor: the
// space-to-depth gather of lower_space_to_depth, a [1, H', W', C'] tensor
// (the shape of the part that reads it) with the op input's quantization,
// which compile() adds to the graph as scratch live during the op.
inline constexpr int kStagingTensor = -2;

// A CONV_2D of a stride above 3 or a kernel above 15 (support/conv_parts.h
// space_to_depth): the input gathered into the staging tensor T with
// T[i, j, (r, u, c)] = in[s_h*i + r, s_w*j + u, c] by one copy pass per row
// sub-position r (a 1x1 max-pool identity reading rows r, r + s_h, .. and
// pixels of s_w*C bytes, writing channels from r*s_w*C of T's pixels; a
// second pass for a last column cell of fewer than s_w positions), then the
// convolution over T with stride 1 on the gathered axes, the new window's
// taps q holding the original weight of tap s*(q + first_tap) + r + pad, or
// 0 where that is outside the window. Every output is the sum of the same
// products plus products of weight 0, so the result is exact. lower_op
// returns the first part.
std::vector<LoweredOp> lower_space_to_depth(const ir::Graph& graph, int op_index);

// ---- the TFLite arithmetic, exposed for tests and frontends -------------------

// CONV_2D / DEPTHWISE_CONV_2D per-channel requantization (TFLite 2.21
// kernel_util.cc PopulateConvolutionQuantizationParams): effective[c] =
// double(input_scale) * double(filter_scale[c or 0]) / double(output_scale),
// then QuantizeMultiplier. `filter_scales` has 1 (per tensor) or `channels` entries.
void conv_requantization(float input_scale, const std::vector<float>& filter_scales,
                         float output_scale, int channels, std::vector<int32_t>* multiplier,
                         std::vector<int32_t>* shift);

// FULLY_CONNECTED's reference-kernel scales (see LoweredOp::real_scale).
std::vector<double> fully_connected_real_scales(float input_scale,
                                                const std::vector<float>& filter_scales,
                                                float output_scale, int channels);

// ir::Activation -> the clamp kind; Unsupported for TANH / SIGN_BIT.
FusedActivation fused_activation_of(ir::Activation act, const std::string& label);

// NHWC view of a tensor shape of rank <= 4 (leading ones added).
Shape4 nhwc_of(const std::vector<int64_t>& shape);

}  // namespace nacc::compiler
