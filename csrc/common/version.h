// The nacc version string, shared by the core, the TFLite delegate library and
// the ONNX Runtime EP (cache keys, reports, the Python package's consistency
// check). Must equal nacc.__version__ (python/nacc/__init__.py; a test checks).
#pragma once

namespace nacc {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace nacc
