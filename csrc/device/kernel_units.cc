// Kernel commands, step 3: the dispatch from a decoded command to its
// compute unit (device/units), on whatever buffers the caller provides
// (docs/device_model.md §4).
#include <vector>

#include "device/kernel.h"
#include "device/units/activation.h"
#include "device/units/conv.h"
#include "device/units/conv16.h"
#include "device/units/conv_fp32.h"
#include "device/units/elementwise.h"
#include "device/units/fm16.h"
#include "device/units/fully_connected.h"
#include "device/units/mac_fp32_m1.h"
#include "device/units/pool.h"
#include "device/units/q7.h"

namespace nacc::device_detail {

TileBuffers sram_buffers(const TileWork& c, uint8_t* sram) {
  auto i32 = [&](int64_t lo) {
    return lo >= 0 ? reinterpret_cast<const int32_t*>(sram + lo) : nullptr;
  };
  TileBuffers b;
  b.in = reinterpret_cast<const int8_t*>(sram + c.ifm.lo);
  b.out = reinterpret_cast<int8_t*>(sram + c.ofm.lo);
  b.weights = reinterpret_cast<const int8_t*>(sram + c.w_lo);
  b.bias = i32(c.bias_lo);
  b.mul = i32(c.mul_lo);
  b.shift = i32(c.shift_lo);
  b.scale = c.scale_lo >= 0 ? sram + c.scale_lo : nullptr;
  b.lut = c.lut_lo >= 0 ? reinterpret_cast<const int8_t*>(sram + c.lut_lo) : nullptr;
  b.temp = c.temp.empty() ? nullptr : reinterpret_cast<const int8_t*>(sram + c.temp.lo);
  return b;
}

// MAC_FP32 on NPU_OP_DW_CONV / NPU_OP_FULLY_CONNECTED: the one-row float32
// sums' parameters (arch/unit_params.h MacFp32M1Params).
static MacFp32M1Params mac_fp32_m1_params(const Setup& s, const TileWork& c, const TileBuffers& b) {
  MacFp32M1Params mp;
  mp.input_zero_point = s.in_zp;
  mp.output_zero_point = s.out_zp;
  mp.act_min = s.act_min;
  mp.act_max = s.act_max;
  mp.entries = static_cast<const float*>(b.scale);
  mp.order = s.mac_fp32_order;
  mp.kblock_log2 = s.kblock_log2;
  mp.n0 = c.oc0;  // the tile's first output channel in the command (LANES8's tail)
  mp.split = s.kblock_split;
  mp.tail = s.kblock_tail_log2;
  return mp;
}

void run_unit(const Setup& s, const TileWork& c, const TileBuffers& b) {
  const int8_t* in = b.in;
  int8_t* out = b.out;
  const int8_t* wts = b.weights;
  // DATA_FORM = INT4: the weight path unpacks the K area's nibbles (NACC_SPEC §9).
  std::vector<int8_t> unpacked;
  if (s.int4 && wts) {
    unpacked.resize(size_t(c.weight_count));
    unpack_int4(wts, c.weight_count, unpacked.data());
    wts = unpacked.data();
  }
  const int32_t* bias = b.bias;
  const int32_t* mul = b.mul;
  const int32_t* shift = b.shift;
  const int8_t* lut = b.lut;
  WindowParams win;
  win.stride_h = s.sy;
  win.stride_w = s.sx;
  win.pad_top = c.pad_t;
  win.pad_bottom = c.pad_b;
  win.pad_left = c.pad_l;
  win.pad_right = c.pad_r;
  // The MAC units' one output stage, in the mode NACC_ACT_PARA selects.
  OutputStage os;
  os.multiplier = mul;
  os.shift = shift;
  if (s.fp32_scale) {
    os.kind = OutputStageKind::kFloat32;
    os.float_scale = static_cast<const float*>(b.scale);
  } else if (s.real_scale) {
    os.kind = OutputStageKind::kRealScale;
    os.real_scale = static_cast<const double*>(b.scale);
  }
  os.output_zero_point = s.out_zp;
  os.act_min = s.act_min;
  os.act_max = s.act_max;
  // A depthwise core holds the input channels of its output channels (mode 1).
  const Shape4 in_shape{1, c.vh, c.vw, s.fam == Family::kDepthwise ? c.noc / s.depth_mult : s.in_c};
  const Shape4 out_shape{1, c.h, s.w, c.noc};
  switch (s.fam) {
    case Family::kConv:
      if (s.i16) {  // DATA_FORM = INT16: int16 maps, int64 bias, the 16x8 output stage
        OutputStage os16 = os;
        os16.kind = OutputStageKind::kFixedPoint16x8;
        conv2d_s16x8(win, os16, in_shape, reinterpret_cast<const int16_t*>(in),
                     Shape4{c.noc, s.ky, s.kx, s.in_c}, wts, reinterpret_cast<const int64_t*>(bias),
                     out_shape, reinterpret_cast<int16_t*>(out));
        break;
      }
      if (s.mac_fp32) {  // MAC_FP32: ONNX Runtime's float32 convolution
        MacFp32Params mp;
        mp.window = win;
        mp.input_zero_point = s.in_zp;
        mp.output_zero_point = s.out_zp;
        mp.act_min = s.act_min;
        mp.act_max = s.act_max;
        mp.entries = static_cast<const float*>(b.scale);
        // The tile's first output pixel in the whole output (NACC_FP32_KBLOCK's pixel index).
        mp.pixel_y0 = c.y0;
        mp.pixel_x0 = s.x0;
        mp.pixel_row = s.out_w;
        mp.split = s.kblock_split;
        mp.kblock_log2 = s.kblock_log2;
        mp.kblock_tail_log2 = s.kblock_tail_log2;
        conv2d_s8_mac_fp32(mp, in_shape, in, Shape4{c.noc, s.ky, s.kx, s.in_c}, wts, out_shape,
                           out, b.prepared);
        break;
      }
      if (s.rgb) {  // CONV_MODE = RGB_CONV: the q7 RGB convolution
        convolve_hwc_q7_rgb(win, s.bias_shift, s.out_shift, s.act_min, s.act_max, in_shape, in,
                            Shape4{c.noc, s.ky, s.kx, s.in_c}, wts, bias, out_shape, out);
        break;
      }
      conv2d_s8(win, s.in_zp, os, in_shape, in, Shape4{c.noc, s.ky, s.kx, s.in_c}, wts, bias,
                out_shape, out, b.prepared);
      break;
    case Family::kDepthwise:
      if (s.i16) {  // DATA_FORM = INT16: the 16x8 stage, or the 32-bit one (QUANT_MUL32)
        OutputStage os16 = os;
        os16.kind = s.mul32 ? OutputStageKind::kFixedPoint : OutputStageKind::kFixedPoint16x8;
        depthwise_conv2d_s16x8(win, s.depth_mult, os16, in_shape,
                               reinterpret_cast<const int16_t*>(in), Shape4{1, s.ky, s.kx, c.noc},
                               wts, reinterpret_cast<const int64_t*>(bias), out_shape,
                               reinterpret_cast<int16_t*>(out));
        break;
      }
      if (s.mac_fp32) {  // MAC_FP32: ONNX Runtime's float32 depthwise Conv
        depthwise_conv2d_s8_mac_fp32(win, s.depth_mult, mac_fp32_m1_params(s, c, b), in_shape, in,
                                     Shape4{1, s.ky, s.kx, c.noc}, wts, out_shape, out, b.prepared);
        break;
      }
      depthwise_conv2d_s8(win, s.depth_mult, s.in_zp, os, in_shape, in,
                          Shape4{1, s.ky, s.kx, c.noc}, wts, bias, out_shape, out, b.prepared);
      break;
    case Family::kFullyConnected:
      if (s.i16) {  // DATA_FORM = INT16: int16 rows, int64 bias, the real-scale stage
        fully_connected_s16x8(os, c.h, s.in_c, c.noc, reinterpret_cast<const int16_t*>(in), wts,
                              reinterpret_cast<const int64_t*>(bias), reinterpret_cast<int16_t*>(out));
        break;
      }
      if (s.mac_fp32) {  // MAC_FP32: ONNX Runtime's float32 Gemm / MatMul with one row
        fully_connected_s8_mac_fp32(mac_fp32_m1_params(s, c, b), c.h, s.in_c, c.noc, in, wts, out,
                                    b.prepared);
        break;
      }
      fully_connected_s8(s.in_zp, os, c.h, s.in_c, c.noc, in, wts, bias, out, b.prepared);
      break;
    case Family::kMatmul:
      if (s.im2col) {
        // [h*w, K] x [K, noc] with bias: the fully-connected arithmetic on B
        // transposed (weights [noc, K]).
        const int64_t k = s.mat_k;
        std::vector<int8_t> wt(size_t(k) * size_t(c.noc));
        for (int64_t i = 0; i < k; ++i) {
          for (int n = 0; n < c.noc; ++n) wt[size_t(n) * size_t(k) + size_t(i)] = wts[i * c.noc + n];
        }
        fully_connected_s8(s.in_zp, os, c.h * s.w, int(k), c.noc, in, wt.data(), bias, out);
      } else {
        matmul_s8(s.in_zp, s.b_zp, os, c.h, s.in_c, c.noc, in, wts, out);
      }
      break;
    case Family::kPool: {
      PoolParams pp;
      pp.window = win;
      pp.kernel_h = s.ky;
      pp.kernel_w = s.kx;
      pp.act_min = s.act_min;
      pp.act_max = s.act_max;
      if (s.pool_fp32) {  // POOL_FP32: the zero points of NACC_FM_OFFSET in the domain
        pp.float32 = true;
        pp.float_mode = s.pool_fp32_mode;
        pp.domain.u8 = s.u8_domain;
        pp.input_scale = os.float_scale[0];
        pp.output_scale = os.float_scale[1];
        pp.input_zero_point = s.in_zp;
        pp.output_zero_point = s.out_zp;
      }
      if (s.i16) {  // DATA_FORM = INT16
        const auto* in16 = reinterpret_cast<const int16_t*>(in);
        auto* out16 = reinterpret_cast<int16_t*>(out);
        if (s.pool_mode == value_of(PoolMode::AVERAGE)) {
          avg_pool_s16(pp, in_shape, in16, out_shape, out16);
        } else {
          max_pool_s16(pp, in_shape, in16, out_shape, out16);
        }
      } else if (s.pool_mode == value_of(PoolMode::AVERAGE)) {
        avg_pool_s8(pp, in_shape, in, out_shape, out);
      } else {
        max_pool_s8(pp, in_shape, in, out_shape, out);
      }
      break;
    }
    case Family::kElementwise: {
      ElementwiseParams ew = s.ew;
      if (s.ew_fp32 != ElementwiseFloat::kOff) {  // ELEMENT_FP32: 3 float32, no shifts
        ew.float_mode = s.ew_fp32;
        ew.domain.u8 = s.u8_domain;
        for (int i = 0; i < 3; ++i) ew.float_params[i] = os.float_scale[i];
      } else {
        ew.output_multiplier = mul[0];
        ew.output_shift = shift[0];
      }
      const int8_t* in2 = b.temp;
      const Shape4 in2_shape = s.k_pitch == 0 ? Shape4{1, 1, 1, s.in_c} : in_shape;
      if (s.mul_s16_s8) {  // DATA_FORM = INT16, MUL_S16_S8: int16 inputs, an int8 output
        elementwise_mul_s16_s8(ew, in_shape, reinterpret_cast<const int16_t*>(in), in2_shape,
                               reinterpret_cast<const int16_t*>(in2), out_shape, out);
        break;
      }
      if (s.i16) {  // DATA_FORM = INT16: ADD / SUB with LEFT_SHIFT (15 for TFLite)
        elementwise_s16(ew, in_shape, reinterpret_cast<const int16_t*>(in), in2_shape,
                        reinterpret_cast<const int16_t*>(in2), out_shape,
                        reinterpret_cast<int16_t*>(out));
        break;
      }
      validate_elementwise_params(ew);
      elementwise_s8(ew, in_shape, in, in2_shape, in2, out_shape, out);
      break;
    }
    case Family::kActivation: {
      if (s.table16) {  // DATA_FORM = INT16, ACT_MODE TANH / SIGMOID: the 16-bit table modes
        sigmoid_tanh_s16(s.act == ActMode::TANH, mul[0], shift[0], out_shape.elements(),
                         reinterpret_cast<const int16_t*>(in), reinterpret_cast<int16_t*>(out));
        return;
      }
      if (s.q7_act) {  // ACT_MODE TANH / SIGMOID: the q7 direct-table functions
        activations_direct_q7(s.act, s.act_int_w, out_shape.elements(), in, out);
        return;
      }
      ActivationParams ap;
      ap.mode = s.act;
      ap.input_zero_point = s.in_zp;
      ap.output_zero_point = s.out_zp;
      if (mul) {
        ap.multiplier = mul[0];
        ap.shift = shift[0];
      }
      ap.act_min = s.act_min;
      ap.act_max = s.act_max;
      ap.lut = lut;
      validate_activation_params(ap);
      activation_s8(ap, out_shape.elements(), in, out);
      return;
    }
  }
  if (lut) {
    // Output stage, then the 256-entry LUT (docs/device_model.md §4).
    const int64_t nbytes = int64_t(c.h) * s.w * c.noc;
    for (int64_t k = 0; k < nbytes; ++k) out[k] = lut[uint8_t(out[k])];
  }
}

}  // namespace nacc::device_detail
