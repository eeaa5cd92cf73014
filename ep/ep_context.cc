// Partition blobs, compatibility strings, the program cache and EPContext
// nodes (ep_context.h).
#include "ep/ep_context.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "common/error.h"
#include "ep/backend.h"
#include "runtime/runtime.h"
#include "support/graph_digest.h"

namespace nacc::ep {

namespace {

constexpr char kMagic[8] = {'N', 'A', 'C', 'C', 'E', 'P', 'C', '1'};
// Format 2 appends an FNV-1a-64 checksum of every preceding byte: format 1
// protected only the embedded Program, so a damaged binding (NCHW flag, element
// type) loaded and silently produced wrong outputs.
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kMaxCount = 1u << 16;

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  template <typename T>
  void pod(T v) { bytes(&v, sizeof v); }
  void str(const std::string& s) {
    pod<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : data(d), size(n) {}
  void bytes(void* p, size_t n) {
    check_arg(n <= size - pos, "NaccExecutionProvider: compiled partition blob truncated at byte ",
              pos, " (", size, " bytes)");
    std::memcpy(p, data + pos, n);
    pos += n;
  }
  template <typename T>
  T pod() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string str() {
    const uint32_t n = pod<uint32_t>();
    check_arg(n <= size - pos, "NaccExecutionProvider: string of ", n, " bytes past the blob end");
    std::string s(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    return s;
  }
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
};

void write_binding(Writer& w, const IoBinding& b) {
  w.str(b.name);
  w.pod<int32_t>(b.elem_type);
  w.pod<uint8_t>(b.nchw ? 1 : 0);
  w.pod<uint32_t>(static_cast<uint32_t>(b.onnx_shape.size()));
  for (int64_t d : b.onnx_shape) w.pod<int64_t>(d);
}

IoBinding read_binding(Reader& r) {
  IoBinding b;
  b.name = r.str();
  b.elem_type = r.pod<int32_t>();
  check_arg(b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 ||
                b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 ||
                b.elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16,
            "NaccExecutionProvider: binding '", b.name, "' has element type ", b.elem_type,
            " (int8, uint8 or int16 expected)");
  const uint8_t nchw = r.pod<uint8_t>();
  check_arg(nchw <= 1, "NaccExecutionProvider: binding '", b.name, "' has layout flag ", int(nchw));
  b.nchw = nchw != 0;
  const uint32_t rank = r.pod<uint32_t>();
  check_arg(rank <= 8, "NaccExecutionProvider: binding '", b.name, "' has rank ", rank);
  int64_t elements = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    const int64_t d = r.pod<int64_t>();
    // Bounded so that IoBinding::bytes() cannot overflow.
    check_arg(d >= 1 && d <= (int64_t{1} << 31) && elements <= (int64_t{1} << 40) / d,
              "NaccExecutionProvider: binding '", b.name, "' dimension ", i, " = ", d,
              " out of range");
    elements *= d;
    b.onnx_shape.push_back(d);
  }
  check_arg(!b.nchw || rank == 4, "NaccExecutionProvider: NCHW binding '", b.name, "' of rank ", rank);
  b.ir_shape = b.nchw ? std::vector<int64_t>{b.onnx_shape[0], b.onnx_shape[2], b.onnx_shape[3],
                                             b.onnx_shape[1]}
                      : b.onnx_shape;
  return b;
}

std::string hw_summary(const HwConfig& hw) {
  return str_cat("cores=", hw.cores, ";sram_kb=", hw.sram_bytes / 1024);
}

// The fields of a compatibility string ("nacc=...;format=...;cores=...;sram_kb=..."),
// or nullopt when one is missing or malformed.
struct CompatFields {
  std::string nacc, format;
  int cores = 0;
  int64_t sram_kb = 0;
};
std::optional<CompatFields> parse_compatibility(const std::string& info) {
  CompatFields f;
  bool have_cores = false, have_sram = false;
  size_t pos = 0;
  while (pos <= info.size()) {
    const size_t end = std::min(info.find(';', pos), info.size());
    const std::string item = info.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    try {
      size_t used = 0;
      if (k == "nacc") {
        f.nacc = v;
      } else if (k == "format") {
        f.format = v;
      } else if (k == "cores") {
        f.cores = std::stoi(v, &used);
        have_cores = used == v.size();
      } else if (k == "sram_kb") {
        f.sram_kb = std::stoll(v, &used);
        have_sram = used == v.size();
      }
    } catch (const std::exception&) {
      return std::nullopt;
    }
    pos = end + 1;
  }
  if (f.nacc.empty() || f.format.empty() || !have_cores || !have_sram) return std::nullopt;
  return f;
}

}  // namespace

std::vector<uint8_t> PartitionBlob::serialize() const {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.pod<uint32_t>(kFormatVersion);
  w.str(kNaccVersion);
  w.str(hw_summary(program.hw));
  w.pod<uint32_t>(static_cast<uint32_t>(inputs.size()));
  for (const auto& b : inputs) write_binding(w, b);
  w.pod<uint32_t>(static_cast<uint32_t>(outputs.size()));
  for (const auto& b : outputs) write_binding(w, b);
  const std::vector<uint8_t> p = serialize_program(program);
  w.pod<uint64_t>(p.size());
  w.bytes(p.data(), p.size());
  w.pod<uint64_t>(support::fnv1a64(w.out.data(), w.out.size()));
  return std::move(w.out);
}

PartitionBlob PartitionBlob::deserialize(const uint8_t* data, size_t size,
                                         Program::Checksum checksum) {
  Reader r(data, size);
  char magic[8];
  r.bytes(magic, sizeof magic);
  check_arg(std::memcmp(magic, kMagic, sizeof magic) == 0,
            "NaccExecutionProvider: not a compiled NACC partition (bad magic)");
  const uint32_t version = r.pod<uint32_t>();
  check_arg(version == kFormatVersion, "NaccExecutionProvider: compiled partition format ", version,
            ", this build reads ", kFormatVersion, "; recompile the model");
  // The checksum trailer covers everything before it.
  check_arg(size >= r.pos + sizeof(uint64_t), "NaccExecutionProvider: compiled partition blob "
            "truncated (", size, " bytes)");
  const size_t body = size - sizeof(uint64_t);
  uint64_t stored = 0;
  std::memcpy(&stored, data + body, sizeof stored);
  check_arg(checksum == Program::Checksum::kCoveredByCaller || stored == support::fnv1a64(data, body),
            "NaccExecutionProvider: compiled partition blob checksum mismatch "
            "(damaged or truncated)");
  r.size = body;
  const std::string nacc_version = r.str();
  check_arg(nacc_version == kNaccVersion, "NaccExecutionProvider: partition compiled by nacc ",
            nacc_version, ", this is nacc ", kNaccVersion, "; recompile the model");
  r.str();  // hardware summary (informational; the Program carries its HwConfig)
  PartitionBlob blob;
  const uint32_t n_in = r.pod<uint32_t>();
  check_arg(n_in <= kMaxCount, "NaccExecutionProvider: ", n_in, " inputs");
  for (uint32_t i = 0; i < n_in; ++i) blob.inputs.push_back(read_binding(r));
  const uint32_t n_out = r.pod<uint32_t>();
  check_arg(n_out <= kMaxCount, "NaccExecutionProvider: ", n_out, " outputs");
  for (uint32_t i = 0; i < n_out; ++i) blob.outputs.push_back(read_binding(r));
  const uint64_t n = r.pod<uint64_t>();
  check_arg(n == r.size - r.pos, "NaccExecutionProvider: Program of ", n, " bytes, ",
            r.size - r.pos, " left in the blob");
  // Covered by the blob's checksum (checked above or by the caller).
  blob.program = deserialize_program(data + r.pos, static_cast<size_t>(n),
                                     Program::Checksum::kCoveredByCaller);
  return blob;
}

std::string compatibility_string(const Config& config) {
  return str_cat("nacc=", kNaccVersion, ";format=", kFormatVersion, ";cores=", config.cores,
                 ";sram_kb=", config.sram_kb);
}

OrtCompiledModelCompatibility check_compatibility(const std::string& info) {
  if (info.rfind("nacc=", 0) != 0) return OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
  const auto f = parse_compatibility(info);
  if (!f || f->nacc != kNaccVersion || f->format != std::to_string(kFormatVersion) ||
      f->sram_kb < 0 || f->sram_kb > (int64_t{1} << 30)) {
    return OrtCompiledModelCompatibility_EP_UNSUPPORTED;
  }
  HwConfig compiled;
  compiled.cores = f->cores;
  compiled.sram_bytes = f->sram_kb * 1024;
  try {
    validate_hw_config(compiled);
  } catch (const nacc::Error&) {
    return OrtCompiledModelCompatibility_EP_UNSUPPORTED;
  }
  return OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL;
}

std::string check_ep_context_blob(const PartitionBlob& blob, const std::string& node_name,
                                  const Config& config) {
  const HwConfig& compiled = blob.program.hw;
  const HwConfig mine = hw_config(config);
  const std::string what = str_cat("NaccExecutionProvider: EPContext '", node_name,
                                   "' was compiled for ", hw_summary(compiled));
  if (compiled.cores > mine.cores || compiled.sram_bytes != mine.sram_bytes) {
    throw OrtError(ORT_FAIL, str_cat(what, "; this session's NPU is ", hw_summary(mine),
                                     " (provider options cores, sram_kb). Create the session with "
                                     "the options the model was compiled with, or compile the "
                                     "original model again with these"));
  }
  try {
    check_program_for_device(blob.program, mine);
  } catch (const nacc::Error& e) {
    throw OrtError(ORT_FAIL, str_cat(what, ": its Program fails the runtime's check: ", e.what()));
  }
  if (compiled.cores < mine.cores) {
    return str_cat(what, "; this session's NPU has ", mine.cores, " cores: it runs on ",
                   compiled.cores, " of them (compile the original model again with cores=",
                   mine.cores, " to use them all)");
  }
  return "";
}

std::string partition_key(const std::string& ir_digest, const std::vector<IoBinding>& inputs,
                          const std::vector<IoBinding>& outputs, const Config& config) {
  std::string s = str_cat("nacc-ort-partition;nacc=", kNaccVersion, ";format=", kFormatVersion,
                          ";cores=", config.cores, ";sram_kb=", config.sram_kb, ";ir=", ir_digest);
  for (const auto* list : {&inputs, &outputs}) {
    s += str_cat(";", list->size(), ":");
    for (const IoBinding& b : *list) {
      s += str_cat("[", b.name.size(), ":", b.name, ",", b.elem_type, ",", b.nchw ? 1 : 0, ",",
                   ir::shape_str(b.onnx_shape), "]");
    }
  }
  return support::bytes_digest(s);
}

std::string cache_path(const std::string& dir, const std::string& key) {
  return str_cat(dir, "/", key, ".naccpart");
}

std::optional<PartitionBlob> cache_load(const std::string& dir, const support::CacheEntryId& id,
                                        std::string* problem) {
  const auto bytes = support::read_cache_file(cache_path(dir, id.key));
  if (!bytes) return std::nullopt;
  const auto payload = support::decode_cache_entry(*bytes, id, problem);
  if (!payload) return std::nullopt;
  try {
    return PartitionBlob::deserialize(bytes->data() + payload->offset, payload->size,
                                      Program::Checksum::kCoveredByCaller);  // the entry's digest
  } catch (const nacc::Error& e) {
    *problem = str_cat("its partition is unusable: ", e.what());
    return std::nullopt;
  }
}

void cache_store(const std::string& dir, const support::CacheEntryId& id, const PartitionBlob& blob) {
  support::write_cache_file(cache_path(dir, id.key), support::encode_cache_entry(id, blob.serialize()));
}

namespace {
constexpr size_t kMemoryCacheEntries = 64;
std::mutex g_cache_mu;
// key -> (stamp, blob)
std::map<std::string, std::pair<uint64_t, std::shared_ptr<const PartitionBlob>>> g_cache;
uint64_t g_cache_stamp = 0;
}  // namespace

std::shared_ptr<const PartitionBlob> memory_cache_get(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) return nullptr;
  it->second.first = ++g_cache_stamp;
  return it->second.second;
}

void memory_cache_put(const std::string& key, std::shared_ptr<const PartitionBlob> blob) {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  if (g_cache.size() >= kMemoryCacheEntries && !g_cache.count(key)) {
    auto oldest = g_cache.begin();
    for (auto it = g_cache.begin(); it != g_cache.end(); ++it) {
      if (it->second.first < oldest->second.first) oldest = it;
    }
    g_cache.erase(oldest);
  }
  g_cache[key] = {++g_cache_stamp, std::move(blob)};
}

OrtNode* make_ep_context_node(const Api& api, const std::string& node_name,
                              const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs,
                              const std::vector<uint8_t>& blob) {
  check_arg(api.editor != nullptr, "NaccExecutionProvider: ONNX Runtime has no model editor API");
  std::vector<OrtOpAttr*> attrs;
  struct Release {
    const Api& api;
    std::vector<OrtOpAttr*>& attrs;
    ~Release() {
      for (OrtOpAttr* a : attrs) api.ort->ReleaseOpAttr(a);
    }
  } release{api, attrs};
  auto add = [&](const char* name, const void* data, int len, OrtOpAttrType type) {
    OrtOpAttr* a = nullptr;
    api.check(api.ort->CreateOpAttr(name, data, len, type, &a));
    attrs.push_back(a);
  };
  const int64_t main_context = 1, embed_mode = 1;
  add("main_context", &main_context, 1, ORT_OP_ATTR_INT);
  add("embed_mode", &embed_mode, 1, ORT_OP_ATTR_INT);
  add("ep_cache_context", blob.data(), static_cast<int>(blob.size()), ORT_OP_ATTR_STRING);
  add("ep_sdk_version", kNaccVersion, static_cast<int>(std::strlen(kNaccVersion)), ORT_OP_ATTR_STRING);
  add("partition_name", node_name.data(), static_cast<int>(node_name.size()), ORT_OP_ATTR_STRING);
  add("source", kEpName, static_cast<int>(std::strlen(kEpName)), ORT_OP_ATTR_STRING);
  std::vector<const char*> in_names, out_names;
  for (const auto& s : inputs) in_names.push_back(s.c_str());
  for (const auto& s : outputs) out_names.push_back(s.c_str());
  OrtNode* node = nullptr;
  api.check(api.editor->CreateNode("EPContext", "com.microsoft", node_name.c_str(), in_names.data(),
                                   in_names.size(), out_names.data(), out_names.size(), attrs.data(),
                                   attrs.size(), &node));
  return node;
}

}  // namespace nacc::ep
