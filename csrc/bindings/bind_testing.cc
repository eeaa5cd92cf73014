// Bindings of the test-only fault injection of the runtime (runtime.h,
// nacc::testing::inject_faults; docs/reliability.md) and of the cache-key
// SHA-256 (both implementations, checked against hashlib) and Digest128 (checked
// against tests/test_digest128.py's Python definition). Underscore-named: not API.
#include "bindings/binding.h"
#include "runtime/runtime.h"
#include "support/digest128.h"
#include "support/sha256.h"

NACC_BINDINGS(testing) {
  m.def(
      "_test_inject_fault",
      [](const std::string& kind, int64_t command, int runs) {
        nacc::testing::inject_faults(nacc::testing::fault_kind_by_name(kind), command, runs);
      },
      pybind11::arg("kind"), pybind11::arg("command") = 0, pybind11::arg("runs") = 1,
      "Test only: the next `runs` Runtime.run calls of nacc._core fault. kind 'bus_error': a bus "
      "read error before the `command`-th executed command; 'dma_overrun': the first output "
      "buffer is bound `command` bytes short, so the DMA writing its tail overruns it; 'none' "
      "disarms.");
  m.def("_test_sha_ni_available", &nacc::support::Sha256::sha_ni_available,
        "Test only: the cache keys' SHA-256 uses the CPU's SHA extensions.");
  m.def(
      "_test_sha256",
      [](const pybind11::bytes& data, const std::string& impl, size_t chunk) {
        using nacc::support::Sha256;
        const std::string s = data;
        Sha256 h(impl == "scalar"   ? Sha256::Impl::kScalar
                 : impl == "sha_ni" ? Sha256::Impl::kShaNi
                                    : Sha256::Impl::kAuto);
        for (size_t at = 0; at < s.size(); at += chunk) {
          h.update(s.data() + at, std::min(chunk, s.size() - at));
        }
        return h.hex_digest();
      },
      pybind11::arg("data"), pybind11::arg("impl") = "auto", pybind11::arg("chunk") = 1 << 20,
      "Test only: hex SHA-256 of `data` fed in `chunk`-byte updates with the 'scalar', 'sha_ni' "
      "or 'auto' implementation.");
  m.def(
      "_test_digest128",
      [](const pybind11::bytes& data, size_t chunk) {
        const std::string s = data;
        nacc::support::Digest128 h;
        for (size_t at = 0; at < s.size(); at += chunk) {
          h.update(s.data() + at, std::min(chunk, s.size() - at));
        }
        return h.hex_digest();
      },
      pybind11::arg("data"), pybind11::arg("chunk") = 1 << 20,
      "Test only: hex support::Digest128 (the cache keys' digest) of `data` fed in `chunk`-byte "
      "updates.");
}
