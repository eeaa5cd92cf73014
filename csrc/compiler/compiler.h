// The NACC compiler: a partition of the IR graph (the ops the capability rules
// claimed, in topological order) -> a Program (command stream, constant
// region, region map, I/O bindings, per-op records). Algorithm and decisions:
// docs/compiler.md; register semantics: docs/device_model.md.
#pragma once

#include <string>
#include <vector>

#include "compiler/conv_modes.h"
#include "compiler/tiling.h"
#include "ir/ir.h"
#include "runtime/program.h"

namespace nacc {

struct CompileOptions {
  HwConfig hw;  // cores, SRAM bytes per core (a multiple of 1024), bandwidths
  // Double-buffer IFM/OFM (or K/OFM) tiles when they fit in SRAM twice.
  bool double_buffer = true;
  // Restrict the tile search (tests, experiments): 0 / -1 = choose freely.
  int force_cores = 0;
  int force_mode = -1;  // 0 NONE, 1 SPLIT_KERNEL, 2 SPLIT_HEIGHT
  // CONV_2D lowering (docs/compiler.md §2): the cheapest of direct, matrix
  // (1x1) and im2col by the planner's estimate, or one forced where it applies.
  compiler::ConvLowering conv_lowering = compiler::ConvLowering::kAuto;
  // An NCHW <-> NHWC TRANSPOSE (docs/compiler.md "Layout conversion"): the
  // cheaper by the compiler's estimate of the layout unit (NPU_OP_VNCHWCONV)
  // and the DMA copy passes, or one forced (tests; "unit" only where the unit
  // applies).
  enum class LayoutLowering { kAuto, kUnit, kCopy };
  LayoutLowering layout_lowering = LayoutLowering::kAuto;
};

// Compiles `partition`. Its graph inputs / outputs (graph.inputs / outputs; when
// both are empty: the runtime tensors no op produces / that no op reads)
// become the Program's I/O regions; every op is compiled, in order.
// Throws nacc::Unsupported naming the op when an op cannot be compiled
// exactly (never emits something wrong), InvalidArgument for a malformed
// graph or options.
Program compile(const ir::Graph& partition, const CompileOptions& options = {});

// The tile plan the compiler would choose for graph.ops[op_index] (for
// reports and golden tests).
compiler::TilePlan plan_op(const ir::Graph& graph, int op_index, const CompileOptions& options = {});

}  // namespace nacc
