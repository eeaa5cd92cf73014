// Thin C++ helpers over the ORT C ABI of ort_abi.h: an error type carrying an
// OrtErrorCode, `check` (OrtStatus* -> exception), the noexcept trampoline
// guard (exception -> OrtStatus*), logging, and typed readers for node
// attributes, value infos and session config entries.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "ep/ort_abi.h"

namespace nacc::ep {

using namespace nacc::ortabi;

// An error with the OrtErrorCode the trampolines report it with.
class OrtError : public std::runtime_error {
 public:
  OrtError(OrtErrorCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  OrtErrorCode code() const { return code_; }

 private:
  OrtErrorCode code_;
};

// The three function tables the EP calls, fetched once from OrtApiBase.
struct Api {
  const OrtApi* ort = nullptr;
  const OrtEpApi* ep = nullptr;
  const OrtModelEditorApi* editor = nullptr;
  std::string ort_version;  // e.g. "1.31.1"

  // Fetches the tables for kOrtApiVersion. Throws OrtError with an actionable
  // message when ORT is older than kMinOrtVersion (GetApi returns NULL) or a
  // probe of the first slots does not behave as declared.
  static Api load(const OrtApiBase* base);

  // Throws OrtError(code, message) and releases `status` when it is not NULL.
  void check(OrtStatus* status) const;
  // An OrtStatus for ORT to own.
  OrtStatus* status(OrtErrorCode code, const std::string& message) const;
  // Logs through `logger` (no-op when NULL); never throws.
  void log(const OrtLogger* logger, OrtLoggingLevel level, const std::string& message,
           const char* function) const noexcept;
  // Whether `logger` would print messages of `level`.
  bool enabled(const OrtLogger* logger, OrtLoggingLevel level) const noexcept;
};

// Where one EP instance's messages go: ORT's logger — the session logger ORT
// passes to CreateEp, which prints what the session's log_severity_level
// allows (ORT's default logger when ONNX Runtime's Python API creates the EP
// from a providers=[...] list) — after the EP's own floor (option log_level):
// a message below `floor` is dropped before it reaches ORT.
struct EpLog {
  const Api* api = nullptr;
  const OrtLogger* logger = nullptr;
  int floor = ORT_LOGGING_LEVEL_VERBOSE;

  void operator()(OrtLoggingLevel level, const std::string& message,
                  const char* function) const noexcept {
    if (api != nullptr && level >= floor) api->log(logger, level, message, function);
  }
};

// Runs `body` and returns NULL, or the exception it threw as an OrtStatus:
// OrtError keeps its code, nacc::InvalidArgument -> ORT_INVALID_ARGUMENT,
// nacc::Unsupported -> ORT_NOT_IMPLEMENTED, anything else -> ORT_EP_FAIL.
// Every ABI entry point of the EP is a noexcept function made of one call to this.
template <typename Body>
OrtStatus* guarded(const Api& api, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const OrtError& e) {
    return api.status(e.code(), e.what());
  } catch (const nacc::InvalidArgument& e) {
    return api.status(ORT_INVALID_ARGUMENT, e.what());
  } catch (const nacc::Unsupported& e) {
    return api.status(ORT_NOT_IMPLEMENTED, e.what());
  } catch (const std::exception& e) {
    return api.status(ORT_EP_FAIL, e.what());
  } catch (...) {
    return api.status(ORT_EP_FAIL, "NaccExecutionProvider: unknown C++ exception");
  }
}

// ---- readers -----------------------------------------------------------------

// One node attribute, read out of ORT.
struct Attribute {
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

// The attribute's value (INT, INTS, FLOAT, FLOATS, STRING; other types are
// returned with only `type` set).
Attribute read_attribute(const Api& api, const OrtOpAttr* attr);

// Every attribute of `node` as (name, value).
std::vector<std::pair<std::string, Attribute>> read_attributes(const Api& api,
                                                               const OrtNode* node);

// Session config entry `key`, or nullopt when unset.
std::optional<std::string> config_entry(const Api& api, const OrtSessionOptions* options,
                                        const std::string& key);

// Every session config entry (key, value) — used to find unknown EP options.
std::vector<std::pair<std::string, std::string>> config_entries(const Api& api,
                                                                const OrtSessionOptions* options);

// The element type and shape of a tensor value: elem_type 0 when the value is
// not a tensor or has no type information; dims -1 where symbolic.
struct TensorType {
  int elem_type = 0;
  std::vector<int64_t> shape;
};
TensorType value_type(const Api& api, const OrtValueInfo* value);

// Name of a value info.
std::string value_name(const Api& api, const OrtValueInfo* value);

// Element type, shape and data pointer of an OrtValue tensor.
struct TensorView {
  int elem_type = 0;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t elements = 0;
};
TensorView tensor_view(const Api& api, const OrtValue* value);

// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_quote(const std::string& s);

// Bytes per element of an ONNX element type (0 for unsupported types).
int onnx_elem_size(int elem_type);
// "int8", "float32", ... for messages.
const char* onnx_elem_name(int elem_type);

}  // namespace nacc::ep
