#pragma once
/// Which CUDA devices exist. Declared without CUDA headers; defined only when the build has
/// CUDA (INFEROPT_MEMORY_CUDA), like every header of this folder.

namespace inferopt::memory::cuda {

/// Number of usable CUDA devices; 0 when there is no driver or device. Never throws.
[[nodiscard]] int device_count() noexcept;

}  // namespace inferopt::memory::cuda
