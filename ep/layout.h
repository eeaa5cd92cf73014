// Boundary layout conversion between ORT's NCHW int8/uint8 tensors and the
// NHWC feature maps of a Program: one blocked transpose per tensor, no
// intermediate buffer (the cost of a copy). uint8 tensors are flipped to int8
// (x ^ 0x80 == x - 128) on the way in and back on the way out. By default the
// Programs convert their int8 / uint8 boundary tensors themselves on the
// device's layout unit (NACC_SPEC §7; ep/capability.cc build_partition,
// docs/onnxruntime_ep.md "Layout and types") and only copy_8bit runs here;
// the transposes serve int16 tensors, batches above 1, boundary_layout=host
// and EP context blobs compiled before.
#pragma once

#include <cstdint>

namespace nacc::ep {

// src: [N, C, H, W] 8-bit; dst: [N, H, W, C] int8. flip_sign: uint8 source.
void nchw_to_nhwc_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign);

// src: [N, H, W, C] int8; dst: [N, C, H, W] 8-bit. flip_sign: uint8 destination.
void nhwc_to_nchw_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign);

// The same for 2-byte (int16) elements: src [N, C, H, W] -> dst [N, H, W, C] and back.
void nchw_to_nhwc_16bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                        uint8_t* dst);
void nhwc_to_nchw_16bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                        uint8_t* dst);

// Plain copy with optional sign flip (tensors of rank < 4).
void copy_8bit(int64_t bytes, const uint8_t* src, uint8_t* dst, bool flip_sign);

}  // namespace nacc::ep
