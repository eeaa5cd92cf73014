// Bindings of the lossless weight codec (NACC_SPEC §6): compress/decompress an
// int8 buffer and report every mode's size, so Python tests and reports see
// exactly what the compiler stores and the device's DMA reads.
#include <pybind11/numpy.h>

#include <cstring>
#include <string>

#include "arch/weight_codec.h"
#include "bindings/binding.h"
#include "compiler/weight_codec.h"

namespace py = pybind11;
namespace wc = nacc::weight_codec;

namespace {

std::optional<wc::Mode> parse_mode(const std::string& mode) {
  if (mode == "auto") return std::nullopt;
  if (mode == "raw") return wc::Mode::kRaw;
  if (mode == "zrun_rice") return wc::Mode::kZrunRice;
  if (mode == "lut") return wc::Mode::kLut;
  throw py::value_error("compress_weights: mode must be 'auto', 'raw', 'zrun_rice' or 'lut', got '" +
                        mode + "'");
}

}  // namespace

NACC_BINDINGS(codec) {
  m.def(
      "compress_weights",
      [](const py::array& array, const std::string& mode) {
        auto a = nacc::bindings::checked_array<int8_t>(array, "compress_weights: array");
        const std::optional<wc::Mode> m = parse_mode(mode);
        std::vector<uint8_t> stream;
        {
          py::gil_scoped_release release;
          stream = wc::encode(a.data(), static_cast<size_t>(a.size()), m);
        }
        return py::bytes(reinterpret_cast<const char*>(stream.data()), stream.size());
      },
      py::arg("array"), py::arg("mode") = "auto",
      "Losslessly compress an int8 array (any shape, read in C order) into a weight stream "
      "(docs/weight_compression.md). mode: 'auto' (smallest; ties go to the simpler mode), "
      "'raw', 'zrun_rice' or 'lut'.");
  m.def(
      "decompress_weights",
      [](const py::bytes& stream, py::ssize_t count) {
        if (count < 0 || static_cast<uint64_t>(count) > 0xFFFFFFFFull) {
          throw py::value_error("decompress_weights: count " + std::to_string(count) +
                                " out of range [0, 4294967295]");
        }
        std::string_view bytes = stream;
        py::array_t<int8_t> out(count);
        int8_t* dst = out.mutable_data();
        {
          py::gil_scoped_release release;
          wc::decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), dst,
                     static_cast<size_t>(count));
        }
        return out;
      },
      py::arg("stream"), py::arg("count"),
      "Decode a weight stream into a 1-D int8 array of exactly `count` elements. Raises "
      "ValueError when the stream is malformed, truncated, holds another count, or fails its "
      "CRC-32C.");
  m.def(
      "weight_codec_sizes",
      [](const py::array& array) {
        auto a = nacc::bindings::checked_array<int8_t>(array, "weight_codec_sizes: array");
        wc::ModeSizes sizes;
        {
          py::gil_scoped_release release;
          sizes = wc::encoded_sizes(a.data(), static_cast<size_t>(a.size()));
        }
        py::dict d;
        d["raw"] = sizes.raw;
        d["zrun_rice"] = sizes.zrun_rice;
        d["lut"] = sizes.lut;
        d["auto"] = sizes.of(wc::choose(sizes));
        d["chosen"] = wc::mode_name(wc::choose(sizes));
        return d;
      },
      py::arg("array"),
      "Stream bytes (header included) of every mode for this int8 array: {'raw', 'zrun_rice', "
      "'lut', 'auto': bytes, 'chosen': mode name}.");
  m.def(
      "weight_stream_info",
      [](const py::bytes& stream) {
        std::string_view bytes = stream;
        const wc::StreamHeader h =
            wc::parse_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        py::dict d;
        d["mode"] = wc::mode_name(h.mode);
        d["count"] = h.count;
        d["crc32c"] = h.crc32c;
        d["lut_size"] = h.lut_size;
        d["payload_offset"] = h.payload_offset;
        return d;
      },
      py::arg("stream"),
      "The parsed header of a weight stream: mode, element count, CRC-32C, palette size, "
      "payload offset.");
  m.def(
      "crc32c",
      [](const py::bytes& data) {
        std::string_view bytes = data;
        return wc::crc32c(bytes.data(), bytes.size());
      },
      py::arg("data"), "CRC-32C (Castagnoli) of a bytes object, as stored in weight streams.");
}
