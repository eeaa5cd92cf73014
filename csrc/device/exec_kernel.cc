// Kernel commands of the simulated NACC (docs/device_model.md §1-§6): reads
// the compute bank, validates the geometry, tiles, channels, SRAM areas and
// multi-core split, then per core DMAs the valid input tile and the kernel
// data into its SRAM, runs the unit from SRAM to SRAM and DMAs the output tile
// out; counts bytes and cycles and places the command on the timeline.
#include <algorithm>
#include <cstring>
#include <vector>
#include <exception>

#include "arch/cost_model.h"
#include "arch/fields.h"
#include "arch/sram.h"
#include "arch/weight_codec.h"
#include "device/device_internal.h"
#include "device/units/activation.h"
#include "device/units/conv.h"
#include "device/units/elementwise.h"
#include "device/units/fully_connected.h"
#include "device/units/pool.h"

namespace nacc::device_detail {
namespace {

enum class Family { kConv, kDepthwise, kFullyConnected, kMatmul, kPool, kElementwise, kActivation };

Family family_of(Opcode op) {
  switch (op) {
    case Opcode::NPU_OP_CONV: return Family::kConv;
    case Opcode::NPU_OP_DEPTHWISE: return Family::kDepthwise;
    case Opcode::NPU_OP_FULLY_CONNECTED: return Family::kFullyConnected;
    case Opcode::NPU_OP_MATMUL: return Family::kMatmul;
    case Opcode::NPU_OP_POOL: return Family::kPool;
    case Opcode::NPU_OP_ELEMENTWISE: return Family::kElementwise;
    case Opcode::NPU_OP_ACTIVATION: return Family::kActivation;
    default: break;
  }
  throw DeviceFault(str_cat(opcode_name(op), " is not a kernel opcode"));
}

bool is_window(Family f) {
  return f == Family::kConv || f == Family::kDepthwise || f == Family::kPool;
}
bool has_weights(Family f) {
  return f == Family::kConv || f == Family::kDepthwise || f == Family::kFullyConnected;
}

using cost::ceil_div;
int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

template <typename... A>
void require(bool ok, const A&... parts) {
  if (!ok) throw DeviceFault(str_cat(parts...));
}

std::string path(FieldRef f) { return field_path(f); }

// Everything one kernel command reads from the compute bank, validated.
struct Setup {
  Opcode op = Opcode::NPU_OP_CONV;
  Family fam = Family::kConv;
  ActMode act = ActMode::NONE;
  bool quant_en = false, bias_en = false, fm_upd = false, k_upd = false;
  uint32_t pool_mode = 0;
  int kx = 1, ky = 1, sx = 1, sy = 1, pad_l = 0, pad_t = 0, pad_r = 0, pad_b = 0;
  int in_w = 0, in_h = 0, in_c = 0, out_w = 0, out_h = 0, out_c = 0;
  int32_t in_zp = 0, out_zp = 0, act_min = 0, act_max = 0;
  uint32_t a_in = 0, a_out = 0, a_k = 0, a_bias = 0, a_mul = 0, a_shift = 0, a_act = 0;
  uint64_t in_pix = 0, in_row = 0, out_pix = 0, out_row = 0, k_pitch = 0;
  int64_t k_block = 0;  // K_TRANS_LEN * 16 bytes per weight block
  int depth_mult = 1;
  // Output tile of the command and the width of its input tile.
  int y0 = 0, h = 0, x0 = 0, w = 0, ix0 = 0, iw = 0;
  int iy0 = 0, ih = 0;
  // Multi-core.
  uint32_t mode = value_of(BroadcastMode::NONE);
  int ncores = 1;
  int avg_h = 0, ov_h = 0, avg_in_step = 0, ov_in_rows = 0, oc_per_core = 0;
  // SRAM areas.
  SramRange ifm_area, k_area, ofm_area, temp_area;
  bool needs_bias = false, needs_quant = false, needs_lut = false;
  bool real_scale = false;  // NACC_ACT_PARA.QUANT_REAL_SCALE: float64 scales, no shifts
  bool fp32_scale = false;  // NACC_ACT_PARA.QUANT_FP32_SCALE: float32 scales, no shifts (MAC units)
  // NPU_OP_MATMUL with NACC_CTRL.IM2COL_EN = 1: A is gathered by the DMA from
  // the feature map as im2col rows (docs/device_model.md §4); K = ky * kx * in_c.
  bool im2col = false;
  int64_t mat_k = 0;  // K of a matmul (IN_FM_CH, or ky * kx * IN_FM_CH with im2col)
  int quant_entries = 0;  // per core, 0 = per output channel
  // Element-wise / matmul extras.
  ElementwiseParams ew;
  int32_t b_zp = 0;
};

const char* act_name(uint32_t v) {
  return v <= 5 ? act_mode_name(ActMode(v)) : "?";
}

void read_geometry(const RegisterFile& r, Setup& s) {
  if (is_window(s.fam) || s.im2col) {
    s.kx = int(r.field(fields::NACC_KERNEL::K_SIZE_X));
    s.ky = int(r.field(fields::NACC_KERNEL::K_SIZE_Y));
    require(s.kx >= limits::kMinKernel && s.ky >= limits::kMinKernel,
            "kernel size ", s.kx, "x", s.ky, ": NACC_KERNEL.K_SIZE_X/K_SIZE_Y must be in [1, ",
            limits::kMaxKernel, "]");
    require(int(r.field(fields::NACC_KERNEL::K_SIZE_XY)) == s.kx * s.ky - 1,
            path(fields::NACC_KERNEL::K_SIZE_XY), " = ", r.field(fields::NACC_KERNEL::K_SIZE_XY),
            " but K_SIZE_X * K_SIZE_Y - 1 = ", s.kx * s.ky - 1);
    s.sx = int(r.field(fields::NACC_KERNEL::K_STRIDE_X));
    s.sy = int(r.field(fields::NACC_KERNEL::K_STRIDE_Y));
    require(s.sx >= limits::kMinStride && s.sx <= limits::kMaxStride && s.sy >= limits::kMinStride &&
                s.sy <= limits::kMaxStride,
            "stride ", s.sx, "x", s.sy, ": NACC_KERNEL.K_STRIDE_X/Y must be in [1, ",
            limits::kMaxStride, "] (NACC_SPEC §2)");
    require(r.field(fields::NACC_KERNEL::K_DILATION_X) == 1 &&
                r.field(fields::NACC_KERNEL::K_DILATION_Y) == 1,
            "dilation ", r.field(fields::NACC_KERNEL::K_DILATION_X), "x",
            r.field(fields::NACC_KERNEL::K_DILATION_Y),
            ": NACC_KERNEL.K_DILATION_X/Y must be 1 (NACC_SPEC §2)");
    s.pad_l = int(r.field(fields::NACC_PADDING::PAD_X));
    s.pad_t = int(r.field(fields::NACC_PADDING::PAD_Y));
    require(s.pad_l <= limits::kMaxPadding && s.pad_t <= limits::kMaxPadding, "padding ",
            s.pad_l, "/", s.pad_t, ": NACC_PADDING.PAD_X/PAD_Y must be in [0, ",
            limits::kMaxPadding, "] (NACC_SPEC §2)");
  }
  s.in_w = int(r.field(fields::NACC_IN_FM::IN_FM_WIDTH));
  s.in_h = int(r.field(fields::NACC_IN_FM::IN_FM_HEIGHT));
  s.in_c = int(r.field(fields::NACC_FM_CH::IN_FM_CH));
  s.out_w = int(r.field(fields::NACC_OUT_FM::OUT_FM_WIDTH));
  s.out_h = int(r.field(fields::NACC_OUT_FM::OUT_FM_HEIGHT));
  s.out_c = int(r.field(fields::NACC_FM_CH::OUT_FM_CH));
  require(s.in_w >= 1 && s.in_h >= 1, "input feature map ", s.in_w, "x", s.in_h,
          ": NACC_IN_FM width and height must be >= 1");
  require(s.out_w >= 1 && s.out_h >= 1, "output feature map ", s.out_w, "x", s.out_h,
          ": NACC_OUT_FM width and height must be >= 1");
  require(s.in_c >= 1 && s.out_c >= 1, "channels ", s.in_c, " -> ", s.out_c,
          ": NACC_FM_CH.IN_FM_CH and OUT_FM_CH must be >= 1");
  switch (s.fam) {
    case Family::kDepthwise: {
      const uint32_t m = r.field(fields::NACC_DMA_PARA3::DW_CH_MULT);
      require(int(m) <= limits::kMaxDepthMultiplierLog2, path(fields::NACC_DMA_PARA3::DW_CH_MULT),
              " = ", m, " out of range [0, ", limits::kMaxDepthMultiplierLog2, "] (NACC_SPEC §2)");
      s.depth_mult = 1 << m;
      require(int64_t(s.in_c) * s.depth_mult == s.out_c, "depthwise: OUT_FM_CH ", s.out_c,
              " must be IN_FM_CH ", s.in_c, " x 2^DW_CH_MULT ", s.depth_mult);
      break;
    }
    case Family::kPool:
      require(s.out_c == s.in_c, "pooling: OUT_FM_CH ", s.out_c, " must equal IN_FM_CH ", s.in_c);
      break;
    case Family::kElementwise:
    case Family::kActivation:
      require(s.out_c == s.in_c && s.out_w == s.in_w && s.out_h == s.in_h,
              s.fam == Family::kElementwise ? "element-wise" : "activation",
              ": the output feature map ", s.out_w, "x", s.out_h, "x", s.out_c,
              " must equal the input ", s.in_w, "x", s.in_h, "x", s.in_c);
      break;
    case Family::kFullyConnected: {
      require(s.in_w == 1 && s.out_w == 1 && s.out_h == s.in_h, "fully connected: the IFM is ",
              "IN_FM_HEIGHT rows of one pixel and the OFM OUT_FM_HEIGHT = IN_FM_HEIGHT rows of one "
              "pixel; got IN_FM ", s.in_w, "x", s.in_h, ", OUT_FM ", s.out_w, "x", s.out_h);
      const int64_t expect = int64_t(s.in_w) * ceil_div(s.in_c, limits::kMacLanes) - 1;
      require(int64_t(r.field(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE)) == expect,
              path(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE), " = ",
              r.field(fields::NACC_FULL_CONV_PARA::FULL_KER_SIZE),
              " but IN_FM_WIDTH * ceil(IN_FM_CH / 64) - 1 = ", expect,
              expect > 255 ? " (does not fit 8 bits: IN_FM_CH <= 16384)" : "");
      break;
    }
    case Family::kMatmul: {
      if (s.im2col) {
        // im2col: A has one row per output pixel, K = ky * kx * IN_FM_CH.
        const int ax = int(r.field(fields::NACC_MATRIX_A::MATRIX_A_XSIZE)),
                  ay = int(r.field(fields::NACC_MATRIX_A::MATRIX_A_YSIZE));
        const int bx = int(r.field(fields::NACC_MATRIX_B::MATRIX_B_XSIZE)),
                  by = int(r.field(fields::NACC_MATRIX_B::MATRIX_B_YSIZE));
        s.mat_k = int64_t(s.ky) * s.kx * s.in_c;
        const int64_t m = int64_t(s.out_h) * s.out_w;
        require(ax == s.mat_k && ay == m && by == s.mat_k && bx == s.out_c,
                "matmul with im2col: NACC_MATRIX_A ", ax, "x", ay, " (x = K, y = M) and ",
                "NACC_MATRIX_B ", bx, "x", by, " (x = N, y = K) disagree with K = K_SIZE_Y x ",
                "K_SIZE_X x IN_FM_CH = ", s.mat_k, ", M = OUT_FM_HEIGHT x OUT_FM_WIDTH = ", m,
                ", N = OUT_FM_CH = ", s.out_c);
        break;
      }
      s.mat_k = s.in_c;
      require(s.in_w == 1 && s.out_w == 1 && s.out_h == s.in_h, "matmul: A is IN_FM_HEIGHT rows ",
              "of one pixel and the OFM OUT_FM_HEIGHT = IN_FM_HEIGHT rows of one pixel; got IN_FM ",
              s.in_w, "x", s.in_h, ", OUT_FM ", s.out_w, "x", s.out_h);
      const int ax = int(r.field(fields::NACC_MATRIX_A::MATRIX_A_XSIZE)),
                ay = int(r.field(fields::NACC_MATRIX_A::MATRIX_A_YSIZE));
      const int bx = int(r.field(fields::NACC_MATRIX_B::MATRIX_B_XSIZE)),
                by = int(r.field(fields::NACC_MATRIX_B::MATRIX_B_YSIZE));
      require(ax == s.in_c && ay == s.in_h && by == s.in_c && bx == s.out_c,
              "matmul: NACC_MATRIX_A ", ax, "x", ay, " (x = K, y = M) and NACC_MATRIX_B ", bx, "x",
              by, " (x = N, y = K) disagree with IN_FM_CH = K = ", s.in_c,
              ", IN_FM_HEIGHT = M = ", s.in_h, ", OUT_FM_CH = N = ", s.out_c);
      break;
    }
    case Family::kConv: break;
  }
  // Implied right / bottom padding (docs/device_model.md §3).
  s.pad_r = std::max<int64_t>(0, int64_t(s.out_w - 1) * s.sx + s.kx - s.in_w - s.pad_l);
  s.pad_b = std::max<int64_t>(0, int64_t(s.out_h - 1) * s.sy + s.ky - s.in_h - s.pad_t);
  require(s.pad_r <= limits::kMaxPadding && s.pad_b <= limits::kMaxPadding,
          "implied padding right ", int64_t(s.out_w - 1) * s.sx + s.kx - s.in_w - s.pad_l,
          " / bottom ", int64_t(s.out_h - 1) * s.sy + s.ky - s.in_h - s.pad_t,
          " (from NACC_OUT_FM, NACC_KERNEL, NACC_IN_FM, NACC_PADDING) out of range [0, ",
          limits::kMaxPadding, "]");
}

void read_tile(const RegisterFile& r, Setup& s) {
  s.y0 = int(std::min<uint32_t>(
      r.field(fields::NACC_OUT_FM_SPLIT_H_OFFSET::OUT_FM_START_SPLIT_H_OFFSET), 1u << 30));
  s.h = int(r.field(fields::NACC_OUT_FM_SPLIT_LEN::OUT_FM_SPLIT_LEN));
  s.x0 = int(r.field(fields::NACC_OUT_FM_SPLIT_LEN::OUT_FM_SPLIT_LEFT_LEN));
  s.w = int(r.field(fields::NACC_OUT_FM_SPLIT::OUT_FM_SPLIT_WIDTH));
  require(s.h >= 1 && s.w >= 1, "empty output tile ", s.w, "x", s.h, ": ",
          path(fields::NACC_OUT_FM_SPLIT::OUT_FM_SPLIT_WIDTH), " and ",
          path(fields::NACC_OUT_FM_SPLIT_LEN::OUT_FM_SPLIT_LEN), " must be >= 1");
  require(int64_t(s.y0) + s.h <= s.out_h && int64_t(s.x0) + s.w <= s.out_w, "output tile rows [",
          s.y0, ", ", int64_t(s.y0) + s.h, ") x columns [", s.x0, ", ", s.x0 + s.w,
          ") leaves the output feature map ", s.out_w, "x", s.out_h);
  s.iy0 = r.field_signed(fields::NACC_IN_FM_SPLIT_H_OFFSET::IN_FM_START_SPLIT_H_OFFSET);
  s.ih = int(r.field(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_LEFT_LEN));
  s.ix0 = r.field_signed(fields::NACC_IN_FM_SPLIT_W_OFFSET::IN_FM_START_SPLIT_W_OFFSET);
  s.iw = int(r.field(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_WIDTH));
  const int64_t want_x0 = int64_t(s.x0) * s.sx - s.pad_l;
  const int64_t want_w = int64_t(s.w - 1) * s.sx + s.kx;
  require(s.ix0 == want_x0 && s.iw == want_w,
          "input tile does not cover the output tile: columns [", s.x0, ", ", s.x0 + s.w,
          ") need input columns [", want_x0, ", ", want_x0 + want_w, ") but ",
          path(fields::NACC_IN_FM_SPLIT_W_OFFSET::IN_FM_START_SPLIT_W_OFFSET), " = ", s.ix0, ", ",
          path(fields::NACC_IN_FM_SPLIT::IN_FM_SPLIT_WIDTH), " = ", s.iw);
}

void read_multicore(const RegisterFile& r, const HwConfig& hw, Setup& s) {
  s.mode = r.field(fields::NACC_BROADCAST_CTRL::BROADCAST_MODE);
  s.ncores = int(r.field(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM)) + 1;
  require(s.mode <= value_of(BroadcastMode::SPLIT_HEIGHT),
          path(fields::NACC_BROADCAST_CTRL::BROADCAST_MODE), " = ", s.mode,
          " is not a mode (0 NONE, 1 SPLIT_KERNEL, 2 SPLIT_HEIGHT)");
  const int n = s.ncores;
  require(n == 1 || n == 2 || n == 4 || n == 8 || n == 16 || n == 32,
          path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
          ": cores - 1 must be 0, 1, 3, 7, 15 or 31 (NACC_SPEC §4)");
  require(n <= hw.cores, path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
          " asks for ", n, " cores; the device has ", hw.cores);
  if (s.mode == value_of(BroadcastMode::NONE)) {
    require(n == 1, path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
            " with BROADCAST_MODE NONE (one core)");
    return;
  }
  if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL)) {
    require(s.fam == Family::kConv || s.fam == Family::kFullyConnected,
            "BROADCAST_MODE SPLIT_KERNEL (mode 1) is for convolution and fully connected only, "
            "not ", opcode_name(s.op), " (NACC_SPEC §4)");
    s.oc_per_core = int(r.field(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET));
    const int64_t last = int64_t(s.out_c) - int64_t(n - 1) * s.oc_per_core;
    require((n == 1 || s.oc_per_core >= 1) && last >= 1, "mode 1: ", n - 1, " cores x ",
            path(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET), " = ", s.oc_per_core,
            " channels leave ", last, " of OUT_FM_CH = ", s.out_c,
            " for the last core (must be >= 1)");
    return;
  }
  s.avg_h = int(r.field(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_AVG_HEIGHT));
  s.ov_h = int(r.field(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_OV_HEIGHT));
  s.avg_in_step = int(r.field(fields::NACC_BROADCAST_DMA::IN_DMA_UNICAST_AVG_OFFSET));
  s.ov_in_rows = int(r.field(fields::NACC_BROADCAST_DMA::IN_DMA_UNICAST_OV_OFFSET));
  require((n == 1 || s.avg_h >= 1) && s.ov_h >= 1 && int64_t(n - 1) * s.avg_h + s.ov_h == s.h,
          "mode 2: ", n - 1, " cores x ",
          path(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_AVG_HEIGHT), " = ", s.avg_h, " + ",
          path(fields::NACC_BROADCAST_SPLIT::OUT_FM_SPLIT_OV_HEIGHT), " = ", s.ov_h,
          " rows must equal OUT_FM_SPLIT_LEN = ", s.h, ", every core at least one row");
  const uint32_t over = r.get(Reg::NACC_BROADCAST_CTRL1);
  require(over == (s.avg_h != s.ov_h ? 1u : 0u),
          path(fields::NACC_BROADCAST_CTRL1::BROADCAST_OVER_EN), " = ", over,
          " must be 1 exactly when the average and overflow heights differ (", s.avg_h, ", ",
          s.ov_h, ")");
}

SramRange area_of(int64_t base, const int64_t (&bases)[4], int64_t sram) {
  int64_t end = sram;
  for (int64_t b : bases) {
    if (b > base) end = std::min(end, b);
  }
  return SramRange{base, end};
}

void read_areas(const RegisterFile& r, const HwConfig& hw, Setup& s, bool uses_k, bool uses_temp) {
  const int64_t S = hw.sram_bytes;
  const int64_t bases[4] = {int64_t(r.field(fields::NACC_MEM_RANGE::IFM_MEM_BASE)) * (S / 4),
                            int64_t(r.field(fields::NACC_MEM_RANGE::K_MEM_BASE)) * (S / 1024),
                            int64_t(r.field(fields::NACC_MEM_RANGE::OFM_MEM_BASE)) * (S / 1024),
                            int64_t(r.field(fields::NACC_MEM_RANGE::TEMP_MEM_BASE)) * (S / 1024)};
  static const char* names[4] = {"IFM", "K", "OFM", "TEMP"};
  const bool used[4] = {true, uses_k, true, uses_temp};
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) {
      require(!(used[i] && used[j] && bases[i] == bases[j]), "NACC_MEM_RANGE: the ", names[i],
              " and ", names[j], " areas both start at SRAM byte ", bases[i],
              " and this command uses both");
    }
  }
  s.ifm_area = area_of(bases[0], bases, S);
  s.k_area = area_of(bases[1], bases, S);
  s.ofm_area = area_of(bases[2], bases, S);
  s.temp_area = area_of(bases[3], bases, S);
}

Setup read_setup(const RegisterFile& r, Opcode op, const HwConfig& hw) {
  Setup s;
  s.op = op;
  s.fam = family_of(op);
  require(r.field(fields::NACC_CTRL::CONV_MODE) != value_of(ConvMode::RGB_CONV),
          "NACC_CTRL.CONV_MODE = RGB_CONV: the q7 RGB convolution is not modelled; per-channel "
          "int8 first layers use im2col + matrix mode (NACC_SPEC §1)");
  s.im2col = r.field(fields::NACC_CTRL::IM2COL_EN) != 0;
  require(!s.im2col || s.fam == Family::kMatmul, "NACC_CTRL.IM2COL_EN = 1 feeds the matrix unit: "
          "only NPU_OP_MATMUL, not ", opcode_name(op), " (docs/device_model.md §4)");
  require(r.field(fields::NACC_CTRL::DATA_FORM) == 0,
          "NACC_CTRL.DATA_FORM = ", r.field(fields::NACC_CTRL::DATA_FORM),
          ": only INT8 (0) is modelled");
  const uint32_t act = r.field(fields::NACC_CTRL::ACT_MODE);
  require(act <= uint32_t(ActMode::LUT), "NACC_CTRL.ACT_MODE = ", act,
          " is not a mode (0 RELU, 1 RELU6, 2 TANH, 3 SIGMOID, 4 NONE, 5 LUT)");
  s.act = ActMode(act);
  require(s.act != ActMode::TANH && s.act != ActMode::SIGMOID,
          "NACC_CTRL.ACT_MODE = ", act_name(act),
          ": the q7 (ACT_INT_W) Tanh/Sigmoid are not modelled; int8 models use ACT_MODE = LUT "
          "(NACC_SPEC §1)");
  s.quant_en = r.field(fields::NACC_CTRL::QUANT_EN) != 0;
  s.bias_en = r.field(fields::NACC_CTRL::BIAS_EN) != 0;
  s.fm_upd = r.field(fields::NACC_CTRL::FM_UPD) != 0;
  s.k_upd = r.field(fields::NACC_CTRL::K_UPD) != 0;
  s.pool_mode = r.field(fields::NACC_CTRL::POOL_MODE);
  const char* name = opcode_name(op);
  const bool mac_family = has_weights(s.fam) || s.fam == Family::kMatmul;
  if (mac_family || s.fam == Family::kElementwise) {
    require(s.quant_en, name, " needs NACC_CTRL.QUANT_EN = 1 (its output is requantized with the ",
            "QUANT_MUL / QUANT_SHIFT arrays)");
  }
  if (s.fam == Family::kPool) {
    require(!s.quant_en, "NPU_OP_POOL: NACC_CTRL.QUANT_EN = 1 has no meaning (the pooling unit ",
            "keeps the input quantization)");
  }
  if (!has_weights(s.fam) && !s.im2col) {
    require(!s.bias_en, name, ": NACC_CTRL.BIAS_EN = 1 has no meaning (no bias input)");
  }
  s.real_scale = r.field(fields::NACC_ACT_PARA::QUANT_REAL_SCALE) != 0;
  require(!s.real_scale || s.fam == Family::kFullyConnected,
          path(fields::NACC_ACT_PARA::QUANT_REAL_SCALE),
          " = 1 is only for NPU_OP_FULLY_CONNECTED, not ", name, " (docs/device_model.md §4)");
  s.fp32_scale = r.field(fields::NACC_ACT_PARA::QUANT_FP32_SCALE) != 0;
  require(!s.fp32_scale || ((has_weights(s.fam) || s.fam == Family::kMatmul) && !s.real_scale),
          path(fields::NACC_ACT_PARA::QUANT_FP32_SCALE),
          " = 1 is only for the MAC units (NPU_OP_CONV, NPU_OP_DW_CONV, ",
          "NPU_OP_FULLY_CONNECTED, NPU_OP_MATMUL) with QUANT_REAL_SCALE = 0, not ", name,
          s.real_scale ? " with QUANT_REAL_SCALE = 1" : "", " (docs/device_model.md §4)");
  s.needs_bias = s.bias_en;
  s.needs_quant = s.quant_en;
  s.needs_lut = s.act == ActMode::LUT;
  s.quant_entries =
      (s.fam == Family::kElementwise || s.fam == Family::kActivation) ? 1 : 0;

  read_geometry(r, s);
  read_tile(r, s);
  read_multicore(r, hw, s);

  s.in_zp = -r.field_signed(fields::NACC_FM_OFFSET::IN_FM_OFFSET);
  s.out_zp = r.field_signed(fields::NACC_FM_OFFSET::OUT_FM_OFFSET);
  s.act_min = r.field_signed(fields::NACC_ACT_MIN::ACT_MIN);
  s.act_max = r.field_signed(fields::NACC_ACT_MAX::ACT_MAX);
  require(s.act_min >= -128 && s.act_max <= 127 && s.act_min <= s.act_max, "activation clamp [",
          s.act_min, ", ", s.act_max, "]: NACC_ACT_MIN / NACC_ACT_MAX need -128 <= min <= max <= 127");
  s.a_in = r.get(Reg::NACC_IN_FM_DMA_ADDR);
  s.a_out = r.get(Reg::NACC_OUT_DMA_ADDR);
  s.a_k = r.get(Reg::NACC_IN_K_DMA_ADDR);
  s.a_bias = r.get(Reg::NACC_BIAS_DMA_ADDR);
  s.a_mul = r.get(Reg::NACC_QUANT_MUL_DMA_ADDR);
  s.a_shift = r.get(Reg::NACC_QUANT_SHIFT_DMA_ADDR);
  s.a_act = r.get(Reg::NACC_IN_ACT_DMA_ADDR);
  s.in_pix = r.field(fields::NACC_DMA_PARA2::FM_TRANS_OFFSET);
  s.in_row = r.field(fields::NACC_DMA_OFFSET1::IN_DMA_ROW_OFFSET);
  s.out_pix = r.field(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN);
  s.out_row = r.field(fields::NACC_DMA_OFFSET2::OUT_DMA_OFFSET);
  s.k_pitch = r.field(fields::NACC_DMA_PARAA::K_TRANS_OFFSET);
  s.k_block = int64_t(r.field(fields::NACC_CONV_TRANS_LEN::K_TRANS_LEN)) * kBusBeatBytes;

  // Pitches (docs/device_model.md §2): pixels and rows must not overlap.
  if (s.in_w > 1) {
    require(s.in_pix >= uint64_t(s.in_c), "IFM pixel pitch ",
            path(fields::NACC_DMA_PARA2::FM_TRANS_OFFSET), " = ", s.in_pix,
            " is less than IN_FM_CH = ", s.in_c);
  }
  if (s.in_h > 1) {
    const uint64_t need = uint64_t(s.in_w - 1) * s.in_pix + uint64_t(s.in_c);
    require(s.in_row >= need, "IFM row pitch ", path(fields::NACC_DMA_OFFSET1::IN_DMA_ROW_OFFSET),
            " = ", s.in_row, " is less than one row (", need, " bytes)");
  }
  if (s.out_w > 1) {
    require(s.out_pix >= uint64_t(s.out_c), "OFM pixel pitch ",
            path(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN), " = ", s.out_pix,
            " is less than OUT_FM_CH = ", s.out_c);
  }
  if (s.out_h > 1) {
    const uint64_t need = uint64_t(s.out_w - 1) * s.out_pix + uint64_t(s.out_c);
    require(s.out_row >= need, "OFM row pitch ", path(fields::NACC_DMA_OFFSET2::OUT_DMA_OFFSET),
            " = ", s.out_row, " is less than one row (", need, " bytes)");
  }
  if (s.fam == Family::kElementwise && s.k_pitch != 0) {
    require(s.k_pitch >= uint64_t(s.in_c), "element-wise second operand pixel pitch ",
            path(fields::NACC_DMA_PARAA::K_TRANS_OFFSET), " = ", s.k_pitch,
            " is less than IN_FM_CH = ", s.in_c, " (0 broadcasts one pixel)");
  }
  if (s.fam == Family::kMatmul && s.mat_k > 1) {
    require(s.k_pitch >= uint64_t(s.out_c), "matmul: B row pitch ",
            path(fields::NACC_DMA_PARAA::K_TRANS_OFFSET), " = ", s.k_pitch,
            " is less than N = ", s.out_c);
  }
  if (has_weights(s.fam)) {
    require(s.k_block > kWeightLengthBytes || !s.k_upd, name, ": ",
            path(fields::NACC_CONV_TRANS_LEN::K_TRANS_LEN), " = ", s.k_block / kBusBeatBytes,
            " beats hold no weight stream");
  }

  if (s.fam == Family::kElementwise) {
    const uint32_t mode = r.field(fields::NACC_ELEMENTWISE::ELEMENTWISE_MODE);
    require(mode == uint32_t(ElementwiseMode::ADD) || mode == uint32_t(ElementwiseMode::SUB) ||
                mode == uint32_t(ElementwiseMode::MUL),
            "NACC_ELEMENTWISE.ELEMENTWISE_MODE = ", mode,
            mode == uint32_t(ElementwiseMode::MUL_S16_S8) ? " (MUL_S16_S8) is not modelled"
                                                          : " is not a mode (1 SUB, 2 ADD, 8 MUL)");
    s.ew.mode = ElementwiseMode(mode);
    // ELEMENT_INPUT_QUANT_EN: ADD and SUB rescale both inputs with
    // NACC_ELEMENT_QUANT1/2; MUL multiplies the offset inputs unscaled.
    const bool input_quant = r.field(fields::NACC_CTRL::ELEMENT_INPUT_QUANT_EN) != 0;
    require(input_quant == (s.ew.mode != ElementwiseMode::MUL),
            "NACC_CTRL.ELEMENT_INPUT_QUANT_EN = ", int(input_quant), " with ELEMENTWISE_MODE ",
            elementwise_mode_name(s.ew.mode), ": ADD and SUB quantize their inputs (1), MUL does "
            "not (0); the other combinations are not modelled");
    s.ew.input1_offset = r.field_signed(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET1);
    s.ew.input2_offset = r.field_signed(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET2);
    s.ew.left_shift = int(r.field(fields::NACC_ELEMENTWISE::LEFT_SHIFT));
    s.ew.input1_multiplier = r.field_signed(fields::NACC_ELEMENT_QUANT1_MULT::IN_ELEMENT_MULT1);
    s.ew.input1_shift = r.field_signed(fields::NACC_ELEMENT_QUANT1_SHIFT::IN_ELEMENT_SHIFT1);
    s.ew.input2_multiplier = r.field_signed(fields::NACC_ELEMENT_QUANT2_MULT::IN_ELEMENT_MULT2);
    s.ew.input2_shift = r.field_signed(fields::NACC_ELEMENT_QUANT2_SHIFT::IN_ELEMENT_SHIFT2);
    s.ew.output_zero_point = s.out_zp;
    s.ew.act_min = s.act_min;
    s.ew.act_max = s.act_max;
  }
  if (s.fam != Family::kElementwise) {
    require(r.field(fields::NACC_CTRL::ELEMENT_INPUT_QUANT_EN) == 0, name,
            ": NACC_CTRL.ELEMENT_INPUT_QUANT_EN = 1 has no meaning (no element-wise inputs)");
  }
  if (s.fam == Family::kMatmul)
    s.b_zp = -r.field_signed(fields::NACC_ELEMENTWISE::IN_ELEMENT_OFFSET2);
  require(!s.im2col || s.b_zp == 0, "matmul with im2col: B holds convolution weights, whose zero ",
          "point is 0; NACC_ELEMENTWISE.IN_ELEMENT_OFFSET2 = ", -s.b_zp);

  const bool uses_k = has_weights(s.fam) || s.fam == Family::kMatmul || s.needs_bias ||
                      s.needs_quant || s.needs_lut;
  read_areas(r, hw, s, uses_k, s.fam == Family::kElementwise);
  return s;
}

// ---------------------------------------------------------------------------
// Per-core work.

// One external read into SRAM: rows x cols pixels of `bytes` each, packed in SRAM.
struct Read {
  uint64_t addr = 0;  // device address of the first byte
  int rows = 1, cols = 1;
  int64_t bytes = 0;
  uint64_t row_pitch = 0, pix_pitch = 0;
  int64_t sram = 0;               // SRAM destination
  const uint8_t* host = nullptr;  // host pointer of addr (after the bounds check)
  int64_t total() const { return int64_t(rows) * cols * bytes; }
  uint64_t span() const {
    return uint64_t(rows - 1) * row_pitch + uint64_t(cols - 1) * pix_pitch + uint64_t(bytes);
  }
  Interval interval() const { return Interval{addr, addr + span()}; }
};

struct CoreWork {
  int core = 0;
  int y0 = 0, h = 0, oc0 = 0, noc = 0;
  int iy0 = 0, ih = 0;
  int vy0 = 0, vh = 0, vx0 = 0, vw = 0;            // valid part of the input tile
  int pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;  // the tile's padding as the unit sees it
  SramRange ifm, kern, ofm, temp;
  int64_t w_lo = 0, bias_lo = -1, mul_lo = -1, shift_lo = -1, lut_lo = -1, scale_lo = -1;
  int64_t weight_count = 0, quant_count = 0;
  int64_t gathered = 0;  // im2col: IFM bytes the DMA gathers (padding positions excluded)
  bool load_fm = false, load_k = false, load_temp = false;
  Read fm_read, temp_read, b_read;  // IFM tile, element-wise operand, matmul B
  Read wblock;                      // weight block (u32 length + stream + padding)
  std::vector<Read> small_reads;    // bias, multipliers, shifts, LUT
  uint64_t ofm_addr = 0, ofm_span = 0;
  uint8_t* ofm_host = nullptr;
  std::vector<uint64_t> fm_key, k_key;
  int64_t rd_unicast = 0, rd_broadcast = 0, wr_bytes = 0;
  int64_t mac_cycles = 0, act_cycles = 0, macs = 0;
  std::exception_ptr error;
};

// Useful taps along one axis: over the tile's outputs, the kernel taps that
// land on valid input (tile-local coordinates, `pad_before` padded positions first).
int64_t valid_taps(int outputs, int stride, int kernel, int pad_before, int valid) {
  int64_t total = 0;
  for (int o = 0; o < outputs; ++o) {
    const int first = o * stride - pad_before;
    const int lo = std::max(first, 0), hi = std::min(first + kernel, valid);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

void count_work(const Setup& s, CoreWork& c) {
  const int64_t h = c.h, w = s.w, taps = int64_t(s.ky) * s.kx;
  switch (s.fam) {
    case Family::kConv:
      c.mac_cycles = cost::conv_mac_cycles(h, w, c.noc, taps, s.in_c);
      c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
               valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c * c.noc;
      break;
    case Family::kDepthwise:
      c.mac_cycles = cost::window_mac_cycles(h, w, s.out_c, taps);
      c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
               valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.out_c;
      break;
    case Family::kPool: c.mac_cycles = cost::window_mac_cycles(h, w, s.out_c, taps); break;
    case Family::kMatmul:
      if (s.im2col) {
        // One row of A per output pixel: M = h * w, K = ky * kx * in_c.
        c.mac_cycles = cost::matrix_mac_cycles(h * w, c.noc, s.mat_k);
        c.macs = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
                 valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c * c.noc;
        break;
      }
      [[fallthrough]];
    case Family::kFullyConnected:
      c.mac_cycles = cost::matrix_mac_cycles(h, c.noc, s.in_c);
      c.macs = h * c.noc * s.in_c;
      break;
    case Family::kElementwise: c.mac_cycles = cost::elementwise_cycles(h * w * s.in_c); break;
    case Family::kActivation: break;
  }
  if (s.needs_lut) c.act_cycles = cost::activation_cycles(h * w * c.noc);
}

std::string core_text(const Setup& s, int i) {
  return s.ncores > 1 ? str_cat(" (core ", i, ")") : std::string();
}

std::string area_overflow(const char* what, int64_t need, const SramRange& area) {
  return str_cat("SRAM overflow: ", what, " needs ", need, " bytes, area holds ",
                 area.hi - area.lo, " (NACC_MEM_RANGE: SRAM [", area.lo, ", ", area.hi, "))");
}

// Bounds-checks a read and resolves its host pointer.
void resolve(const ExecEnv& env, Read& r, const std::string& what) {
  const BoundBuffer& b = check_access(env, r.addr, r.span(), false, what);
  r.host = b.data + (r.addr - b.address);
}

std::string reg_text(Reg r, uint32_t value, uint64_t extra = 0) {
  return str_cat(describe(r).name, " = ", region_text(value, extra));
}

// Plans core i: its tile, SRAM layout, external accesses (bounds-checked) and
// whether its IFM and K areas must be loaded or are resident.
CoreWork plan_core(const ExecEnv& env, const Setup& s, int i) {
  const HandlerContext& ctx = env.ctx;
  const int n = s.ncores;
  const bool last = i == n - 1;
  CoreWork c;
  c.core = i;
  c.y0 = s.y0;
  c.h = s.h;
  int64_t iy0 = s.iy0;
  c.ih = s.ih;
  const char* rows_regs = "NACC_IN_FM_SPLIT_H_OFFSET, NACC_IN_FM_SPLIT.IN_FM_SPLIT_LEFT_LEN";
  if (s.mode == value_of(BroadcastMode::SPLIT_HEIGHT)) {
    c.y0 = s.y0 + i * s.avg_h;
    c.h = last ? s.ov_h : s.avg_h;
    iy0 = int64_t(s.iy0) + int64_t(i) * s.avg_in_step;
    c.ih = last ? s.ov_in_rows : s.ih;
    rows_regs = last ? "NACC_IN_FM_SPLIT_H_OFFSET + core x IN_DMA_UNICAST_AVG_OFFSET, "
                       "NACC_BROADCAST_DMA.IN_DMA_UNICAST_OV_OFFSET"
                     : "NACC_IN_FM_SPLIT_H_OFFSET + core x IN_DMA_UNICAST_AVG_OFFSET, "
                       "NACC_IN_FM_SPLIT.IN_FM_SPLIT_LEFT_LEN";
  }
  c.oc0 = 0;
  c.noc = s.out_c;
  if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL)) {
    c.oc0 = i * s.oc_per_core;
    c.noc = last ? s.out_c - (n - 1) * s.oc_per_core : s.oc_per_core;
  }
  // Halo (docs/device_model.md §3, §5).
  const int64_t want_y0 = int64_t(c.y0) * s.sy - s.pad_t;
  const int64_t want_h = int64_t(c.h - 1) * s.sy + s.ky;
  require(iy0 == want_y0 && c.ih == want_h, "input tile does not cover the output tile",
          core_text(s, i), ": rows [", c.y0, ", ", c.y0 + c.h, ") need input rows [", want_y0,
          ", ", want_y0 + want_h, ") but the tile is rows [", iy0, ", ", iy0 + c.ih,
          ") (", rows_regs, ")");
  c.iy0 = int(iy0);  // == want_y0: y0 < OUT_FM_HEIGHT <= 65535
  const int64_t vy1 = std::min<int64_t>(int64_t(c.iy0) + c.ih, s.in_h);
  const int64_t vx1 = std::min<int64_t>(int64_t(s.ix0) + s.iw, s.in_w);
  c.vy0 = std::max(c.iy0, 0);
  c.vx0 = std::max(s.ix0, 0);
  require(vy1 > c.vy0 && vx1 > c.vx0, "input tile rows [", c.iy0, ", ", int64_t(c.iy0) + c.ih,
          ") x columns [", s.ix0, ", ", int64_t(s.ix0) + s.iw, ")", core_text(s, i),
          " holds no pixel of the ", s.in_w, "x", s.in_h, " input (all padding)");
  c.vh = int(vy1 - c.vy0);
  c.vw = int(vx1 - c.vx0);
  c.pad_t = c.vy0 - c.iy0;
  c.pad_b = int(int64_t(c.iy0) + c.ih - vy1);
  c.pad_l = c.vx0 - s.ix0;
  c.pad_r = int(int64_t(s.ix0) + s.iw - vx1);

  // SRAM layout (docs/device_model.md §1).
  // With im2col the IFM area holds one K-byte row per output pixel of the tile.
  const int64_t ifm_bytes = s.im2col ? int64_t(c.h) * s.w * s.mat_k : int64_t(c.vh) * c.vw * s.in_c;
  require(s.ifm_area.lo + ifm_bytes <= s.ifm_area.hi,
          area_overflow(s.im2col ? "im2col rows" : "IFM tile", ifm_bytes, s.ifm_area),
          core_text(s, i));
  c.ifm = {s.ifm_area.lo, s.ifm_area.lo + ifm_bytes};
  const int64_t ofm_bytes = int64_t(c.h) * s.w * c.noc;
  require(s.ofm_area.lo + ofm_bytes <= s.ofm_area.hi, area_overflow("OFM tile", ofm_bytes, s.ofm_area),
          core_text(s, i));
  c.ofm = {s.ofm_area.lo, s.ofm_area.lo + ofm_bytes};
  if (s.fam == Family::kElementwise) {
    const int64_t temp_bytes = s.k_pitch == 0 ? s.in_c : ifm_bytes;
    require(s.temp_area.lo + temp_bytes <= s.temp_area.hi,
            area_overflow("element-wise operand", temp_bytes, s.temp_area), core_text(s, i));
    c.temp = {s.temp_area.lo, s.temp_area.lo + temp_bytes};
  }
  switch (s.fam) {
    case Family::kConv: c.weight_count = int64_t(c.noc) * s.ky * s.kx * s.in_c; break;
    case Family::kDepthwise: c.weight_count = int64_t(s.ky) * s.kx * s.out_c; break;
    case Family::kFullyConnected: c.weight_count = int64_t(c.noc) * s.in_c; break;
    case Family::kMatmul: c.weight_count = s.mat_k * c.noc; break;
    default: break;
  }
  c.quant_count = s.quant_entries ? s.quant_entries : c.noc;
  int64_t pos = s.k_area.lo;
  c.w_lo = pos;
  pos += c.weight_count;
  if (s.needs_bias) {
    c.bias_lo = pos = align_up(pos, kKAreaAlignment);
    pos += 4 * c.quant_count;
  }
  if (s.needs_quant && (s.real_scale || s.fp32_scale)) {
    c.scale_lo = pos = align_up(pos, kKAreaAlignment);
    pos += (s.real_scale ? 8 : 4) * c.quant_count;
  } else if (s.needs_quant) {
    c.mul_lo = pos = align_up(pos, kKAreaAlignment);
    pos += 4 * c.quant_count;
    c.shift_lo = pos = align_up(pos, kKAreaAlignment);
    pos += 4 * c.quant_count;
  }
  if (s.needs_lut) {
    c.lut_lo = pos = align_up(pos, kKAreaAlignment);
    pos += limits::kLutEntries;
  }
  c.kern = {s.k_area.lo, pos};
  require(pos <= s.k_area.hi,
          area_overflow(str_cat("kernel data (", c.weight_count, " weight bytes",
                                s.needs_bias ? ", bias" : "", s.needs_quant ? ", quantization" : "",
                                s.needs_lut ? ", LUT" : "", ")")
                            .c_str(),
                        pos - s.k_area.lo, s.k_area),
          core_text(s, i));

  // External accesses.
  const uint64_t ck = uint64_t(s.mode == value_of(BroadcastMode::SPLIT_KERNEL) ? i : 0);
  c.fm_read.addr = device_address(ctx, s.a_in, uint64_t(c.vy0) * s.in_row + uint64_t(c.vx0) * s.in_pix);
  c.fm_read.rows = c.vh;
  c.fm_read.cols = c.vw;
  c.fm_read.bytes = s.in_c;
  c.fm_read.row_pitch = s.in_row;
  c.fm_read.pix_pitch = s.in_pix;
  c.fm_read.sram = c.ifm.lo;
  c.fm_key = {c.fm_read.addr, s.in_row, s.in_pix, uint64_t(int64_t(c.iy0)), uint64_t(c.ih),
              uint64_t(int64_t(s.ix0)), uint64_t(s.iw), uint64_t(s.in_c), uint64_t(s.in_h),
              uint64_t(s.in_w), uint64_t(c.ifm.lo), uint64_t(s.im2col),
              uint64_t(s.kx), uint64_t(s.ky), uint64_t(s.sx), uint64_t(s.sy)};
  const uint64_t none = ~uint64_t(0);
  c.k_key = {uint64_t(s.fam), device_address(ctx, s.a_k, ck * uint64_t(s.k_block)),
             uint64_t(s.k_block), s.fam == Family::kMatmul ? s.k_pitch : 0,
             s.needs_bias ? device_address(ctx, s.a_bias, 4 * uint64_t(c.oc0)) : none,
             s.needs_quant ? device_address(ctx, s.a_mul, (s.real_scale ? 8 : 4) * uint64_t(c.oc0)) : none,
             s.needs_quant && !s.real_scale && !s.fp32_scale ? device_address(ctx, s.a_shift, 4 * uint64_t(c.oc0)) : none,
             uint64_t(s.real_scale) | uint64_t(s.fp32_scale) << 1,
             s.needs_lut ? device_address(ctx, s.a_act, 0) : none, uint64_t(c.noc),
             uint64_t(c.weight_count), uint64_t(c.quant_count), uint64_t(c.kern.lo),
             uint64_t(c.kern.hi)};
  const CoreState& cs = ctx.cores[size_t(i)];
  if (s.fm_upd) {
    c.load_fm = true;
  } else {
    require(cs.fm.valid && cs.fm.key == c.fm_key,
            "stale feature map: NACC_CTRL.FM_UPD = 0 but the IFM area", core_text(s, i),
            cs.fm.valid ? " holds another input tile (address, pitches, tile registers or "
                          "channels differ)"
                        : " holds no input tile loaded by this stream",
            " (docs/device_model.md §1)");
  }
  if (!c.kern.empty()) {
    if (s.k_upd) {
      c.load_k = true;
    } else {
      require(cs.kernel.valid && cs.kernel.key == c.k_key,
              "stale kernel: NACC_CTRL.K_UPD = 0 but the K area", core_text(s, i),
              cs.kernel.valid ? " holds another kernel (IN_K_DMA_ADDR, K_TRANS_LEN, BIAS/QUANT/"
                                "IN_ACT addresses, channel count or K area differ)"
                              : " holds no kernel loaded by this stream",
              " (docs/device_model.md §1)");
    }
  }
  const bool k_broadcast = s.mode == value_of(BroadcastMode::SPLIT_HEIGHT);
  const bool fm_broadcast = s.mode == value_of(BroadcastMode::SPLIT_KERNEL);
  if (c.load_fm) {
    resolve(env, c.fm_read, str_cat("IFM tile", core_text(s, i), " (", reg_text(Reg::NACC_IN_FM_DMA_ADDR, s.a_in), ")"));
    if (s.im2col) {
      // The DMA moves each valid byte of every output pixel's window (halo
      // bytes as often as windows overlap them); padding positions are
      // filled with the input zero point, not read.
      c.gathered = valid_taps(c.h, s.sy, s.ky, c.pad_t, c.vh) *
                   valid_taps(s.w, s.sx, s.kx, c.pad_l, c.vw) * s.in_c;
      (fm_broadcast ? c.rd_broadcast : c.rd_unicast) += c.gathered;
    } else {
      (fm_broadcast ? c.rd_broadcast : c.rd_unicast) += c.fm_read.total();
    }
  }
  if (c.load_k) {
    int64_t& acc = k_broadcast ? c.rd_broadcast : c.rd_unicast;
    if (has_weights(s.fam)) {
      c.wblock.addr = device_address(ctx, s.a_k, ck * uint64_t(s.k_block));
      c.wblock.bytes = s.k_block;
      c.wblock.sram = c.w_lo;
      resolve(env, c.wblock,
              str_cat("weight block", core_text(s, i), " (",
                      reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k, ck * uint64_t(s.k_block)),
                      ", K_TRANS_LEN x 16 = ", s.k_block, " bytes)"));
      acc += s.k_block;
    }
    if (s.fam == Family::kMatmul) {
      c.b_read.addr = device_address(ctx, s.a_k, 0);
      c.b_read.rows = int(s.mat_k);
      c.b_read.bytes = c.noc;
      c.b_read.row_pitch = s.k_pitch;
      c.b_read.sram = c.w_lo;
      resolve(env, c.b_read, str_cat("matmul B (", reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k), ")"));
      acc += c.b_read.total();
    }
    struct Part {
      bool used;
      Reg reg;
      uint32_t addr;
      int64_t sram, bytes;
      uint64_t extra;
      bool broadcast;
    };
    const Part parts[] = {
        {s.needs_bias, Reg::NACC_BIAS_DMA_ADDR, s.a_bias, c.bias_lo, 4 * c.quant_count,
         4 * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && !s.real_scale && !s.fp32_scale, Reg::NACC_QUANT_MUL_DMA_ADDR, s.a_mul,
         c.mul_lo, 4 * c.quant_count, 4 * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && !s.real_scale && !s.fp32_scale, Reg::NACC_QUANT_SHIFT_DMA_ADDR, s.a_shift,
         c.shift_lo, 4 * c.quant_count, 4 * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && s.fp32_scale, Reg::NACC_QUANT_MUL_DMA_ADDR, s.a_mul, c.scale_lo,
         4 * c.quant_count, 4 * uint64_t(c.oc0), k_broadcast},
        {s.needs_quant && s.real_scale, Reg::NACC_QUANT_MUL_DMA_ADDR, s.a_mul, c.scale_lo,
         8 * c.quant_count, 8 * uint64_t(c.oc0), k_broadcast},
        {s.needs_lut, Reg::NACC_IN_ACT_DMA_ADDR, s.a_act, c.lut_lo, limits::kLutEntries, 0,
         s.ncores > 1},
    };
    for (const Part& p : parts) {
      if (!p.used) continue;
      Read r;
      r.addr = device_address(ctx, p.addr, p.extra);
      r.bytes = p.bytes;
      r.sram = p.sram;
      resolve(env, r, str_cat(describe(p.reg).name, core_text(s, i), " (", region_text(p.addr, p.extra),
                              ", ", p.bytes, " bytes)"));
      (p.broadcast ? c.rd_broadcast : c.rd_unicast) += r.total();
      c.small_reads.push_back(r);
    }
  }
  if (s.fam == Family::kElementwise) {
    c.load_temp = true;
    Read& t = c.temp_read;
    const uint64_t p = s.k_pitch;
    t.addr = device_address(ctx, s.a_k, uint64_t(c.vy0) * p * uint64_t(s.in_w) + uint64_t(c.vx0) * p);
    t.rows = p == 0 ? 1 : c.vh;
    t.cols = p == 0 ? 1 : c.vw;
    t.bytes = s.in_c;
    t.row_pitch = p * uint64_t(s.in_w);
    t.pix_pitch = p;
    t.sram = c.temp.lo;
    resolve(env, t, str_cat("element-wise operand", core_text(s, i), " (",
                            reg_text(Reg::NACC_IN_K_DMA_ADDR, s.a_k), ")"));
    c.rd_unicast += t.total();
  }
  c.ofm_addr = device_address(ctx, s.a_out,
                              uint64_t(c.y0) * s.out_row + uint64_t(s.x0) * s.out_pix + uint64_t(c.oc0));
  c.ofm_span = uint64_t(c.h - 1) * s.out_row + uint64_t(s.w - 1) * s.out_pix + uint64_t(c.noc);
  const BoundBuffer& ob =
      check_access(env, c.ofm_addr, c.ofm_span, true,
                   str_cat("OFM tile", core_text(s, i), " (", reg_text(Reg::NACC_OUT_DMA_ADDR, s.a_out), ")"));
  c.ofm_host = ob.data + (c.ofm_addr - ob.address);
  c.wr_bytes = ofm_bytes;
  count_work(s, c);
  return c;
}

// DMA of one read into SRAM, pitched rows and pixels packed.
void copy_in(const Read& r, uint8_t* sram) {
  uint8_t* dst = sram + r.sram;
  if (r.cols == 1 || r.pix_pitch == uint64_t(r.bytes)) {
    const int64_t row_bytes = int64_t(r.cols) * r.bytes;
    for (int y = 0; y < r.rows; ++y) {
      std::memcpy(dst + y * row_bytes, r.host + uint64_t(y) * r.row_pitch, size_t(row_bytes));
    }
    return;
  }
  for (int y = 0; y < r.rows; ++y) {
    const uint8_t* row = r.host + uint64_t(y) * r.row_pitch;
    for (int x = 0; x < r.cols; ++x) {
      std::memcpy(dst, row + uint64_t(x) * r.pix_pitch, size_t(r.bytes));
      dst += r.bytes;
    }
  }
}

// The im2col DMA: for each output pixel of core c's tile (row-major), its
// ky x kx window of in_c-byte pixels, in (ky, kx, channel) order, into the
// IFM area; window positions outside the input get the input zero point.
void gather_im2col(const Setup& s, const CoreWork& c, uint8_t* sram) {
  uint8_t* dst = sram + c.ifm.lo;
  const uint8_t pad = uint8_t(int8_t(s.in_zp));
  for (int oy = 0; oy < c.h; ++oy) {
    for (int ox = 0; ox < s.w; ++ox) {
      for (int ky = 0; ky < s.ky; ++ky) {
        const int64_t iy = int64_t(c.iy0) + int64_t(oy) * s.sy + ky;
        for (int kx = 0; kx < s.kx; ++kx) {
          const int64_t ix = int64_t(s.ix0) + int64_t(ox) * s.sx + kx;
          if (iy < c.vy0 || iy >= c.vy0 + c.vh || ix < c.vx0 || ix >= c.vx0 + c.vw) {
            std::memset(dst, pad, size_t(s.in_c));
          } else {
            std::memcpy(dst, c.fm_read.host + uint64_t(iy - c.vy0) * s.in_row +
                                 uint64_t(ix - c.vx0) * s.in_pix,
                        size_t(s.in_c));
          }
          dst += s.in_c;
        }
      }
    }
  }
}

// Loads the weight block: u32 little-endian stream length L, then the
// compressed stream (docs/weight_compression.md), decoded into SRAM.
void load_weights(const Setup& s, const CoreWork& c, uint8_t* sram) {
  const uint8_t* p = c.wblock.host;
  const uint32_t len = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  require(int64_t(len) <= s.k_block - kWeightLengthBytes, "weight block", core_text(s, c.core),
          " at ", hex(c.wblock.addr), " says its stream is ", len,
          " bytes; the block (K_TRANS_LEN x 16 = ", s.k_block, " bytes) holds at most ",
          s.k_block - kWeightLengthBytes, " after the 4-byte length");
  try {
    weight_codec::decode(p + kWeightLengthBytes, len, reinterpret_cast<int8_t*>(sram + c.w_lo),
                         size_t(c.weight_count));
  } catch (const Error& e) {
    throw DeviceFault(str_cat("weight block", core_text(s, c.core), " at ", hex(c.wblock.addr),
                              " (", c.weight_count, " weights expected): ", e.what()));
  }
}

// Runs the unit on core c's SRAM (docs/device_model.md §4).
void compute(const Setup& s, const CoreWork& c, uint8_t* sram) {
  const int8_t* in = reinterpret_cast<const int8_t*>(sram + c.ifm.lo);
  int8_t* out = reinterpret_cast<int8_t*>(sram + c.ofm.lo);
  const int8_t* wts = reinterpret_cast<const int8_t*>(sram + c.w_lo);
  auto i32 = [&](int64_t lo) {
    return lo >= 0 ? reinterpret_cast<const int32_t*>(sram + lo) : nullptr;
  };
  const int32_t* bias = i32(c.bias_lo);
  const int32_t* mul = i32(c.mul_lo);
  const int32_t* shift = i32(c.shift_lo);
  const int8_t* lut = c.lut_lo >= 0 ? reinterpret_cast<const int8_t*>(sram + c.lut_lo) : nullptr;
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
    os.float_scale = reinterpret_cast<const float*>(sram + c.scale_lo);
  } else if (s.real_scale) {
    os.kind = OutputStageKind::kRealScale;
    os.real_scale = reinterpret_cast<const double*>(sram + c.scale_lo);
  }
  os.output_zero_point = s.out_zp;
  os.act_min = s.act_min;
  os.act_max = s.act_max;
  const Shape4 in_shape{1, c.vh, c.vw, s.in_c};
  const Shape4 out_shape{1, c.h, s.w, c.noc};
  switch (s.fam) {
    case Family::kConv:
      conv2d_s8(win, s.in_zp, os, in_shape, in, Shape4{c.noc, s.ky, s.kx, s.in_c}, wts, bias,
                out_shape, out);
      break;
    case Family::kDepthwise:
      depthwise_conv2d_s8(win, s.depth_mult, s.in_zp, os, in_shape, in,
                          Shape4{1, s.ky, s.kx, s.out_c}, wts, bias, out_shape, out);
      break;
    case Family::kFullyConnected:
      fully_connected_s8(s.in_zp, os, c.h, s.in_c, c.noc, in, wts, bias, out);
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
      if (s.pool_mode == value_of(PoolMode::AVERAGE)) {
        avg_pool_s8(pp, in_shape, in, out_shape, out);
      } else {
        max_pool_s8(pp, in_shape, in, out_shape, out);
      }
      break;
    }
    case Family::kElementwise: {
      ElementwiseParams ew = s.ew;
      ew.output_multiplier = mul[0];
      ew.output_shift = shift[0];
      validate_elementwise_params(ew);
      const int8_t* in2 = reinterpret_cast<const int8_t*>(sram + c.temp.lo);
      const Shape4 in2_shape = s.k_pitch == 0 ? Shape4{1, 1, 1, s.in_c} : in_shape;
      elementwise_s8(ew, in_shape, in, in2_shape, in2, out_shape, out);
      break;
    }
    case Family::kActivation: {
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
    const int64_t nbytes = c.ofm.hi - c.ofm.lo;
    for (int64_t k = 0; k < nbytes; ++k) out[k] = lut[uint8_t(out[k])];
  }
}

// DMA of the OFM tile out of SRAM, pitched.
void copy_out(const Setup& s, const CoreWork& c, const uint8_t* sram) {
  const uint8_t* src = sram + c.ofm.lo;
  const int64_t px = c.noc;
  for (int y = 0; y < c.h; ++y) {
    uint8_t* row = c.ofm_host + uint64_t(y) * s.out_row;
    if (s.out_pix == uint64_t(px)) {
      std::memcpy(row, src, size_t(px * s.w));
      src += px * s.w;
      continue;
    }
    for (int x = 0; x < s.w; ++x) {
      std::memcpy(row + uint64_t(x) * s.out_pix, src, size_t(px));
      src += px;
    }
  }
}

void clobber(Resident& r, const SramRange& written) {
  if (r.valid && r.range.overlaps(written)) r.valid = false;
}

}  // namespace

void execute_kernel(ExecEnv& env, Opcode op, uint32_t word) {
  HandlerContext& ctx = env.ctx;
  const Setup s = read_setup(ctx.regs, op, env.hw);
  const int n = s.ncores;
  for (int i = 0; i < n; ++i) {
    auto& sram = ctx.cores[size_t(i)].sram;
    if (sram.empty()) sram.assign(size_t(env.hw.sram_bytes), 0);
  }
  std::vector<CoreWork> work;
  work.reserve(size_t(n));
  for (int i = 0; i < n; ++i) work.push_back(plan_core(env, s, i));

  // Race check against the DMA queue (docs/command_stream.md §3.2).
  PendingOp pend;
  pend.word = word;
  pend.op = op;
  for (const CoreWork& c : work) {
    if (c.load_fm) pend.reads.push_back(c.fm_read.interval());
    if (c.load_k) {
      if (c.wblock.host) pend.reads.push_back(c.wblock.interval());
      if (c.b_read.host) pend.reads.push_back(c.b_read.interval());
      for (const Read& r : c.small_reads) pend.reads.push_back(r.interval());
    }
    if (c.load_temp) pend.reads.push_back(c.temp_read.interval());
    pend.writes.push_back(Interval{c.ofm_addr, c.ofm_addr + c.ofm_span});
  }
  check_race(ctx.dmas, pend, "DMA");

  // From here on SRAM changes: forget what the written ranges held.
  for (const CoreWork& c : work) {
    CoreState& cs = ctx.cores[size_t(c.core)];
    for (Resident* r : {&cs.fm, &cs.kernel}) {
      if (c.load_fm) clobber(*r, c.ifm);
      if (c.load_k) clobber(*r, c.kern);
      if (c.load_temp) clobber(*r, c.temp);
      clobber(*r, c.ofm);
    }
    if (c.load_fm) cs.fm.valid = false;
    if (c.load_k) cs.kernel.valid = false;
  }

  // Loads. A broadcast operand (K area in mode 2, IFM in mode 1) is fetched by
  // core 0 and delivered to every core.
  uint8_t* sram0 = ctx.cores[0].sram.data();
  for (const CoreWork& c : work) {
    uint8_t* sram = ctx.cores[size_t(c.core)].sram.data();
    if (c.load_fm) {
      if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL) && c.core > 0) {
        std::memcpy(sram + c.ifm.lo, sram0 + work[0].ifm.lo, size_t(c.ifm.hi - c.ifm.lo));
      } else if (s.im2col) {
        gather_im2col(s, c, sram);
      } else {
        copy_in(c.fm_read, sram);
      }
    }
    if (c.load_k) {
      if (s.mode == value_of(BroadcastMode::SPLIT_HEIGHT) && c.core > 0) {
        std::memcpy(sram + c.kern.lo, sram0 + work[0].kern.lo, size_t(c.kern.hi - c.kern.lo));
      } else {
        if (c.wblock.host) load_weights(s, c, sram);
        if (c.b_read.host) copy_in(c.b_read, sram);
        for (const Read& r : c.small_reads) copy_in(r, sram);
      }
    }
    if (c.load_temp) copy_in(c.temp_read, sram);
  }

  // Compute, on host threads when the command is worth it.
  int64_t work_macs = 0;
  for (const CoreWork& c : work) work_macs += std::max(c.macs, c.mac_cycles);
  auto body = [&](int i) {
    try {
      compute(s, work[size_t(i)], ctx.cores[size_t(i)].sram.data());
    } catch (...) {
      work[size_t(i)].error = std::current_exception();
    }
  };
  if (n > 1 && env.pool.threads() > 1 && work_macs >= env.parallel_min_macs) {
    env.pool.parallel_for(n, body);
  } else {
    for (int i = 0; i < n; ++i) body(i);
  }
  for (const CoreWork& c : work) {
    if (!c.error) continue;
    try {
      std::rethrow_exception(c.error);
    } catch (const DeviceFault&) {
      throw;
    } catch (const Error& e) {
      throw DeviceFault(str_cat(opcode_name(op), " unit", core_text(s, c.core), ": ", e.what()));
    }
  }

  // Write-out, residency, counters, timeline.
  for (const CoreWork& c : work) copy_out(s, c, ctx.cores[size_t(c.core)].sram.data());
  int64_t ext_rd = work[0].rd_broadcast, ext_wr = 0;
  for (const CoreWork& c : work) {
    ext_rd += c.rd_unicast;
    ext_wr += c.wr_bytes;
  }
  CommandRecord rec;
  rec.word = word;
  rec.op = op;
  rec.issue = ctx.cp_time;
  rec.start = INT64_MAX;
  rec.ext_read_bytes = ext_rd;
  rec.ext_write_bytes = ext_wr;
  for (const CoreWork& c : work) {
    CoreState& cs = ctx.cores[size_t(c.core)];
    if (c.load_fm) cs.fm = Resident{true, c.ifm, c.fm_key};
    if (c.load_k) cs.kernel = Resident{true, c.kern, c.k_key};

    const int64_t horizon = std::min(cs.rd_free, cs.mac_free);
    cs.busy.erase(std::remove_if(cs.busy.begin(), cs.busy.end(),
                                 [&](const Busy& b) { return b.until <= horizon; }),
                  cs.busy.end());
    auto busy_until = [&](const SramRange& r) {
      int64_t t = 0;
      for (const Busy& b : cs.busy) {
        if (b.range.overlaps(r)) t = std::max(t, b.until);
      }
      return t;
    };
    CoreSpan sp;
    sp.core = c.core;
    sp.read_bytes = c.rd_unicast + c.rd_broadcast;
    sp.write_bytes = c.wr_bytes;
    sp.mac_cycles = c.mac_cycles;
    sp.act_cycles = c.act_cycles;
    sp.macs = c.macs;
    if (sp.read_bytes > 0) {
      int64_t ready = std::max(ctx.cp_time, cs.rd_free);
      if (c.load_fm) ready = std::max(ready, busy_until(c.ifm));
      if (c.load_k) ready = std::max(ready, busy_until(c.kern));
      if (c.load_temp) ready = std::max(ready, busy_until(c.temp));
      sp.read_start = ready;
      sp.read_end = ready + cost::transfer_cycles(sp.read_bytes, ext_rd, env.hw);
      cs.rd_free = sp.read_end;
    } else {
      sp.read_start = sp.read_end = ctx.cp_time;
    }
    const int64_t compute_ready = std::max({ctx.cp_time, cs.mac_free, busy_until(c.ofm)});
    sp.compute_start = std::max(sp.read_end, compute_ready);
    sp.stall_cycles = std::max<int64_t>(0, sp.read_end - compute_ready);
    sp.compute_end = sp.compute_start + std::max(c.mac_cycles, c.act_cycles);
    sp.write_start = std::max(sp.compute_end, cs.wr_free);
    sp.write_end = sp.write_start + cost::transfer_cycles(sp.write_bytes, ext_wr, env.hw);
    cs.mac_free = sp.compute_end;
    cs.wr_free = sp.write_end;
    cs.busy.push_back(Busy{c.ifm, sp.compute_end});
    if (!c.kern.empty()) cs.busy.push_back(Busy{c.kern, sp.compute_end});
    if (!c.temp.empty()) cs.busy.push_back(Busy{c.temp, sp.compute_end});
    cs.busy.push_back(Busy{c.ofm, sp.write_end});

    CoreCounters& cc = ctx.run.cores[size_t(c.core)];
    cc.dma_read_bytes += sp.read_bytes;
    cc.dma_write_bytes += sp.write_bytes;
    cc.mac_cycles += sp.mac_cycles;
    cc.act_cycles += sp.act_cycles;
    cc.stall_cycles += sp.stall_cycles;
    cc.busy_cycles += sp.compute_end - sp.compute_start;
    cc.macs += sp.macs;
    cc.kernels += 1;
    int64_t high = c.ofm.hi;
    if (c.load_fm) high = std::max(high, c.ifm.hi);
    if (c.load_k) high = std::max(high, c.kern.hi);
    if (c.load_temp) high = std::max(high, c.temp.hi);
    sp.sram_high = high;
    cc.sram_high_water = std::max(cc.sram_high_water, high);
    ctx.run.sram_high_water = std::max(ctx.run.sram_high_water, high);
    ctx.run.mac_cycles += sp.mac_cycles;
    ctx.run.act_cycles += sp.act_cycles;
    ctx.run.stall_cycles += sp.stall_cycles;
    rec.macs += sp.macs;
    rec.start = std::min(rec.start, sp.read_start);
    rec.end = std::max(rec.end, sp.write_end);
    rec.cores.push_back(sp);
  }
  ctx.run.macs += rec.macs;
  ctx.run.dma_read_bytes += ext_rd;
  ctx.run.dma_write_bytes += ext_wr;
  ctx.run.kernels += 1;
  ctx.run.cycles = std::max(ctx.run.cycles, rec.end);
  pend.end = rec.end;
  ctx.kernels.push_back(std::move(pend));
  ctx.run.timeline.push_back(std::move(rec));
}

}  // namespace nacc::device_detail
