// NaccEpFactory (ep_factory.h).
#include "ep/ep_factory.h"

#include "ep/config.h"
#include "ep/ep.h"
#include "ep/ep_context.h"

namespace nacc::ep {

namespace {
// PCI-style vendor id; 0 = none registered (the device is simulated).
constexpr uint32_t kVendorId = 0;
}  // namespace

NaccEpFactory::NaccEpFactory(Api api, const OrtLogger* default_logger)
    : OrtEpFactory{}, api_(std::move(api)), default_logger_(default_logger) {
  ort_version_supported = kOrtApiVersion;
  GetName = GetNameImpl;
  GetVendor = GetVendorImpl;
  GetSupportedDevices = GetSupportedDevicesImpl;
  CreateEp = CreateEpImpl;
  ReleaseEp = ReleaseEpImpl;
  GetVendorId = GetVendorIdImpl;
  GetVersion = GetVersionImpl;
  ValidateCompiledModelCompatibilityInfo = ValidateCompiledModelCompatibilityInfoImpl;
  CreateAllocator = nullptr;   // host memory: ORT's CPU allocator
  ReleaseAllocator = nullptr;
  CreateDataTransfer = CreateDataTransferImpl;  // ORT 1.31 calls it unconditionally
  IsStreamAware = IsStreamAwareImpl;
  CreateSyncStreamForDevice = nullptr;
}

const char* NaccEpFactory::GetNameImpl(const OrtEpFactory*) noexcept { return kEpName; }
const char* NaccEpFactory::GetVendorImpl(const OrtEpFactory*) noexcept { return kEpVendor; }
uint32_t NaccEpFactory::GetVendorIdImpl(const OrtEpFactory*) noexcept { return kVendorId; }
const char* NaccEpFactory::GetVersionImpl(const OrtEpFactory*) noexcept { return kNaccVersion; }

OrtStatus* NaccEpFactory::GetSupportedDevicesImpl(OrtEpFactory* self,
                                                  const OrtHardwareDevice* const* devices,
                                                  size_t num_devices, OrtEpDevice** ep_devices,
                                                  size_t max_ep_devices,
                                                  size_t* num_ep_devices) noexcept {
  auto* f = static_cast<NaccEpFactory*>(self);
  return guarded(f->api_, [&] {
    *num_ep_devices = 0;
    for (size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
      if (f->api_.ort->HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU) continue;
      OrtEpDevice* device = nullptr;
      f->api_.check(f->api_.ep->CreateEpDevice(f, devices[i], nullptr, nullptr, &device));
      ep_devices[(*num_ep_devices)++] = device;
      break;  // one device: the simulated NPU on the host CPU
    }
  });
}

OrtStatus* NaccEpFactory::CreateEpImpl(OrtEpFactory* self, const OrtHardwareDevice* const*,
                                       const OrtKeyValuePairs* const*, size_t num_devices,
                                       const OrtSessionOptions* session_options,
                                       const OrtLogger* logger, OrtEp** ep) noexcept {
  auto* f = static_cast<NaccEpFactory*>(self);
  return guarded(f->api_, [&] {
    *ep = nullptr;
    if (num_devices != 1) {
      throw OrtError(ORT_INVALID_ARGUMENT,
                     str_cat("NaccExecutionProvider runs on one device; ", num_devices, " selected"));
    }
    Config config = Config::from_session(f->api_, session_options);
    *ep = new NaccEp(f->api_, std::move(config), logger);
  });
}

void NaccEpFactory::ReleaseEpImpl(OrtEpFactory*, OrtEp* ep) noexcept {
  delete static_cast<NaccEp*>(ep);
}

OrtStatus* NaccEpFactory::ValidateCompiledModelCompatibilityInfoImpl(
    OrtEpFactory* self, const OrtHardwareDevice* const*, size_t, const char* compatibility_info,
    OrtCompiledModelCompatibility* compatibility) noexcept {
  auto* f = static_cast<NaccEpFactory*>(self);
  return guarded(f->api_, [&] {
    // No session options here: the nacc version and blob format are judged,
    // the hardware at Compile against the session's options (ep_context.h).
    *compatibility = check_compatibility(compatibility_info ? compatibility_info : "");
  });
}

OrtStatus* NaccEpFactory::CreateDataTransferImpl(OrtEpFactory*,
                                                 OrtDataTransferImpl** transfer) noexcept {
  *transfer = nullptr;  // host memory only: nothing to transfer
  return nullptr;
}

bool NaccEpFactory::IsStreamAwareImpl(const OrtEpFactory*) noexcept { return false; }

}  // namespace nacc::ep
