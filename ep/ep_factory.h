// The OrtEpFactory of the NACC plugin EP: name NaccExecutionProvider, vendor
// nacc, one OrtEpDevice on the host CPU hardware device (the NPU is simulated
// on the host, so its memory is host memory: no allocator, no data transfer).
// Creates one NaccEp per session, with the Config parsed from the session.
#pragma once

#include "ep/ort_api.h"

namespace nacc::ep {

class NaccEpFactory : public OrtEpFactory {
 public:
  NaccEpFactory(Api api, const OrtLogger* default_logger);

  const Api& api() const { return api_; }

 private:
  static const char* GetNameImpl(const OrtEpFactory* self) noexcept;
  static const char* GetVendorImpl(const OrtEpFactory* self) noexcept;
  static uint32_t GetVendorIdImpl(const OrtEpFactory* self) noexcept;
  static const char* GetVersionImpl(const OrtEpFactory* self) noexcept;
  static OrtStatus* GetSupportedDevicesImpl(OrtEpFactory* self,
                                            const OrtHardwareDevice* const* devices,
                                            size_t num_devices, OrtEpDevice** ep_devices,
                                            size_t max_ep_devices, size_t* num_ep_devices) noexcept;
  static OrtStatus* CreateEpImpl(OrtEpFactory* self, const OrtHardwareDevice* const* devices,
                                 const OrtKeyValuePairs* const* ep_metadata, size_t num_devices,
                                 const OrtSessionOptions* session_options,
                                 const OrtLogger* logger, OrtEp** ep) noexcept;
  static void ReleaseEpImpl(OrtEpFactory* self, OrtEp* ep) noexcept;
  static OrtStatus* ValidateCompiledModelCompatibilityInfoImpl(
      OrtEpFactory* self, const OrtHardwareDevice* const* devices, size_t num_devices,
      const char* compatibility_info, OrtCompiledModelCompatibility* compatibility) noexcept;
  static OrtStatus* CreateDataTransferImpl(OrtEpFactory* self,
                                           OrtDataTransferImpl** transfer) noexcept;
  static bool IsStreamAwareImpl(const OrtEpFactory* self) noexcept;

  Api api_;
  const OrtLogger* default_logger_;
};

}  // namespace nacc::ep
