// Boundary layout conversion between ORT's NCHW int8/uint8 tensors and the
// NHWC feature maps of a Program (NACC_SPEC §7): NCHW enters through the
// vector layout unit (scatter_vnchwconv, nchw_to_nc1hwc0) into NC1HWC0
// (C0 = 32 for 8-bit data); each C1 slab is an NHWC tensor of 32 channels, and
// the slabs are gathered (DMA row copies) into the NHWC rows the compute units
// read. Outputs take the reverse path. uint8 tensors are flipped to int8
// (x ^ 0x80 == x - 128) on the way in and back on the way out.
#pragma once

#include <cstdint>
#include <vector>

namespace nacc::ep {

// src: [N, C, H, W] 8-bit; dst: [N, H, W, C] int8. flip_sign: uint8 source.
void nchw_to_nhwc_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign);

// src: [N, H, W, C] int8; dst: [N, C, H, W] 8-bit. flip_sign: uint8 destination.
void nhwc_to_nchw_8bit(int64_t N, int64_t C, int64_t H, int64_t W, const uint8_t* src,
                       uint8_t* dst, bool flip_sign);

// Plain copy with optional sign flip (tensors of rank < 4).
void copy_8bit(int64_t bytes, const uint8_t* src, uint8_t* dst, bool flip_sign);

}  // namespace nacc::ep
