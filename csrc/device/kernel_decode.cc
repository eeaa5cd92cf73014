// Kernel commands, step 1: the compute bank decoded and validated into a
// Setup (docs/device_model.md §7), independent of cores and data.
#include <algorithm>

#include "arch/limits.h"
#include "device/kernel.h"

namespace nacc::device_detail {

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

namespace {

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

void check_channel_split(const Setup& s, int n);
void check_row_split(const RegisterFile& r, Setup& s, int n);

void read_multicore(const RegisterFile& r, const HwConfig& hw, Setup& s) {
  s.mode = r.field(fields::NACC_BROADCAST_CTRL::BROADCAST_MODE);
  s.ncores = int(r.field(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM)) + 1;
  const int n = s.ncores;
  require(n == 1 || n == 2 || n == 4 || n == 8 || n == 16 || n == 32,
          path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
          ": cores - 1 must be 0, 1, 3, 7, 15 or 31 (NACC_SPEC §4)");
  require(n <= hw.cores, path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
          " asks for ", n, " cores; the device has ", hw.cores);
  const uint32_t g_field = r.field(fields::NACC_BROADCAST_CTRL::SPLIT_2D_GROUPS);
  const uint32_t r_field = r.field(fields::NACC_BROADCAST_CTRL::SPLIT_2D_ROWS);
  if (s.mode == value_of(BroadcastMode::SPLIT_2D)) {
    // Mode 3 (project extension, docs/device_model.md §5): G channel groups
    // (mode 1's per-core channel offset) x R row pieces (mode 2's AVG / OV
    // rows) on G * R <= BROADCAST_NUM + 1 cores, core g * R + r.
    require(s.fam == Family::kDepthwise || s.fam == Family::kFullyConnected,
            "BROADCAST_MODE SPLIT_2D (mode 3, project extension) is for depthwise convolution "
            "and fully connected only, not ", opcode_name(s.op), " (docs/device_model.md §5)");
    s.groups = int(g_field) + 1;
    s.row_pieces = int(r_field) + 1;
    require(s.groups * s.row_pieces <= n, "mode 3: ",
            path(fields::NACC_BROADCAST_CTRL::SPLIT_2D_GROUPS), " + 1 = ", s.groups, " groups x ",
            path(fields::NACC_BROADCAST_CTRL::SPLIT_2D_ROWS), " + 1 = ", s.row_pieces,
            " row pieces need more than the BROADCAST_NUM + 1 = ", n, " cores");
    s.ncores = s.groups * s.row_pieces;
  } else {
    require(g_field == 0 && r_field == 0, path(fields::NACC_BROADCAST_CTRL::SPLIT_2D_GROUPS),
            " = ", g_field, ", ", path(fields::NACC_BROADCAST_CTRL::SPLIT_2D_ROWS), " = ", r_field,
            ": must be 0 outside BROADCAST_MODE SPLIT_2D (mode 3)");
  }
  if (s.mode == value_of(BroadcastMode::NONE)) {
    require(n == 1, path(fields::NACC_BROADCAST_CTRL::BROADCAST_NUM), " = ", n - 1,
            " with BROADCAST_MODE NONE (one core)");
    return;
  }
  if (s.mode == value_of(BroadcastMode::SPLIT_KERNEL)) {
    // Matmul's kernel operand is B (columns split; project decision,
    // docs/device_model.md §5).
    // Depthwise: its channels split, each core reading its own input channels
    // (project decision, docs/device_model.md §5).
    require(s.fam == Family::kConv || s.fam == Family::kFullyConnected ||
                s.fam == Family::kMatmul || s.fam == Family::kDepthwise,
            "BROADCAST_MODE SPLIT_KERNEL (mode 1) is for convolution, depthwise convolution, "
            "fully connected and matmul only, not ", opcode_name(s.op),
            " (NACC_SPEC §4, docs/device_model.md §5)");
    s.oc_per_core = int(r.field(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET));
    check_channel_split(s, n);
    return;
  }
  if (s.mode == value_of(BroadcastMode::SPLIT_2D)) {
    s.oc_per_core = int(r.field(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET));
    check_channel_split(s, s.groups);
    check_row_split(r, s, s.row_pieces);
    return;
  }
  check_row_split(r, s, n);
}

void check_channel_split(const Setup& s, int n) {
  {
    const int64_t last = int64_t(s.out_c) - int64_t(n - 1) * s.oc_per_core;
    require((n == 1 || s.oc_per_core >= 1) && last >= 1, "mode 1: ", n - 1, " cores x ",
            path(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET), " = ", s.oc_per_core,
            " channels leave ", last, " of OUT_FM_CH = ", s.out_c,
            " for the last core (must be >= 1)");
    require(s.fam != Family::kDepthwise || s.oc_per_core % s.depth_mult == 0, "mode 1: ",
            path(fields::NACC_BROADCAST_DMA::EU_BIAS_START_OFFSET), " = ", s.oc_per_core,
            " must be a multiple of the depth multiplier ", s.depth_mult,
            " (each core's output channels come from whole input channels)");
  }
}

void check_row_split(const RegisterFile& r, Setup& s, int n) {
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

}  // namespace

Setup read_setup(const RegisterFile& r, Opcode op, const HwConfig& hw) {
  Setup s;
  s.op = op;
  s.fam = family_of(op);
  s.rgb = r.field(fields::NACC_CTRL::CONV_MODE) == value_of(ConvMode::RGB_CONV);
  require(!s.rgb || s.fam == Family::kConv, "NACC_CTRL.CONV_MODE = RGB_CONV is the q7 RGB ",
          "convolution of NPU_OP_CONV, not ", opcode_name(op));
  s.im2col = r.field(fields::NACC_CTRL::IM2COL_EN) != 0;
  require(!s.im2col || s.fam == Family::kMatmul, "NACC_CTRL.IM2COL_EN = 1 feeds the matrix unit: "
          "only NPU_OP_MATMUL, not ", opcode_name(op), " (docs/device_model.md §4)");
  {
    // NACC_SPEC §9: 00 int8, 10 int8 feature maps with int4 weights (the
    // weight path unpacks them; convolution, depthwise and fully connected).
    const uint32_t form = r.field(fields::NACC_CTRL::DATA_FORM);
    require(form <= value_of(DataForm::INT4), "NACC_CTRL.DATA_FORM = ", form,
            " is not a form (0 INT8, 1 INT16, 2 INT4)");
    s.int4 = form == value_of(DataForm::INT4);
    s.i16 = form == value_of(DataForm::INT16);
    s.elem = s.i16 ? 2 : 1;
    s.mul_s16_s8 = s.fam == Family::kElementwise &&
                   r.field(fields::NACC_ELEMENTWISE::ELEMENTWISE_MODE) ==
                       uint32_t(ElementwiseMode::MUL_S16_S8);
    // MUL_S16_S8: int16 inputs (DATA_FORM = INT16), an int8 output.
    require(!s.mul_s16_s8 || s.i16, "NACC_ELEMENTWISE.ELEMENTWISE_MODE = MUL_S16_S8 multiplies ",
            "int16 inputs: it needs NACC_CTRL.DATA_FORM = INT16, not ", s.int4 ? "INT4" : "INT8");
    s.out_elem = s.mul_s16_s8 ? 1 : s.elem;
    require(!s.i16 || s.fam != Family::kMatmul,
            "NACC_CTRL.DATA_FORM = INT16 (16-bit feature maps) is modelled for NPU_OP_CONV, ",
            "NPU_OP_DEPTHWISE, NPU_OP_FULLY_CONNECTED, NPU_OP_POOL, NPU_OP_ELEMENTWISE and ",
            "NPU_OP_ACTIVATION (Tanh / Sigmoid), not ", opcode_name(op), " (NACC_SPEC §9)");
    require(!s.int4 || has_weights(s.fam), "NACC_CTRL.DATA_FORM = INT4 (int4 weights) is for the ",
            "weight path of NPU_OP_CONV, NPU_OP_DEPTHWISE and NPU_OP_FULLY_CONNECTED, not ",
            opcode_name(op), " (NACC_SPEC §9)");
  }
  const uint32_t act = r.field(fields::NACC_CTRL::ACT_MODE);
  require(act <= uint32_t(ActMode::LUT), "NACC_CTRL.ACT_MODE = ", act,
          " is not a mode (0 RELU, 1 RELU6, 2 TANH, 3 SIGMOID, 4 NONE, 5 LUT)");
  s.act = ActMode(act);
  s.quant_en = r.field(fields::NACC_CTRL::QUANT_EN) != 0;
  const bool tanh_sigmoid = s.act == ActMode::TANH || s.act == ActMode::SIGMOID;
  // 16-bit form: ACT_MODE Tanh / Sigmoid select the table-with-interpolation
  // modes (TFLite's int16 LOGISTIC / TANH), their input multiplier and shift
  // one entry of the QUANT_MUL / QUANT_SHIFT arrays (NACC_SPEC §9).
  s.table16 = tanh_sigmoid && s.i16;
  s.q7_act = tanh_sigmoid && !s.i16;
  if (s.i16 && s.fam == Family::kActivation) {
    require(s.table16, "NACC_CTRL.DATA_FORM = INT16 on NPU_OP_ACTIVATION: only ACT_MODE TANH / ",
            "SIGMOID (the 16-bit table modes) are modelled, not ", act_name(act),
            " (the 256-entry LUT is for 8-bit activations)");
    require(s.quant_en, "NACC_CTRL.ACT_MODE = ", act_name(act), " with DATA_FORM = INT16 reads ",
            "its input multiplier and shift from QUANT_MUL / QUANT_SHIFT (QUANT_EN must be 1)");
  }
  require(!s.table16 || s.fam == Family::kActivation, "NACC_CTRL.ACT_MODE = ", act_name(act),
          " with DATA_FORM = INT16: the 16-bit Tanh / Sigmoid are functions of NPU_OP_ACTIVATION, "
          "not ", opcode_name(op));
  if (s.q7_act) {
    // The q7 Tanh / Sigmoid (CMSIS-NN arm_nn_activations_direct_q7): a
    // function of the activation unit on q7 data, no zero points, no rescale.
    require(s.fam == Family::kActivation, "NACC_CTRL.ACT_MODE = ", act_name(act),
            ": the q7 Tanh/Sigmoid (ACT_INT_W) are functions of NPU_OP_ACTIVATION, not ",
            opcode_name(op), " (int8 models use ACT_MODE = LUT, NACC_SPEC §1)");
    require(!s.quant_en, "NACC_CTRL.ACT_MODE = ", act_name(act),
            ": the q7 Tanh/Sigmoid read no multiplier (QUANT_EN must be 0); the input's integer ",
            "width is NACC_ACT_PARA.ACT_INT_W");
    s.act_int_w = int(r.field(fields::NACC_ACT_PARA::ACT_INT_W));
  }
  if (s.rgb) {
    // arm_convolve_HWC_q7_RGB: q7 data (no zero points), a q7 bias shifted
    // left by BIAS_SHIFT, the sum shifted right by OUT_SHIFT with rounding.
    require(!s.quant_en, "NACC_CTRL.CONV_MODE = RGB_CONV: the q7 convolution's output stage is ",
            "NACC_FULL_CONV_PARA.BIAS_SHIFT / OUT_SHIFT; QUANT_EN must be 0");
    require(r.field(fields::NACC_CTRL::BIAS_EN) != 0,
            "NACC_CTRL.CONV_MODE = RGB_CONV needs BIAS_EN = 1 (the q7 convolution always adds ",
            "its bias)");
    s.bias_shift = int(r.field(fields::NACC_FULL_CONV_PARA::BIAS_SHIFT));
    s.out_shift = int(r.field(fields::NACC_FULL_CONV_PARA::OUT_SHIFT));
    require(s.bias_shift <= limits::kMaxQ7Shift && s.out_shift <= limits::kMaxQ7Shift,
            "NACC_FULL_CONV_PARA.BIAS_SHIFT = ", s.bias_shift, ", OUT_SHIFT = ", s.out_shift,
            ": the q7 RGB convolution's shifts must be in [0, ", limits::kMaxQ7Shift,
            "] (shifts of its 32-bit accumulator)");
  }
  s.bias_en = r.field(fields::NACC_CTRL::BIAS_EN) != 0;
  s.fm_upd = r.field(fields::NACC_CTRL::FM_UPD) != 0;
  s.k_upd = r.field(fields::NACC_CTRL::K_UPD) != 0;
  s.pool_mode = r.field(fields::NACC_CTRL::POOL_MODE);
  const char* name = opcode_name(op);
  const bool mac_family = has_weights(s.fam) || s.fam == Family::kMatmul;
  if ((mac_family && !s.rgb) || s.fam == Family::kElementwise) {
    require(s.quant_en, name, " needs NACC_CTRL.QUANT_EN = 1 (its output is requantized with the ",
            "QUANT_MUL / QUANT_SHIFT arrays)");
  }
  s.pool_fp32 = r.field(fields::NACC_ACT_PARA::POOL_FP32) != 0;
  if (s.fam == Family::kPool) {
    require(s.quant_en == s.pool_fp32, "NPU_OP_POOL: NACC_CTRL.QUANT_EN = ", int(s.quant_en),
            " with ", path(fields::NACC_ACT_PARA::POOL_FP32), " = ", int(s.pool_fp32),
            " (the pooling unit keeps the input quantization, except in the float32 average ",
            "mode, which reads its two scales from QUANT_MUL_DMA_ADDR)");
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
  s.mac_fp32 = r.field(fields::NACC_ACT_PARA::MAC_FP32) != 0;
  if (s.mac_fp32) {
    // ONNX Runtime's unfused float32 Conv (docs/device_model.md §4): the
    // integer convolution's int8 maps and weights, dequantized in the unit.
    require((s.fam == Family::kConv || s.fam == Family::kDepthwise ||
             s.fam == Family::kFullyConnected) && !s.rgb && !s.i16 && !s.int4,
            path(fields::NACC_ACT_PARA::MAC_FP32), " = 1 is only for NPU_OP_CONV with CONV_MODE ",
            "CONVOLUTION, NPU_OP_DW_CONV and NPU_OP_FULLY_CONNECTED with DATA_FORM INT8, not ",
            name, s.rgb ? " with RGB_CONV" : "", s.i16 ? " with DATA_FORM INT16" : "",
            s.int4 ? " with DATA_FORM INT4" : "", " (docs/device_model.md §4)");
    const uint32_t order = r.field(fields::NACC_ACT_PARA::MAC_FP32_ORDER);
    const bool order_ok = s.fam == Family::kConv ? order == 0
                          : s.fam == Family::kDepthwise ? order <= 1
                                                        : order == 1 || order == 2;
    require(order_ok, path(fields::NACC_ACT_PARA::MAC_FP32_ORDER), " = ", order, " is not for ",
            name, " (NPU_OP_CONV: 0 FMA_BLOCKS; NPU_OP_DW_CONV: 0 or 1 GROUPS4; ",
            "NPU_OP_FULLY_CONNECTED: 1 GROUPS4 or 2 LANES8)");
    s.mac_fp32_order = Fp32SumOrder(order);
    require(!s.fp32_scale && !s.real_scale, path(fields::NACC_ACT_PARA::MAC_FP32),
            " = 1 has its own float32 parameters: QUANT_FP32_SCALE and QUANT_REAL_SCALE must be 0");
    require(!s.bias_en, path(fields::NACC_ACT_PARA::MAC_FP32), " = 1 reads the float32 bias ",
            "from its QUANT_MUL_DMA_ADDR entries: NACC_CTRL.BIAS_EN must be 0");
    s.kblock_log2 = int(r.field(fields::NACC_FP32_KBLOCK::KBLOCK_LOG2));
    s.kblock_tail_log2 = int(r.field(fields::NACC_FP32_KBLOCK::KBLOCK_TAIL_LOG2));
    s.kblock_split = int64_t(r.field(fields::NACC_FP32_KBLOCK::KBLOCK_SPLIT));
  } else {
    require(r.field(fields::NACC_ACT_PARA::MAC_FP32_ORDER) == 0,
            path(fields::NACC_ACT_PARA::MAC_FP32_ORDER), " must be 0 without ",
            path(fields::NACC_ACT_PARA::MAC_FP32));
    require(r.get(Reg::NACC_FP32_KBLOCK) == 0, "NACC_FP32_KBLOCK = ",
            hex(r.get(Reg::NACC_FP32_KBLOCK)), " must be 0 without ",
            path(fields::NACC_ACT_PARA::MAC_FP32), " (its K blocks mean nothing to ", name, ")");
  }
  {
    const uint32_t ew = r.field(fields::NACC_ACT_PARA::ELEMENT_FP32);
    require(ew <= 2, path(fields::NACC_ACT_PARA::ELEMENT_FP32), " = ", ew,
            " is not a mode (0 off, 1 QLINEAR, 2 DEQUANTIZE)");
    s.ew_fp32 = ElementwiseFloat(ew);
    s.u8_domain = r.field(fields::NACC_ACT_PARA::U8_DOMAIN) != 0;
    require(ew == 0 || s.fam == Family::kElementwise, path(fields::NACC_ACT_PARA::ELEMENT_FP32),
            " = ", ew, " is only for NPU_OP_ELEMENTWISE, not ", name);
    require(!s.pool_fp32 || (s.fam == Family::kPool && s.pool_mode == value_of(PoolMode::AVERAGE)),
            path(fields::NACC_ACT_PARA::POOL_FP32), " = 1 is only for NPU_OP_POOL with POOL_MODE ",
            "AVERAGE, not ", name);
    const uint32_t pm = r.field(fields::NACC_ACT_PARA::POOL_FP32_MODE);
    require(pm <= 2, path(fields::NACC_ACT_PARA::POOL_FP32_MODE), " = ", pm,
            " is not a mode (0 QLINEAR, 1 QUANTIZE_ROWS, 2 QUANTIZE_COLUMNS)");
    require(pm == 0 || s.pool_fp32, path(fields::NACC_ACT_PARA::POOL_FP32_MODE), " = ", pm,
            " needs POOL_FP32 = 1");
    s.pool_fp32_mode = PoolFloat(pm);
    require(!s.u8_domain || ew != 0 || s.pool_fp32, path(fields::NACC_ACT_PARA::U8_DOMAIN),
            " = 1 needs ELEMENT_FP32 or POOL_FP32 (the fixed-point units compute on int8)");
    if (ew != 0 || s.pool_fp32) s.fp32_scale = true;  // float32 parameters at QUANT_MUL_DMA_ADDR
  }
  s.needs_bias = s.bias_en;
  s.needs_quant = s.quant_en;
  s.needs_lut = s.act == ActMode::LUT;
  s.quant_entries =
      (s.fam == Family::kElementwise || s.fam == Family::kActivation) ? 1 : 0;
  if (s.ew_fp32 != ElementwiseFloat::kOff) s.quant_entries = 3;  // the 3 float32 of the mode
  if (s.pool_fp32) s.quant_entries = 2;                            // input scale, output scale

  read_geometry(r, s);
  read_tile(r, s);
  read_multicore(r, hw, s);
  if (s.mac_fp32 && s.fam == Family::kFullyConnected) {
    require(s.mac_fp32_order != Fp32SumOrder::kLanes8 || s.kblock_tail_log2 <= 3,
            path(fields::NACC_FP32_KBLOCK::KBLOCK_TAIL_LOG2), " = ", s.kblock_tail_log2,
            " is not a LANES8 tail length (0..3)");
  } else if (s.mac_fp32) {
    const int64_t pixels = int64_t(s.out_w) * s.out_h;
    require(s.kblock_split <= pixels, path(fields::NACC_FP32_KBLOCK::KBLOCK_SPLIT), " = ",
            s.kblock_split, " is past the last output pixel (OUT_FM_WIDTH x OUT_FM_HEIGHT = ",
            pixels, ")");
  }

  s.in_zp = -r.field_signed(fields::NACC_FM_OFFSET::IN_FM_OFFSET);
  s.out_zp = r.field_signed(fields::NACC_FM_OFFSET::OUT_FM_OFFSET);
  if (s.rgb || s.q7_act) {
    require(s.in_zp == 0 && s.out_zp == 0, s.rgb ? "NACC_CTRL.CONV_MODE = RGB_CONV" : "NACC_CTRL.ACT_MODE = ",
            s.rgb ? "" : act_name(uint32_t(s.act)), ": q7 data has no zero points; NACC_FM_OFFSET ",
            "must be 0 (IN_FM_OFFSET = ", -s.in_zp, ", OUT_FM_OFFSET = ", s.out_zp, ")");
    require(!s.int4, "NACC_CTRL.DATA_FORM = INT4 with a q7 mode: the q7 functions take int8 weights");
  }
  if (s.rgb) {
    require(s.in_c == limits::kRgbChannels, "NACC_CTRL.CONV_MODE = RGB_CONV: IN_FM_CH = ", s.in_c,
            "; the q7 RGB convolution takes ", limits::kRgbChannels,
            " input channels (CMSIS-NN arm_convolve_HWC_q7_RGB)");
  }
  s.act_min = r.field_signed(fields::NACC_ACT_MIN::ACT_MIN);
  s.act_max = r.field_signed(fields::NACC_ACT_MAX::ACT_MAX);
  if (s.mul_s16_s8) {
    // The int8 output: an int8 clamp and OUT_FM_OFFSET its zero point; the
    // input offsets are IN_ELEMENT_OFFSET1/2, IN_FM_OFFSET is unused (0).
    require(s.act_min >= -128 && s.act_max <= 127 && s.act_min <= s.act_max,
            "activation clamp [", s.act_min, ", ", s.act_max, "]: ELEMENTWISE_MODE = MUL_S16_S8 ",
            "writes int8; NACC_ACT_MIN / NACC_ACT_MAX need -128 <= min <= max <= 127");
    require(s.in_zp == 0, "ELEMENTWISE_MODE = MUL_S16_S8: the input offsets are ",
            "NACC_ELEMENTWISE.IN_ELEMENT_OFFSET1/2; NACC_FM_OFFSET.IN_FM_OFFSET must be 0, not ",
            -s.in_zp);
  } else if (s.i16) {
    require(s.act_min >= -32768 && s.act_max <= 32767 && s.act_min <= s.act_max,
            "activation clamp [", s.act_min, ", ", s.act_max, "]: with DATA_FORM = INT16 ",
            "NACC_ACT_MIN / NACC_ACT_MAX need -32768 <= min <= max <= 32767");
    require(s.in_zp == 0 && s.out_zp == 0, "NACC_CTRL.DATA_FORM = INT16: int16 feature maps ",
            "have zero point 0 (TFLite's 16x8 quantization); NACC_FM_OFFSET must be 0 ",
            "(IN_FM_OFFSET = ", -s.in_zp, ", OUT_FM_OFFSET = ", s.out_zp, ")");
  }
  if (s.i16) {
    require(s.act != ActMode::LUT && !s.rgb && !s.im2col && !s.fp32_scale,
            "NACC_CTRL.DATA_FORM = INT16: no LUT, RGB_CONV, IM2COL_EN or float32 stage (the ",
            "256-entry LUT is for 8-bit activations)");
    s.mul32 = r.field(fields::NACC_ACT_PARA::QUANT_MUL32) != 0;
    require(!s.mul32 || s.fam == Family::kDepthwise, path(fields::NACC_ACT_PARA::QUANT_MUL32),
            " = 1 is only for NPU_OP_DW_CONV, not ", name);
    if (s.fam == Family::kConv || s.fam == Family::kDepthwise) {
      require(s.quant_en && !s.real_scale,
              "NACC_CTRL.DATA_FORM = INT16: the 16-bit convolution's output stage is the ",
              "QUANT_MUL / QUANT_SHIFT arrays (QUANT_EN = 1, no QUANT_REAL_SCALE)");
    } else if (s.fam == Family::kFullyConnected) {
      require(s.quant_en && s.real_scale,
              "NACC_CTRL.DATA_FORM = INT16: the 16-bit fully connected unit's output stage is ",
              "the real scale (QUANT_EN = 1, NACC_ACT_PARA.QUANT_REAL_SCALE = 1)");
    }

  } else {
    require(r.field(fields::NACC_ACT_PARA::QUANT_MUL32) == 0,
            path(fields::NACC_ACT_PARA::QUANT_MUL32), " = 1 needs DATA_FORM = INT16 (the 8-bit ",
            "units' fixed-point stage is always the 32-bit one)");
    require(s.act_min >= -128 && s.act_max <= 127 && s.act_min <= s.act_max, "activation clamp [",
            s.act_min, ", ", s.act_max,
            "]: NACC_ACT_MIN / NACC_ACT_MAX need -128 <= min <= max <= 127");
  }
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
  const uint64_t in_px = uint64_t(s.in_c) * uint64_t(s.elem);   // bytes of one IFM pixel
  const uint64_t out_px = uint64_t(s.out_c) * uint64_t(s.out_elem);  // bytes of one OFM pixel
  if (s.in_w > 1) {
    require(s.in_pix >= in_px, "IFM pixel pitch ",
            path(fields::NACC_DMA_PARA2::FM_TRANS_OFFSET), " = ", s.in_pix,
            " is less than IN_FM_CH = ", s.in_c, s.i16 ? " x 2 bytes" : "");
  }
  if (s.in_h > 1) {
    const uint64_t need = uint64_t(s.in_w - 1) * s.in_pix + in_px;
    require(s.in_row >= need, "IFM row pitch ", path(fields::NACC_DMA_OFFSET1::IN_DMA_ROW_OFFSET),
            " = ", s.in_row, " is less than one row (", need, " bytes)");
  }
  if (s.out_w > 1) {
    require(s.out_pix >= out_px, "OFM pixel pitch ",
            path(fields::NACC_DMA_OUT_TRANS_LEN::DMA_OUT_TRANS_LEN), " = ", s.out_pix,
            " is less than OUT_FM_CH = ", s.out_c, s.out_elem == 2 ? " x 2 bytes" : "");
  }
  if (s.out_h > 1) {
    const uint64_t need = uint64_t(s.out_w - 1) * s.out_pix + out_px;
    require(s.out_row >= need, "OFM row pitch ", path(fields::NACC_DMA_OFFSET2::OUT_DMA_OFFSET),
            " = ", s.out_row, " is less than one row (", need, " bytes)");
  }
  if (s.fam == Family::kElementwise && s.k_pitch != 0) {
    require(s.k_pitch >= uint64_t(s.in_c) * uint64_t(s.elem), "element-wise second operand pixel pitch ",
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
                mode == uint32_t(ElementwiseMode::MUL) ||
                mode == uint32_t(ElementwiseMode::MUL_S16_S8),
            "NACC_ELEMENTWISE.ELEMENTWISE_MODE = ", mode,
            " is not a mode (1 SUB, 2 ADD, 4 MUL_S16_S8, 8 MUL)");
    s.ew.mode = ElementwiseMode(mode);
    // ELEMENT_INPUT_QUANT_EN: ADD and SUB rescale both inputs with
    // NACC_ELEMENT_QUANT1/2; MUL and MUL_S16_S8 multiply the offset inputs unscaled.
    const bool input_quant = r.field(fields::NACC_CTRL::ELEMENT_INPUT_QUANT_EN) != 0;
    const bool multiplies = s.ew.mode == ElementwiseMode::MUL || s.mul_s16_s8;
    require(input_quant == !multiplies,
            "NACC_CTRL.ELEMENT_INPUT_QUANT_EN = ", int(input_quant), " with ELEMENTWISE_MODE ",
            elementwise_mode_name(s.ew.mode), ": ADD and SUB quantize their inputs (1), MUL and ",
            "MUL_S16_S8 do not (0); the other combinations are not modelled");
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
    if (s.mul_s16_s8) {
      // The registers the mode does not read must be 0 (the output multiplier
      // and shift are QUANT_MUL / QUANT_SHIFT entry 0, checked when read).
      require(s.ew.left_shift == 0 && s.ew.input1_multiplier == 0 && s.ew.input1_shift == 0 &&
                  s.ew.input2_multiplier == 0 && s.ew.input2_shift == 0,
              "ELEMENTWISE_MODE = MUL_S16_S8 multiplies the offset inputs unscaled: ",
              "NACC_ELEMENTWISE.LEFT_SHIFT (", s.ew.left_shift, ") and NACC_ELEMENT_QUANT1/2_MULT",
              "/SHIFT (", s.ew.input1_multiplier, "/", s.ew.input1_shift, ", ",
              s.ew.input2_multiplier, "/", s.ew.input2_shift, ") must be 0");
    }
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

}  // namespace nacc::device_detail
