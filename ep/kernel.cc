// Compute of a fused partition (kernel.h).
#include "ep/kernel.h"

#include <map>
#include <mutex>
#include <utility>

#include "ep/layout.h"
#include "ep/profiler.h"

namespace nacc::ep {

namespace {

struct PartitionStats {
  int64_t runs = 0;
  // Boundary tensors the host converted between NCHW and NHWC, over all runs
  // (0 when the Programs convert them: docs/onnxruntime_ep.md "Layout and types").
  int64_t host_layout_conversions = 0;
  RunStats last;  // the last run (its per-op cut shared with the plan: formatted when read)
};
std::mutex g_stats_mu;
std::map<std::string, PartitionStats> g_stats;

void record_run(const std::string& name, const RunStats& s, int host_layout_conversions) {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  PartitionStats& p = g_stats[name];
  ++p.runs;
  p.host_layout_conversions += host_layout_conversions;
  p.last = s;
}

// Index of the Program I/O tensor named `name` (by name; by position when the
// Program does not record names).
int find_io(const std::vector<IoTensor>& ios, const std::string& name, size_t position) {
  for (size_t i = 0; i < ios.size(); ++i) {
    if (ios[i].name == name) return static_cast<int>(i);
  }
  if (position < ios.size() && ios[position].name.empty()) return static_cast<int>(position);
  return -1;
}

}  // namespace

std::string run_stats_json() {
  std::lock_guard<std::mutex> lock(g_stats_mu);
  std::string s = "{";
  bool first = true;
  for (const auto& [name, p] : g_stats) {
    s += str_cat(first ? "" : ", ", "\"", name, "\": {\"runs\": ", p.runs,
                 ", \"cycles\": ", p.last.cycles, ", \"macs\": ", p.last.macs,
                 ", \"dma_bytes\": ", p.last.dma_bytes,
                 ", \"sram_high_water\": ", p.last.sram_high_water,
                 ", \"host_layout_conversions\": ", p.host_layout_conversions,
                 ", \"ops\": ",
                 p.last.ops ? op_counters_json(*p.last.ops) : std::string("[]"), "}");
    first = false;
  }
  return s + "}";
}

CompiledPartition::CompiledPartition(std::string name, PartitionBlob blob,
                                     std::shared_ptr<Executor> executor)
    : name_(std::move(name)), blob_(std::move(blob)), executor_(std::move(executor)) {
  const Program& p = blob_.program;
  for (size_t i = 0; i < blob_.inputs.size(); ++i) {
    const int k = find_io(p.inputs, blob_.inputs[i].name, i);
    check_arg(k >= 0, "NaccExecutionProvider: partition '", name_, "': input '",
              blob_.inputs[i].name, "' is not an input of its Program");
    check_arg(p.images * p.inputs[k].size == blob_.inputs[i].bytes(),
              "NaccExecutionProvider: partition '", name_, "': input '", blob_.inputs[i].name,
              "' has ", blob_.inputs[i].bytes(), " bytes, its Program ",
              p.images * p.inputs[k].size);
    program_input_of_.push_back(k);
  }
  for (size_t i = 0; i < blob_.outputs.size(); ++i) {
    const int k = find_io(p.outputs, blob_.outputs[i].name, i);
    check_arg(k >= 0, "NaccExecutionProvider: partition '", name_, "': output '",
              blob_.outputs[i].name, "' is not an output of its Program");
    check_arg(p.images * p.outputs[k].size == blob_.outputs[i].bytes(),
              "NaccExecutionProvider: partition '", name_, "': output '", blob_.outputs[i].name,
              "' has ", blob_.outputs[i].bytes(), " bytes, its Program ",
              p.images * p.outputs[k].size);
    program_output_of_.push_back(k);
  }
  loaded_ = executor_->load(p);
}

void CompiledPartition::compute(const Api& api, OrtKernelContext* context) const {
  const Program& program = *loaded_;
  size_t n_in = 0, n_out = 0;
  api.check(api.ort->KernelContext_GetInputCount(context, &n_in));
  api.check(api.ort->KernelContext_GetOutputCount(context, &n_out));
  if (n_in != blob_.inputs.size() || n_out != blob_.outputs.size()) {
    throw OrtError(ORT_EP_FAIL, str_cat("NaccExecutionProvider: partition '", name_, "' got ", n_in,
                                        " inputs and ", n_out, " outputs, compiled for ",
                                        blob_.inputs.size(), " and ", blob_.outputs.size()));
  }
  // Program-side (int8) buffers, one per Program I/O region.
  int host_layout = 0;  // bindings converted here (kernel.h)
  std::vector<std::vector<uint8_t>> in_bufs(program.inputs.size());
  std::vector<std::vector<uint8_t>> out_bufs(program.outputs.size());
  for (size_t i = 0; i < n_in; ++i) {
    const IoBinding& b = blob_.inputs[i];
    const OrtValue* value = nullptr;
    api.check(api.ort->KernelContext_GetInput(context, i, &value));
    const TensorView v = tensor_view(api, value);
    if (v.elem_type != b.elem_type || v.shape != b.onnx_shape) {
      throw OrtError(ORT_INVALID_ARGUMENT,
                     str_cat("NaccExecutionProvider: input '", b.name, "' is ",
                             onnx_elem_name(v.elem_type), " ", ir::shape_str(v.shape),
                             "; the partition was compiled for ", onnx_elem_name(b.elem_type), " ",
                             ir::shape_str(b.onnx_shape)));
    }
    std::vector<uint8_t>& buf = in_bufs[program_input_of_[i]];
    buf.resize(static_cast<size_t>(b.bytes()));
    const auto* src = static_cast<const uint8_t*>(v.data);
    const bool flip = b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    host_layout += b.nchw ? 1 : 0;
    if (b.nchw && b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16) {
      const auto& s = b.onnx_shape;
      nchw_to_nhwc_16bit(s[0], s[1], s[2], s[3], src, buf.data());
    } else if (b.nchw) {
      const auto& s = b.onnx_shape;
      nchw_to_nhwc_8bit(s[0], s[1], s[2], s[3], src, buf.data(), flip);
    } else {
      copy_8bit(b.bytes(), src, buf.data(), flip);
    }
  }
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    out_bufs[k].resize(static_cast<size_t>(program.images * program.outputs[k].size));
  }
  std::vector<const void*> ins;
  std::vector<void*> outs;
  for (auto& b : in_bufs) ins.push_back(b.data());
  for (auto& b : out_bufs) outs.push_back(b.data());
  const int64_t t0 = steady_now_ns();
  const RunStats stats = executor_->run(program, ins, outs);
  profile_run(name_, t0, steady_now_ns(), stats.cycles, stats.ops);
  for (const IoBinding& b : blob_.outputs) host_layout += b.nchw ? 1 : 0;
  record_run(name_, stats, host_layout);

  for (size_t i = 0; i < n_out; ++i) {
    const IoBinding& b = blob_.outputs[i];
    OrtValue* value = nullptr;
    api.check(api.ort->KernelContext_GetOutput(context, i, b.onnx_shape.data(),
                                               b.onnx_shape.size(), &value));
    void* dst = nullptr;
    api.check(api.ort->GetTensorMutableData(value, &dst));
    const std::vector<uint8_t>& buf = out_bufs[program_output_of_[i]];
    const bool flip = b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    if (b.nchw && b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16) {
      const auto& s = b.onnx_shape;
      nhwc_to_nchw_16bit(s[0], s[1], s[2], s[3], buf.data(), static_cast<uint8_t*>(dst));
    } else if (b.nchw) {
      const auto& s = b.onnx_shape;
      nhwc_to_nchw_8bit(s[0], s[1], s[2], s[3], buf.data(), static_cast<uint8_t*>(dst), flip);
    } else {
      copy_8bit(b.bytes(), buf.data(), static_cast<uint8_t*>(dst), flip);
    }
  }
}

}  // namespace nacc::ep
