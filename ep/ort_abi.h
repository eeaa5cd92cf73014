// The subset of the ONNX Runtime C ABI the NACC plugin execution provider uses,
// declared for this project (no ORT header ships with the pip wheel, and the EP
// must not link ONNX Runtime: it only calls through the OrtApiBase* ORT passes in).
//
// Mirrors, without copying, microsoft/onnxruntime
//   include/onnxruntime/core/session/onnxruntime_c_api.h     (OrtApiBase, OrtApi, OrtModelEditorApi)
//   include/onnxruntime/core/session/onnxruntime_ep_c_api.h  (OrtEpApi, OrtEpFactory, OrtEp, ...)
//   include/onnxruntime/core/session/onnxruntime_error_code.h (OrtErrorCode)
// as of ORT_API_VERSION 29 (the copies vendored in yalue/onnxruntime_go), run against
// onnxruntime 1.31.1. Slot indices were counted from those headers and are
// append-only across versions; every slot used here was introduced at API
// version <= 23 (slots 0..389 of OrtApi, 0..15 of OrtEpApi).
//
// Version rule (verified on 1.31.1): ORT reads the OrtEp / OrtEpFactory /
// OrtNodeComputeInfo function tables up to the `ort_version_supported` the EP
// writes into them, so that number must never exceed the layout declared here.
// kOrtApiVersion is therefore both the version passed to OrtApiBase::GetApi and
// the one written into every table; the OrtEp and OrtEpFactory layouts below
// are complete for version 23 (static_asserts pin their sizes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace nacc::ortabi {

// The API version this declaration is complete for. 23 = ONNX Runtime 1.23,
// the first release with the graph (OrtGraph/OrtNode/OrtValueInfo) and
// compile (OrtEp::Compile) APIs.
constexpr uint32_t kOrtApiVersion = 23;
// The oldest ORT release that provides kOrtApiVersion.
constexpr const char* kMinOrtVersion = "1.23.0";

// ---- opaque types (ORT owns them; the EP only passes pointers around) -------
struct OrtStatus;
struct OrtEnv;
struct OrtLogger;
struct OrtSessionOptions;
struct OrtHardwareDevice;
struct OrtKeyValuePairs;
struct OrtEpDevice;
struct OrtGraph;
struct OrtNode;
struct OrtValueInfo;
struct OrtOpAttr;
struct OrtValue;
struct OrtTypeInfo;
struct OrtTensorTypeAndShapeInfo;
struct OrtKernelContext;
struct OrtEpGraphSupportInfo;
struct OrtNodeComputeContext;
struct OrtMemoryInfo;
struct OrtMemoryDevice;
struct OrtAllocator;
struct OrtDataTransferImpl;
struct OrtSyncStreamImpl;
struct OrtRunOptions;

// ---- enums (values as in the upstream headers) -------------------------------
enum OrtErrorCode : int {
  ORT_OK = 0,
  ORT_FAIL = 1,
  ORT_INVALID_ARGUMENT = 2,
  ORT_NO_SUCHFILE = 3,
  ORT_NO_MODEL = 4,
  ORT_ENGINE_ERROR = 5,
  ORT_RUNTIME_EXCEPTION = 6,
  ORT_INVALID_PROTOBUF = 7,
  ORT_MODEL_LOADED = 8,
  ORT_NOT_IMPLEMENTED = 9,
  ORT_INVALID_GRAPH = 10,
  ORT_EP_FAIL = 11,
  ORT_MODEL_LOAD_CANCELED = 12,
  ORT_MODEL_REQUIRES_COMPILATION = 13,
  ORT_NOT_FOUND = 14,
};

enum ONNXTensorElementDataType : int {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED = 0,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 = 3,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 = 4,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 = 5,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4 = 21,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4 = 22,
};

enum ONNXType : int { ONNX_TYPE_UNKNOWN = 0, ONNX_TYPE_TENSOR = 1 };

enum OrtLoggingLevel : int {
  ORT_LOGGING_LEVEL_VERBOSE = 0,
  ORT_LOGGING_LEVEL_INFO = 1,
  ORT_LOGGING_LEVEL_WARNING = 2,
  ORT_LOGGING_LEVEL_ERROR = 3,
  ORT_LOGGING_LEVEL_FATAL = 4,
};

enum OrtOpAttrType : int {
  ORT_OP_ATTR_UNDEFINED = 0,
  ORT_OP_ATTR_INT = 1,
  ORT_OP_ATTR_INTS = 2,
  ORT_OP_ATTR_FLOAT = 3,
  ORT_OP_ATTR_FLOATS = 4,
  ORT_OP_ATTR_STRING = 5,
  ORT_OP_ATTR_STRINGS = 6,
  ORT_OP_ATTR_GRAPH = 7,
  ORT_OP_ATTR_TENSOR = 8,
};

enum OrtHardwareDeviceType : int {
  OrtHardwareDeviceType_CPU = 0,
  OrtHardwareDeviceType_GPU = 1,
  OrtHardwareDeviceType_NPU = 2,
};

enum OrtCompiledModelCompatibility : int {
  OrtCompiledModelCompatibility_EP_NOT_APPLICABLE = 0,
  OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL = 1,
  OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION = 2,
  OrtCompiledModelCompatibility_EP_UNSUPPORTED = 3,
};

enum OrtEpDataLayout : int { OrtEpDataLayout_NCHW = 0, OrtEpDataLayout_NHWC = 1 };

// ---- OrtApiBase ---------------------------------------------------------------
struct OrtApi;

struct OrtApiBase {
  const OrtApi* (*GetApi)(uint32_t version) noexcept;
  const char* (*GetVersionString)() noexcept;
};

// ---- OrtApi: the function table, declared up to the last slot used ------------
// Unused slots are padding; NACC_ORT_SLOT below checks each named member's index.
struct OrtEpApi;
struct OrtModelEditorApi;

using StatusPtr = OrtStatus*;

struct OrtApi {
  // 0..2
  StatusPtr (*CreateStatus)(OrtErrorCode code, const char* msg) noexcept;
  OrtErrorCode (*GetErrorCode)(const OrtStatus* status) noexcept;
  const char* (*GetErrorMessage)(const OrtStatus* status) noexcept;
  void* unused_3_50[48];
  // 51
  StatusPtr (*GetTensorMutableData)(OrtValue* value, void** out) noexcept;
  void* unused_52_54[3];
  // 55, 56
  StatusPtr (*CastTypeInfoToTensorInfo)(const OrtTypeInfo* type_info,
                                        const OrtTensorTypeAndShapeInfo** out) noexcept;
  StatusPtr (*GetOnnxTypeFromTypeInfo)(const OrtTypeInfo* type_info, ONNXType* out) noexcept;
  void* unused_57_59[3];
  // 60..65
  StatusPtr (*GetTensorElementType)(const OrtTensorTypeAndShapeInfo* info,
                                    ONNXTensorElementDataType* out) noexcept;
  StatusPtr (*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo* info, size_t* out) noexcept;
  StatusPtr (*GetDimensions)(const OrtTensorTypeAndShapeInfo* info, int64_t* dims,
                             size_t dims_length) noexcept;
  void* unused_63;
  StatusPtr (*GetTensorShapeElementCount)(const OrtTensorTypeAndShapeInfo* info,
                                          size_t* out) noexcept;
  StatusPtr (*GetTensorTypeAndShape)(const OrtValue* value, OrtTensorTypeAndShapeInfo** out) noexcept;
  void* unused_66_87[22];
  // 88..91
  StatusPtr (*KernelContext_GetInputCount)(const OrtKernelContext* context, size_t* out) noexcept;
  StatusPtr (*KernelContext_GetOutputCount)(const OrtKernelContext* context, size_t* out) noexcept;
  StatusPtr (*KernelContext_GetInput)(const OrtKernelContext* context, size_t index,
                                      const OrtValue** out) noexcept;
  StatusPtr (*KernelContext_GetOutput)(OrtKernelContext* context, size_t index,
                                       const int64_t* dims, size_t dim_count,
                                       OrtValue** out) noexcept;
  void* unused_92;
  // 93
  void (*ReleaseStatus)(OrtStatus* status) noexcept;
  void* unused_94_98[5];
  // 99
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo* info) noexcept;
  void* unused_100_210[111];
  // 211, 212
  StatusPtr (*CreateOpAttr)(const char* name, const void* data, int len, OrtOpAttrType type,
                            OrtOpAttr** op_attr) noexcept;
  void (*ReleaseOpAttr)(OrtOpAttr* op_attr) noexcept;
  void* unused_213_236[24];
  // 237, 238
  StatusPtr (*HasSessionConfigEntry)(const OrtSessionOptions* options, const char* key,
                                     int* out) noexcept;
  StatusPtr (*GetSessionConfigEntry)(const OrtSessionOptions* options, const char* key,
                                     char* value, size_t* size) noexcept;
  void* unused_239_246[8];
  // 247, 248
  StatusPtr (*Logger_LogMessage)(const OrtLogger* logger, OrtLoggingLevel level,
                                 const char* message, const char* file_path, int line,
                                 const char* func_name) noexcept;
  StatusPtr (*Logger_GetLoggingSeverityLevel)(const OrtLogger* logger,
                                              OrtLoggingLevel* out) noexcept;
  void* unused_249_271[23];
  // 272
  StatusPtr (*ReadOpAttr)(const OrtOpAttr* op_attr, OrtOpAttrType type, void* data, size_t len,
                          size_t* out) noexcept;
  void* unused_273_288[16];
  // 289..291
  StatusPtr (*GetValueInfoName)(const OrtValueInfo* value_info, const char** name) noexcept;
  StatusPtr (*GetValueInfoTypeInfo)(const OrtValueInfo* value_info,
                                    const OrtTypeInfo** type_info) noexcept;
  const OrtModelEditorApi* (*GetModelEditorApi)() noexcept;
  void* unused_292_294[3];
  // 295..300
  void (*CreateKeyValuePairs)(OrtKeyValuePairs** out) noexcept;
  void (*AddKeyValuePair)(OrtKeyValuePairs* kvps, const char* key, const char* value) noexcept;
  const char* (*GetKeyValue)(const OrtKeyValuePairs* kvps, const char* key) noexcept;
  void (*GetKeyValuePairs)(const OrtKeyValuePairs* kvps, const char* const** keys,
                           const char* const** values, size_t* num_entries) noexcept;
  void* unused_299;
  void (*ReleaseKeyValuePairs)(OrtKeyValuePairs* kvps) noexcept;
  void* unused_301_306[6];
  // 307, 308
  OrtHardwareDeviceType (*HardwareDevice_Type)(const OrtHardwareDevice* device) noexcept;
  uint32_t (*HardwareDevice_VendorId)(const OrtHardwareDevice* device) noexcept;
  void* unused_309_316[8];
  // 317
  const OrtEpApi* (*GetEpApi)() noexcept;
  void* unused_318_322[5];
  // 323..326
  StatusPtr (*ValueInfo_GetValueProducer)(const OrtValueInfo* value_info,
                                          const OrtNode** producer, size_t* output_index) noexcept;
  StatusPtr (*ValueInfo_GetValueNumConsumers)(const OrtValueInfo* value_info,
                                              size_t* num_consumers) noexcept;
  StatusPtr (*ValueInfo_GetValueConsumers)(const OrtValueInfo* value_info, const OrtNode** nodes,
                                           int64_t* input_indices, size_t num_consumers) noexcept;
  StatusPtr (*ValueInfo_GetInitializerValue)(const OrtValueInfo* value_info,
                                             const OrtValue** value) noexcept;
  void* unused_327_329[3];
  // 330..332
  StatusPtr (*ValueInfo_IsGraphOutput)(const OrtValueInfo* value_info, bool* out) noexcept;
  StatusPtr (*ValueInfo_IsConstantInitializer)(const OrtValueInfo* value_info, bool* out) noexcept;
  StatusPtr (*ValueInfo_IsFromOuterScope)(const OrtValueInfo* value_info, bool* out) noexcept;
  // 333
  StatusPtr (*Graph_GetName)(const OrtGraph* graph, const char** name) noexcept;
  void* unused_334_337[4];
  // 338..341
  StatusPtr (*Graph_GetNumInputs)(const OrtGraph* graph, size_t* out) noexcept;
  StatusPtr (*Graph_GetInputs)(const OrtGraph* graph, const OrtValueInfo** inputs,
                               size_t num_inputs) noexcept;
  StatusPtr (*Graph_GetNumOutputs)(const OrtGraph* graph, size_t* out) noexcept;
  StatusPtr (*Graph_GetOutputs)(const OrtGraph* graph, const OrtValueInfo** outputs,
                                size_t num_outputs) noexcept;
  void* unused_342_343[2];
  // 344, 345
  StatusPtr (*Graph_GetNumNodes)(const OrtGraph* graph, size_t* out) noexcept;
  StatusPtr (*Graph_GetNodes)(const OrtGraph* graph, const OrtNode** nodes,
                              size_t num_nodes) noexcept;
  void* unused_346_347[2];
  // 348..351
  StatusPtr (*Node_GetId)(const OrtNode* node, size_t* id) noexcept;
  StatusPtr (*Node_GetName)(const OrtNode* node, const char** name) noexcept;
  StatusPtr (*Node_GetOperatorType)(const OrtNode* node, const char** op_type) noexcept;
  StatusPtr (*Node_GetDomain)(const OrtNode* node, const char** domain) noexcept;
  StatusPtr (*Node_GetSinceVersion)(const OrtNode* node, int* since_version) noexcept;
  // 353..356
  StatusPtr (*Node_GetNumInputs)(const OrtNode* node, size_t* out) noexcept;
  StatusPtr (*Node_GetInputs)(const OrtNode* node, const OrtValueInfo** inputs,
                              size_t num_inputs) noexcept;
  StatusPtr (*Node_GetNumOutputs)(const OrtNode* node, size_t* out) noexcept;
  StatusPtr (*Node_GetOutputs)(const OrtNode* node, const OrtValueInfo** outputs,
                               size_t num_outputs) noexcept;
  void* unused_357_358[2];
  // 359..361
  StatusPtr (*Node_GetNumAttributes)(const OrtNode* node, size_t* out) noexcept;
  StatusPtr (*Node_GetAttributes)(const OrtNode* node, const OrtOpAttr** attributes,
                                  size_t num_attributes) noexcept;
  StatusPtr (*Node_GetAttributeByName)(const OrtNode* node, const char* name,
                                       const OrtOpAttr** attribute) noexcept;
  void* unused_362;
  // 363, 364
  StatusPtr (*OpAttr_GetType)(const OrtOpAttr* attribute, OrtOpAttrType* type) noexcept;
  StatusPtr (*OpAttr_GetName)(const OrtOpAttr* attribute, const char** name) noexcept;
  void* unused_365_377[13];
  // 378, 379
  StatusPtr (*GetTensorData)(const OrtValue* value, const void** out) noexcept;
  StatusPtr (*GetSessionOptionsConfigEntries)(const OrtSessionOptions* options,
                                              OrtKeyValuePairs** out) noexcept;
};

#define NACC_ORT_SLOT(Table, member, index) \
  static_assert(offsetof(Table, member) == (index) * sizeof(void*), #member " must be slot " #index)

NACC_ORT_SLOT(OrtApi, CreateStatus, 0);
NACC_ORT_SLOT(OrtApi, GetErrorMessage, 2);
NACC_ORT_SLOT(OrtApi, GetTensorMutableData, 51);
NACC_ORT_SLOT(OrtApi, CastTypeInfoToTensorInfo, 55);
NACC_ORT_SLOT(OrtApi, GetTensorElementType, 60);
NACC_ORT_SLOT(OrtApi, GetDimensions, 62);
NACC_ORT_SLOT(OrtApi, GetTensorShapeElementCount, 64);
NACC_ORT_SLOT(OrtApi, GetTensorTypeAndShape, 65);
NACC_ORT_SLOT(OrtApi, KernelContext_GetInputCount, 88);
NACC_ORT_SLOT(OrtApi, KernelContext_GetOutput, 91);
NACC_ORT_SLOT(OrtApi, ReleaseStatus, 93);
NACC_ORT_SLOT(OrtApi, ReleaseTensorTypeAndShapeInfo, 99);
NACC_ORT_SLOT(OrtApi, CreateOpAttr, 211);
NACC_ORT_SLOT(OrtApi, ReleaseOpAttr, 212);
NACC_ORT_SLOT(OrtApi, HasSessionConfigEntry, 237);
NACC_ORT_SLOT(OrtApi, GetSessionConfigEntry, 238);
NACC_ORT_SLOT(OrtApi, Logger_LogMessage, 247);
NACC_ORT_SLOT(OrtApi, Logger_GetLoggingSeverityLevel, 248);
NACC_ORT_SLOT(OrtApi, ReadOpAttr, 272);
NACC_ORT_SLOT(OrtApi, GetValueInfoName, 289);
NACC_ORT_SLOT(OrtApi, GetModelEditorApi, 291);
NACC_ORT_SLOT(OrtApi, CreateKeyValuePairs, 295);
NACC_ORT_SLOT(OrtApi, GetKeyValuePairs, 298);
NACC_ORT_SLOT(OrtApi, ReleaseKeyValuePairs, 300);
NACC_ORT_SLOT(OrtApi, HardwareDevice_Type, 307);
NACC_ORT_SLOT(OrtApi, HardwareDevice_VendorId, 308);
NACC_ORT_SLOT(OrtApi, GetEpApi, 317);
NACC_ORT_SLOT(OrtApi, ValueInfo_GetValueProducer, 323);
NACC_ORT_SLOT(OrtApi, ValueInfo_GetInitializerValue, 326);
NACC_ORT_SLOT(OrtApi, ValueInfo_IsGraphOutput, 330);
NACC_ORT_SLOT(OrtApi, ValueInfo_IsFromOuterScope, 332);
NACC_ORT_SLOT(OrtApi, Graph_GetName, 333);
NACC_ORT_SLOT(OrtApi, Graph_GetNumInputs, 338);
NACC_ORT_SLOT(OrtApi, Graph_GetOutputs, 341);
NACC_ORT_SLOT(OrtApi, Graph_GetNumNodes, 344);
NACC_ORT_SLOT(OrtApi, Graph_GetNodes, 345);
NACC_ORT_SLOT(OrtApi, Node_GetId, 348);
NACC_ORT_SLOT(OrtApi, Node_GetDomain, 351);
NACC_ORT_SLOT(OrtApi, Node_GetSinceVersion, 352);
NACC_ORT_SLOT(OrtApi, Node_GetNumInputs, 353);
NACC_ORT_SLOT(OrtApi, Node_GetOutputs, 356);
NACC_ORT_SLOT(OrtApi, Node_GetNumAttributes, 359);
NACC_ORT_SLOT(OrtApi, Node_GetAttributeByName, 361);
NACC_ORT_SLOT(OrtApi, OpAttr_GetType, 363);
NACC_ORT_SLOT(OrtApi, OpAttr_GetName, 364);
NACC_ORT_SLOT(OrtApi, GetTensorData, 378);
NACC_ORT_SLOT(OrtApi, GetSessionOptionsConfigEntries, 379);
static_assert(sizeof(OrtApi) == 380 * sizeof(void*), "OrtApi declared through slot 379");

// ---- OrtEpApi (ORT_API_VERSION >= 22/23), declared up to the last slot used -----
struct OrtEpFactory;
struct OrtEp;
struct OrtNodeFusionOptions;

struct OrtEpApi {
  // 0, 1
  StatusPtr (*CreateEpDevice)(OrtEpFactory* factory, const OrtHardwareDevice* hardware_device,
                              const OrtKeyValuePairs* ep_metadata,
                              const OrtKeyValuePairs* ep_options,
                              OrtEpDevice** ep_device) noexcept;
  void (*ReleaseEpDevice)(OrtEpDevice* device) noexcept;
  // 2
  StatusPtr (*EpGraphSupportInfo_AddNodesToFuse)(OrtEpGraphSupportInfo* info,
                                                 const OrtNode* const* nodes, size_t num_nodes,
                                                 const OrtNodeFusionOptions* options) noexcept;
  void* unused_3;
  // 4
  const char* (*NodeComputeContext_NodeName)(const OrtNodeComputeContext* context) noexcept;
};
NACC_ORT_SLOT(OrtEpApi, EpGraphSupportInfo_AddNodesToFuse, 2);
NACC_ORT_SLOT(OrtEpApi, NodeComputeContext_NodeName, 4);

// ---- OrtModelEditorApi (version 22), for the EPContext nodes -------------------
// (Upstream declares a one-field dummy struct in ORT_MINIMAL_BUILD, where
// GetModelEditorApi returns NULL; the full-build layout is the one here.)
struct OrtModelEditorApi {
  void* unused_0_5[6];  // CreateTensorTypeInfo .. CreateValueInfo
  // 6
  StatusPtr (*CreateNode)(const char* op_type, const char* domain, const char* node_name,
                          const char* const* input_names, size_t num_inputs,
                          const char* const* output_names, size_t num_outputs,
                          OrtOpAttr** attributes, size_t num_attributes, OrtNode** node) noexcept;
};
NACC_ORT_SLOT(OrtModelEditorApi, CreateNode, 6);

// ---- structs the EP implements -------------------------------------------------

// Version 23 layout. ORT reads drop_constant_initializers only.
struct OrtNodeFusionOptions {
  uint32_t ort_version_supported;
  bool drop_constant_initializers;
};
static_assert(sizeof(OrtNodeFusionOptions) == 8, "OrtNodeFusionOptions v23 layout");

// Version 23 layout (unchanged through 29).
struct OrtNodeComputeInfo {
  uint32_t ort_version_supported;
  StatusPtr (*CreateState)(OrtNodeComputeInfo* self, OrtNodeComputeContext* context,
                           void** state) noexcept;
  StatusPtr (*Compute)(OrtNodeComputeInfo* self, void* state,
                       OrtKernelContext* kernel_context) noexcept;
  void (*ReleaseState)(OrtNodeComputeInfo* self, void* state) noexcept;
};
static_assert(sizeof(OrtNodeComputeInfo) == 4 * sizeof(void*), "OrtNodeComputeInfo v23 layout");

// Version 23 layout: every field up to GetCompiledModelCompatibilityInfo.
struct OrtEp {
  uint32_t ort_version_supported;
  const char* (*GetName)(const OrtEp* self) noexcept;
  StatusPtr (*GetCapability)(OrtEp* self, const OrtGraph* graph,
                             OrtEpGraphSupportInfo* support_info) noexcept;
  StatusPtr (*Compile)(OrtEp* self, const OrtGraph** graphs, const OrtNode** fused_nodes,
                       size_t count, OrtNodeComputeInfo** node_compute_infos,
                       OrtNode** ep_context_nodes) noexcept;
  void (*ReleaseNodeComputeInfos)(OrtEp* self, OrtNodeComputeInfo** infos, size_t count) noexcept;
  StatusPtr (*GetPreferredDataLayout)(OrtEp* self, OrtEpDataLayout* layout) noexcept;
  StatusPtr (*ShouldConvertDataLayoutForOp)(OrtEp* self, const char* domain, const char* op_type,
                                            OrtEpDataLayout target, int* should_convert) noexcept;
  StatusPtr (*SetDynamicOptions)(OrtEp* self, const char* const* keys, const char* const* values,
                                 size_t count) noexcept;
  StatusPtr (*OnRunStart)(OrtEp* self, const OrtRunOptions* run_options) noexcept;
  StatusPtr (*OnRunEnd)(OrtEp* self, const OrtRunOptions* run_options, bool sync_stream) noexcept;
  StatusPtr (*CreateAllocator)(OrtEp* self, const OrtMemoryInfo* memory_info,
                               OrtAllocator** allocator) noexcept;
  StatusPtr (*CreateSyncStreamForDevice)(OrtEp* self, const OrtMemoryDevice* device,
                                         OrtSyncStreamImpl** stream) noexcept;
  const char* (*GetCompiledModelCompatibilityInfo)(OrtEp* self, const OrtGraph* graph) noexcept;
};
static_assert(sizeof(OrtEp) == 13 * sizeof(void*), "OrtEp v23 layout: version + 12 functions");

// Version 23 layout: every field up to CreateSyncStreamForDevice.
struct OrtEpFactory {
  uint32_t ort_version_supported;
  const char* (*GetName)(const OrtEpFactory* self) noexcept;
  const char* (*GetVendor)(const OrtEpFactory* self) noexcept;
  StatusPtr (*GetSupportedDevices)(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                   size_t num_devices, OrtEpDevice** ep_devices,
                                   size_t max_ep_devices, size_t* num_ep_devices) noexcept;
  StatusPtr (*CreateEp)(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                        const OrtKeyValuePairs* const* ep_metadata, size_t num_devices,
                        const OrtSessionOptions* session_options, const OrtLogger* logger,
                        OrtEp** ep) noexcept;
  void (*ReleaseEp)(OrtEpFactory* self, OrtEp* ep) noexcept;
  uint32_t (*GetVendorId)(const OrtEpFactory* self) noexcept;
  const char* (*GetVersion)(const OrtEpFactory* self) noexcept;
  StatusPtr (*ValidateCompiledModelCompatibilityInfo)(
      OrtEpFactory* self, const OrtHardwareDevice* const* devices, size_t num_devices,
      const char* compatibility_info, OrtCompiledModelCompatibility* compatibility) noexcept;
  StatusPtr (*CreateAllocator)(OrtEpFactory* self, const OrtMemoryInfo* memory_info,
                               const OrtKeyValuePairs* options, OrtAllocator** allocator) noexcept;
  void (*ReleaseAllocator)(OrtEpFactory* self, OrtAllocator* allocator) noexcept;
  // Called unconditionally by ORT 1.31 during registration: must not be NULL.
  StatusPtr (*CreateDataTransfer)(OrtEpFactory* self, OrtDataTransferImpl** transfer) noexcept;
  bool (*IsStreamAware)(const OrtEpFactory* self) noexcept;
  StatusPtr (*CreateSyncStreamForDevice)(OrtEpFactory* self, const OrtMemoryDevice* device,
                                         const OrtKeyValuePairs* options,
                                         OrtSyncStreamImpl** stream) noexcept;
};
static_assert(sizeof(OrtEpFactory) == 14 * sizeof(void*),
              "OrtEpFactory v23 layout: version + 13 functions");

#undef NACC_ORT_SLOT

}  // namespace nacc::ortabi
