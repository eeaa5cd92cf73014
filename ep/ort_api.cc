// Implementation of the ORT C ABI helpers (ort_api.h).
#include "ep/ort_api.h"

#include <cstdio>
#include <cstring>

namespace nacc::ep {

namespace {

// Probes the first OrtApi slots (CreateStatus, GetErrorCode, GetErrorMessage,
// ReleaseStatus) and the key-value slots: a wrong table layout shows up here,
// at registration, instead of as a crash later.
bool probe(const OrtApi* ort) {
  OrtStatus* s = ort->CreateStatus(ORT_NOT_FOUND, "nacc-probe");
  if (s == nullptr) return false;
  const bool status_ok =
      ort->GetErrorCode(s) == ORT_NOT_FOUND && std::strcmp(ort->GetErrorMessage(s), "nacc-probe") == 0;
  ort->ReleaseStatus(s);
  OrtKeyValuePairs* kv = nullptr;
  ort->CreateKeyValuePairs(&kv);
  if (kv == nullptr) return false;
  ort->AddKeyValuePair(kv, "nacc", "probe");
  const char* v = ort->GetKeyValue(kv, "nacc");
  const bool kv_ok = v != nullptr && std::strcmp(v, "probe") == 0;
  ort->ReleaseKeyValuePairs(kv);
  return status_ok && kv_ok;
}

}  // namespace

Api Api::load(const OrtApiBase* base) {
  if (base == nullptr) throw OrtError(ORT_INVALID_ARGUMENT, "NaccExecutionProvider: OrtApiBase is NULL");
  Api api;
  const char* version = base->GetVersionString();
  api.ort_version = version ? version : "?";
  api.ort = base->GetApi(kOrtApiVersion);
  if (api.ort == nullptr) {
    throw OrtError(ORT_FAIL, str_cat("NaccExecutionProvider needs ONNX Runtime >= ", kMinOrtVersion,
                                     " (C API version ", kOrtApiVersion, "); this is ONNX Runtime ",
                                     api.ort_version, ". Upgrade with: pip install 'onnxruntime>=",
                                     kMinOrtVersion, "'"));
  }
  if (!probe(api.ort)) {
    throw OrtError(ORT_FAIL, str_cat("NaccExecutionProvider: ONNX Runtime ", api.ort_version,
                                     " does not behave as the declared C API version ",
                                     kOrtApiVersion, " (ep/ort_abi.h)"));
  }
  api.ep = api.ort->GetEpApi();
  api.editor = api.ort->GetModelEditorApi();
  if (api.ep == nullptr) {
    throw OrtError(ORT_FAIL, str_cat("NaccExecutionProvider: ONNX Runtime ", api.ort_version,
                                     " has no plugin EP API"));
  }
  return api;
}

void Api::check(OrtStatus* s) const {
  if (s == nullptr) return;
  const OrtErrorCode code = ort->GetErrorCode(s);
  std::string message = ort->GetErrorMessage(s);
  ort->ReleaseStatus(s);
  throw OrtError(code, message);
}

OrtStatus* Api::status(OrtErrorCode code, const std::string& message) const {
  return ort->CreateStatus(code, message.c_str());
}

void Api::log(const OrtLogger* logger, OrtLoggingLevel level, const std::string& message,
              const char* function) const noexcept {
  if (logger == nullptr || ort == nullptr) return;
  OrtStatus* s = ort->Logger_LogMessage(logger, level, message.c_str(), "nacc/ep", 0, function);
  if (s) ort->ReleaseStatus(s);
}

bool Api::enabled(const OrtLogger* logger, OrtLoggingLevel level) const noexcept {
  if (logger == nullptr) return false;
  OrtLoggingLevel min_level = ORT_LOGGING_LEVEL_WARNING;
  OrtStatus* s = ort->Logger_GetLoggingSeverityLevel(logger, &min_level);
  if (s) {
    ort->ReleaseStatus(s);
    return true;
  }
  return level >= min_level;
}

Attribute read_attribute(const Api& api, const OrtOpAttr* attr) {
  Attribute a;
  api.check(api.ort->OpAttr_GetType(attr, &a.type));
  size_t size = 0;
  // ReadOpAttr reports the bytes it needs through `size` when the buffer is
  // too small (and returns an error status, which is expected here).
  auto needed = [&](OrtOpAttrType type) {
    size = 0;
    OrtStatus* s = api.ort->ReadOpAttr(attr, type, nullptr, 0, &size);
    if (s) api.ort->ReleaseStatus(s);
    return size;
  };
  switch (a.type) {
    case ORT_OP_ATTR_INT:
      api.check(api.ort->ReadOpAttr(attr, a.type, &a.i, sizeof a.i, &size));
      break;
    case ORT_OP_ATTR_FLOAT:
      api.check(api.ort->ReadOpAttr(attr, a.type, &a.f, sizeof a.f, &size));
      break;
    case ORT_OP_ATTR_INTS: {
      const size_t bytes = needed(a.type);
      a.ints.resize(bytes / sizeof(int64_t));
      if (bytes) api.check(api.ort->ReadOpAttr(attr, a.type, a.ints.data(), bytes, &size));
      break;
    }
    case ORT_OP_ATTR_FLOATS: {
      const size_t bytes = needed(a.type);
      a.floats.resize(bytes / sizeof(float));
      if (bytes) api.check(api.ort->ReadOpAttr(attr, a.type, a.floats.data(), bytes, &size));
      break;
    }
    case ORT_OP_ATTR_STRING: {
      const size_t bytes = needed(a.type);
      a.s.resize(bytes);
      if (bytes) api.check(api.ort->ReadOpAttr(attr, a.type, a.s.data(), bytes, &size));
      a.s.resize(size);
      break;
    }
    default:
      break;
  }
  return a;
}

std::vector<std::pair<std::string, Attribute>> read_attributes(const Api& api,
                                                               const OrtNode* node) {
  size_t n = 0;
  api.check(api.ort->Node_GetNumAttributes(node, &n));
  std::vector<const OrtOpAttr*> attrs(n);
  if (n) api.check(api.ort->Node_GetAttributes(node, attrs.data(), n));
  std::vector<std::pair<std::string, Attribute>> out;
  for (const OrtOpAttr* a : attrs) {
    const char* name = nullptr;
    api.check(api.ort->OpAttr_GetName(a, &name));
    out.emplace_back(name ? name : "", read_attribute(api, a));
  }
  return out;
}

std::optional<std::string> config_entry(const Api& api, const OrtSessionOptions* options,
                                        const std::string& key) {
  int has = 0;
  api.check(api.ort->HasSessionConfigEntry(options, key.c_str(), &has));
  if (!has) return std::nullopt;
  size_t size = 0;
  OrtStatus* s = api.ort->GetSessionConfigEntry(options, key.c_str(), nullptr, &size);
  if (s) api.ort->ReleaseStatus(s);
  std::string value(size, '\0');
  api.check(api.ort->GetSessionConfigEntry(options, key.c_str(), value.data(), &size));
  value.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  return value;
}

std::vector<std::pair<std::string, std::string>> config_entries(const Api& api,
                                                                const OrtSessionOptions* options) {
  OrtKeyValuePairs* kv = nullptr;
  api.check(api.ort->GetSessionOptionsConfigEntries(options, &kv));
  std::vector<std::pair<std::string, std::string>> out;
  if (kv == nullptr) return out;
  const char* const* keys = nullptr;
  const char* const* values = nullptr;
  size_t n = 0;
  api.ort->GetKeyValuePairs(kv, &keys, &values, &n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(keys[i], values[i] ? values[i] : "");
  api.ort->ReleaseKeyValuePairs(kv);
  return out;
}

TensorType value_type(const Api& api, const OrtValueInfo* value) {
  TensorType t;
  const OrtTypeInfo* type_info = nullptr;
  api.check(api.ort->GetValueInfoTypeInfo(value, &type_info));
  if (type_info == nullptr) return t;
  ONNXType onnx_type = ONNX_TYPE_UNKNOWN;
  api.check(api.ort->GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
  if (onnx_type != ONNX_TYPE_TENSOR) return t;
  const OrtTensorTypeAndShapeInfo* info = nullptr;
  api.check(api.ort->CastTypeInfoToTensorInfo(type_info, &info));
  if (info == nullptr) return t;
  ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  api.check(api.ort->GetTensorElementType(info, &elem));
  size_t rank = 0;
  api.check(api.ort->GetDimensionsCount(info, &rank));
  t.shape.resize(rank);
  if (rank) api.check(api.ort->GetDimensions(info, t.shape.data(), rank));
  t.elem_type = elem;
  return t;
}

std::string value_name(const Api& api, const OrtValueInfo* value) {
  const char* name = nullptr;
  api.check(api.ort->GetValueInfoName(value, &name));
  return name ? name : "";
}

TensorView tensor_view(const Api& api, const OrtValue* value) {
  TensorView v;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  api.check(api.ort->GetTensorTypeAndShape(value, &info));
  struct Release {
    const Api& api;
    OrtTensorTypeAndShapeInfo* info;
    ~Release() { api.ort->ReleaseTensorTypeAndShapeInfo(info); }
  } release{api, info};
  ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  api.check(api.ort->GetTensorElementType(info, &elem));
  size_t rank = 0;
  api.check(api.ort->GetDimensionsCount(info, &rank));
  v.shape.resize(rank);
  if (rank) api.check(api.ort->GetDimensions(info, v.shape.data(), rank));
  api.check(api.ort->GetTensorShapeElementCount(info, &v.elements));
  v.elem_type = elem;
  api.check(api.ort->GetTensorData(value, &v.data));
  return v;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

int onnx_elem_size(int elem_type) {
  switch (elem_type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    // 4-bit constants are held unpacked, one element per byte (OnnxGraph's
    // loader unpacks ORT's packed initializers); the EP claims no 4-bit I/O.
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4:
      return 1;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

const char* onnx_elem_name(int elem_type) {
  switch (elem_type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4: return "uint4";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4: return "int4";
    case 0: return "unknown";
    default: return "other";
  }
}

}  // namespace nacc::ep
