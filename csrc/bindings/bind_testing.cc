// Bindings of the test-only fault injection of the runtime (runtime.h,
// nacc::testing::inject_faults; docs/reliability.md). Underscore-named: not API.
#include "bindings/binding.h"
#include "runtime/runtime.h"

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
}
