// The subset of the TensorFlow Lite C ABI the NACC delegate uses, declared by
// the project (no TFLite header ships in a pip wheel; DESIGN.md, "Runtime ABIs").
//
// Mirrors, as of TensorFlow 2.21.0 / ai-edge-litert 2.3.0 (LP64 Linux):
//   tensorflow/lite/core/c/c_api_types.h        TfLiteStatus, TfLiteType, TfLiteQuantizationParams
//   tensorflow/lite/core/c/common.h             TfLiteIntArray, TfLiteFloatArray, TfLiteTensor,
//                                               TfLiteNode, TfLiteContext, TfLiteRegistration,
//                                               TfLiteDelegate, TfLiteDelegateParams
//   tensorflow/lite/core/c/builtin_op_data.h    the *Params structs of the builtin ops we read
//   tensorflow/lite/builtin_ops.h               builtin operator codes (schema BuiltinOperator)
//   tensorflow/lite/delegates/external/external_delegate_interface.h   the two plugin entry points
// Fields are declared in upstream order; structs the delegate only reads
// through pointers may stop after the last field it reads (noted per struct).
// The ABI carries no version number: python/nacc/tflite.py checks the
// installed runtime's version before loading this library.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// ---- c_api_types.h -----------------------------------------------------------

typedef enum TfLiteStatus {
  kTfLiteOk = 0,
  kTfLiteError = 1,
  kTfLiteDelegateError = 2,
  kTfLiteApplicationError = 3,
} TfLiteStatus;

// Element types (values are part of the ABI; only those the delegate names).
typedef enum TfLiteType {
  kTfLiteNoType = 0,
  kTfLiteFloat32 = 1,
  kTfLiteInt32 = 2,
  kTfLiteUInt8 = 3,
  kTfLiteInt64 = 4,
  kTfLiteString = 5,
  kTfLiteBool = 6,
  kTfLiteInt16 = 7,
  kTfLiteComplex64 = 8,
  kTfLiteInt8 = 9,
  kTfLiteFloat16 = 10,
  kTfLiteFloat64 = 11,
  kTfLiteComplex128 = 12,
  kTfLiteUInt64 = 13,
  kTfLiteResource = 14,
  kTfLiteVariant = 15,
  kTfLiteUInt32 = 16,
  kTfLiteUInt16 = 17,
  kTfLiteInt4 = 18,
  kTfLiteBFloat16 = 19,
} TfLiteType;

// Legacy per-tensor quantization, still filled by the runtime for per-tensor
// quantized tensors.
typedef struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
} TfLiteQuantizationParams;

// ---- common.h: arrays ----------------------------------------------------------

// Allocated by the runtime with malloc() as 4 + 4 * size bytes and released
// with free() (TfLiteIntArrayCreate / TfLiteIntArrayFree).
typedef struct TfLiteIntArray {
  int size;
  int data[];
} TfLiteIntArray;

// Per-channel scales. NOTE: the 2.21 / LiteRT 2.3 layout; upstream master
// later changed this struct to {float* data; int size; bool owning;}.
typedef struct TfLiteFloatArray {
  int size;
  float data[];
} TfLiteFloatArray;

// ---- common.h: quantization ----------------------------------------------------

typedef enum TfLiteQuantizationType {
  kTfLiteNoQuantization = 0,
  kTfLiteAffineQuantization = 1,  // params: TfLiteAffineQuantization*
  kTfLiteBlockwiseQuantization = 2,
} TfLiteQuantizationType;

typedef struct TfLiteQuantization {
  TfLiteQuantizationType type;
  void* params;
} TfLiteQuantization;

// real = scale[c] * (q - zero_point[c]) along `quantized_dimension` (one
// entry: per tensor).
typedef struct TfLiteAffineQuantization {
  TfLiteFloatArray* scale;
  TfLiteIntArray* zero_point;
  int32_t quantized_dimension;
} TfLiteAffineQuantization;

// ---- common.h: tensors and nodes ------------------------------------------------

typedef union TfLitePtrUnion {
  int32_t* i32;
  int64_t* i64;
  float* f;
  char* raw;
  const char* raw_const;
  uint8_t* uint8;
  int16_t* i16;
  int8_t* int8;
  void* data;
} TfLitePtrUnion;

typedef enum TfLiteAllocationType {
  kTfLiteMemNone = 0,
  kTfLiteMmapRo,  // read-only model data: weights and other constants
  kTfLiteArenaRw,
  kTfLiteArenaRwPersistent,
  kTfLiteDynamic,
  kTfLitePersistentRo,
  kTfLiteCustom,
  kTfLiteVariantObject,
} TfLiteAllocationType;

typedef int TfLiteBufferHandle;
struct TfLiteDelegate;
struct TfLiteSparsity;

typedef struct TfLiteTensor {
  TfLiteType type;
  TfLitePtrUnion data;
  TfLiteIntArray* dims;
  TfLiteQuantizationParams params;
  TfLiteAllocationType allocation_type;
  size_t bytes;
  const void* allocation;
  const char* name;
  struct TfLiteDelegate* delegate;
  TfLiteBufferHandle buffer_handle;
  bool data_is_stale;
  bool is_variable;
  TfLiteQuantization quantization;
  struct TfLiteSparsity* sparsity;
  const TfLiteIntArray* dims_signature;
} TfLiteTensor;

typedef struct TfLiteNode {
  TfLiteIntArray* inputs;
  TfLiteIntArray* outputs;
  TfLiteIntArray* intermediates;
  TfLiteIntArray* temporaries;
  void* user_data;
  void* builtin_data;
  const void* custom_initial_data;
  int custom_initial_data_size;
  struct TfLiteDelegate* delegate;
  bool might_have_side_effect;
} TfLiteNode;

// The builtin_data of a delegate kernel node and the argument of its init().
typedef struct TfLiteDelegateParams {
  struct TfLiteDelegate* delegate;
  TfLiteIntArray* nodes_to_replace;
  TfLiteIntArray* input_tensors;
  TfLiteIntArray* output_tensors;
} TfLiteDelegateParams;

// ---- common.h: context, registration, delegate ------------------------------------

struct TfLiteContext;
struct TfLiteRegistration;

// Declared up to the last member the delegate calls (the runtime owns the
// object; the delegate never allocates or copies one).
typedef struct TfLiteContext {
  size_t tensors_size;
  TfLiteStatus (*GetExecutionPlan)(struct TfLiteContext* context, TfLiteIntArray** execution_plan);
  TfLiteTensor* tensors;
  void* impl_;
  // Takes ownership of new_size (malloc'ed TfLiteIntArray).
  TfLiteStatus (*ResizeTensor)(struct TfLiteContext*, TfLiteTensor* tensor,
                               TfLiteIntArray* new_size);
  void (*ReportError)(struct TfLiteContext*, const char* msg, ...);
  TfLiteStatus (*AddTensors)(struct TfLiteContext*, int tensors_to_add,
                             int* first_new_tensor_index);
  TfLiteStatus (*GetNodeAndRegistration)(struct TfLiteContext*, int node_index,
                                         TfLiteNode** node,
                                         struct TfLiteRegistration** registration);
  // The registration is passed BY VALUE: its full 88-byte layout matters.
  TfLiteStatus (*ReplaceNodeSubsetsWithDelegateKernels)(struct TfLiteContext*,
                                                        struct TfLiteRegistration registration,
                                                        const TfLiteIntArray* nodes_to_replace,
                                                        struct TfLiteDelegate* delegate);
  int recommended_num_threads;  // the interpreter's num_threads; -1 when unset
  void* (*GetExternalContext)(struct TfLiteContext*, int type);
  void (*SetExternalContext)(struct TfLiteContext*, int type, void* external_context);
  bool allow_fp32_relax_to_fp16;
  void* profiler;
  void* (*AllocatePersistentBuffer)(struct TfLiteContext* ctx, size_t bytes);
  TfLiteStatus (*AllocateBufferForEval)(struct TfLiteContext* ctx, size_t bytes, void** ptr);
  TfLiteStatus (*RequestScratchBufferInArena)(struct TfLiteContext* ctx, size_t bytes,
                                              int* buffer_idx);
  void* (*GetScratchBuffer)(struct TfLiteContext* ctx, int buffer_idx);
  // Copies `shape`; may be null outside the kernel context.
  TfLiteStatus (*ResizeTensorExplicit)(struct TfLiteContext* ctx, TfLiteTensor* tensor, int dims,
                                       const int* shape);
  // The partitions ReplaceNodeSubsetsWithDelegateKernels would create for
  // `nodes_to_replace`; the context owns the array until the next call or
  // the end of the delegate's Prepare.
  TfLiteStatus (*PreviewDelegatePartitioning)(struct TfLiteContext* context,
                                              const TfLiteIntArray* nodes_to_replace,
                                              TfLiteDelegateParams** partition_params_array,
                                              int* num_partitions);
} TfLiteContext;

typedef struct TfLiteRegistration {
  void* (*init)(TfLiteContext* context, const char* buffer, size_t length);
  void (*free)(TfLiteContext* context, void* buffer);
  TfLiteStatus (*prepare)(TfLiteContext* context, TfLiteNode* node);
  TfLiteStatus (*invoke)(TfLiteContext* context, TfLiteNode* node);
  const char* (*profiling_string)(const TfLiteContext* context, const TfLiteNode* node);
  int32_t builtin_code;
  const char* custom_name;
  int version;
  void* registration_external;  // TfLiteOperator*; NULL for a classic delegate
  void* (*async_kernel)(TfLiteContext* context, TfLiteNode* node);  // NULL: no async
  uint64_t inplace_operator;  // TfLiteInPlaceOp bitmask; 0 = kTfLiteInplaceOpNone
} TfLiteRegistration;

typedef enum TfLiteDelegateFlags {
  kTfLiteDelegateFlagsNone = 0,
  kTfLiteDelegateFlagsAllowDynamicTensors = 1,
} TfLiteDelegateFlags;

typedef struct TfLiteDelegate {
  void* data_;
  TfLiteStatus (*Prepare)(TfLiteContext* context, struct TfLiteDelegate* delegate);
  TfLiteStatus (*CopyFromBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate,
                                       TfLiteBufferHandle buffer_handle, TfLiteTensor* tensor);
  TfLiteStatus (*CopyToBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate,
                                     TfLiteBufferHandle buffer_handle, TfLiteTensor* tensor);
  void (*FreeBufferHandle)(TfLiteContext* context, struct TfLiteDelegate* delegate,
                           TfLiteBufferHandle* handle);
  int64_t flags;
  // Must be NULL: the runtime would otherwise call the opaque builder, not Prepare.
  void* opaque_delegate_builder;
} TfLiteDelegate;

// ---- builtin_op_data.h (prefixes the delegate reads; later members appended upstream) ----

typedef enum {
  kTfLitePaddingUnknown = 0,
  kTfLitePaddingSame,
  kTfLitePaddingValid,
} TfLitePadding;

typedef struct {
  int width;
  int height;
  int width_offset;
  int height_offset;
} TfLitePaddingValues;

typedef enum {
  kTfLiteActNone = 0,
  kTfLiteActRelu,
  kTfLiteActReluN1To1,
  kTfLiteActRelu6,
  kTfLiteActTanh,
  kTfLiteActSignBit,
  kTfLiteActSigmoid,
} TfLiteFusedActivation;

typedef struct {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  TfLiteFusedActivation activation;
  int dilation_width_factor;
  int dilation_height_factor;
  TfLiteType quantized_bias_type;  // version 7+
} TfLiteConvParams;

typedef struct {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  int filter_width;
  int filter_height;
  TfLiteFusedActivation activation;
  struct {
    TfLitePaddingValues padding;
  } computed;
} TfLitePoolParams;

typedef struct {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  int depth_multiplier;  // redundant with the shapes (upstream comment); may be 0
  TfLiteFusedActivation activation;
  int dilation_width_factor;
  int dilation_height_factor;
} TfLiteDepthwiseConvParams;

typedef struct {
  TfLitePadding padding;
  int stride_width;
  int stride_height;
  TfLiteFusedActivation activation;  // applied by the 2.21 int8 kernel (tests/test_transpose_conv.py)
  TfLiteType quantized_bias_type;
} TfLiteTransposeConvParams;

typedef enum {
  kTfLiteFullyConnectedWeightsFormatDefault = 0,
  kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8 = 1,
} TfLiteFullyConnectedWeightsFormat;

typedef struct {
  TfLiteFusedActivation activation;
  TfLiteFullyConnectedWeightsFormat weights_format;
  bool keep_num_dims;
  bool asymmetric_quantize_inputs;
  TfLiteType quantized_bias_type;  // version 10+
} TfLiteFullyConnectedParams;

typedef struct {
  int axis;
  TfLiteFusedActivation activation;
} TfLiteConcatenationParams;

typedef struct {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteAddParams;

typedef struct {
  TfLiteFusedActivation activation;
  bool pot_scale_int16;
} TfLiteSubParams;

typedef struct {
  TfLiteFusedActivation activation;
} TfLiteMulParams;

typedef struct {
  bool adj_x;
  bool adj_y;
  bool asymmetric_quantize_inputs;
} TfLiteBatchMatMulParams;

typedef struct {
  int32_t shape[8];  // TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT
  int num_dimensions;
} TfLiteReshapeParams;

typedef struct {
  int32_t squeeze_dims[8];
  int num_squeeze_dims;
} TfLiteSqueezeParams;

typedef struct {
  bool keep_dims;
} TfLiteReducerParams;

typedef struct {
  float alpha;
} TfLiteLeakyReluParams;

typedef struct {
  int num_splits;
} TfLiteSplitParams;

typedef struct {
  bool align_corners;
  bool half_pixel_centers;
} TfLiteResizeNearestNeighborParams;

typedef struct {
  bool align_corners;
  bool half_pixel_centers;
} TfLiteResizeBilinearParams;

typedef struct {
  int block_size;
} TfLiteSpaceToDepthParams;

typedef struct {
  int block_size;
} TfLiteDepthToSpaceParams;

typedef struct {
  int num_splits;
} TfLiteSplitVParams;

typedef struct {
  int begin_mask;
  int end_mask;
  int ellipsis_mask;
  int new_axis_mask;
  int shrink_axis_mask;
  bool offset;  // end = begin + end (version 7+ writes it)
} TfLiteStridedSliceParams;

// ---- builtin_ops.h (codes of the schema's BuiltinOperator enum) --------------------

enum TfLiteBuiltinOperator {
  kTfLiteBuiltinAdd = 0,
  kTfLiteBuiltinAveragePool2d = 1,
  kTfLiteBuiltinConcatenation = 2,
  kTfLiteBuiltinConv2d = 3,
  kTfLiteBuiltinDepthwiseConv2d = 4,
  kTfLiteBuiltinDepthToSpace = 5,
  kTfLiteBuiltinDequantize = 6,
  kTfLiteBuiltinFullyConnected = 9,
  kTfLiteBuiltinLogistic = 14,
  kTfLiteBuiltinMaxPool2d = 17,
  kTfLiteBuiltinMul = 18,
  kTfLiteBuiltinRelu = 19,
  kTfLiteBuiltinReluN1To1 = 20,
  kTfLiteBuiltinRelu6 = 21,
  kTfLiteBuiltinReshape = 22,
  kTfLiteBuiltinSoftmax = 25,
  kTfLiteBuiltinSpaceToDepth = 26,
  kTfLiteBuiltinTanh = 28,
  kTfLiteBuiltinCustom = 32,
  kTfLiteBuiltinPad = 34,
  kTfLiteBuiltinMean = 40,
  kTfLiteBuiltinSub = 41,
  kTfLiteBuiltinSqueeze = 43,
  kTfLiteBuiltinStridedSlice = 45,
  kTfLiteBuiltinSplit = 49,
  kTfLiteBuiltinDelegate = 51,
  kTfLiteBuiltinMaximum = 55,
  kTfLiteBuiltinMinimum = 57,
  kTfLiteBuiltinPadv2 = 60,
  kTfLiteBuiltinSlice = 65,
  kTfLiteBuiltinTransposeConv = 67,
  kTfLiteBuiltinExpandDims = 70,
  kTfLiteBuiltinResizeBilinear = 23,
  kTfLiteBuiltinTranspose = 39,
  kTfLiteBuiltinResizeNearestNeighbor = 97,
  kTfLiteBuiltinLeakyRelu = 98,
  kTfLiteBuiltinSplitV = 102,
  kTfLiteBuiltinQuantize = 114,
  kTfLiteBuiltinHardSwish = 117,
  kTfLiteBuiltinBatchMatmul = 126,
};

// ---- external_delegate_interface.h ----------------------------------------------------

// Exported by the delegate library (delegate/delegate.cc). `num_options`
// is size_t upstream; Python's tf.lite.experimental.load_delegate passes a
// C int through ctypes, so the library reads only its low 32 bits.
__attribute__((visibility("default"))) TfLiteDelegate* tflite_plugin_create_delegate(
    const char* const* options_keys, const char* const* options_values, size_t num_options,
    void (*report_error)(const char*));
__attribute__((visibility("default"))) void tflite_plugin_destroy_delegate(
    TfLiteDelegate* delegate);

}  // extern "C"

// Sizes verified against tensorflow 2.21.0 and ai-edge-litert 2.3.0 on LP64.
static_assert(sizeof(void*) == 8, "the declared layouts are those of LP64 platforms");
static_assert(sizeof(TfLiteTensor) == 112, "TfLiteTensor layout (common.h, 2.21)");
static_assert(sizeof(TfLiteNode) == 80, "TfLiteNode layout (common.h, 2.21)");
static_assert(sizeof(TfLiteRegistration) == 88,
              "TfLiteRegistration layout: passed by value to ReplaceNodeSubsetsWithDelegateKernels");
static_assert(sizeof(TfLiteDelegate) == 56, "TfLiteDelegate layout (common.h, 2.21)");
static_assert(sizeof(TfLiteIntArray) == 4, "TfLiteIntArray header is one int");
static_assert(sizeof(TfLiteFloatArray) == 4, "TfLiteFloatArray is {int size; float data[];} in 2.21");
static_assert(sizeof(TfLiteDelegateParams) == 32, "TfLiteDelegateParams layout");
static_assert(offsetof(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels) == 64,
              "TfLiteContext member order (common.h, 2.21)");
static_assert(offsetof(TfLiteContext, recommended_num_threads) == 72,
              "TfLiteContext member order (common.h, 2.21)");
static_assert(offsetof(TfLiteContext, PreviewDelegatePartitioning) == 152,
              "TfLiteContext member order (common.h, 2.21)");
static_assert(offsetof(TfLiteTensor, quantization) == 80, "TfLiteTensor member order");
static_assert(offsetof(TfLiteTensor, dims_signature) == 104, "TfLiteTensor member order");
static_assert(sizeof(TfLiteConvParams) == 28, "TfLiteConvParams (2.21, with quantized_bias_type)");
static_assert(sizeof(TfLitePoolParams) == 40, "TfLitePoolParams layout");
static_assert(sizeof(TfLiteDepthwiseConvParams) == 28, "TfLiteDepthwiseConvParams layout");
static_assert(sizeof(TfLiteFullyConnectedParams) == 16, "TfLiteFullyConnectedParams (2.21)");
