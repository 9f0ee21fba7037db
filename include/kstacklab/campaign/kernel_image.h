// Kernel images by architecture: one table of the image formats a campaign boots (x86-64 bzImage,
// arm64 Image, arm64 Image.gz), each row recognising its format from the file's bytes and reading
// the kernel release. CheckPlan reads every local profile's image through ReadKernelImage; the
// image gives the profile its architecture. CONTRIBUTING.md "Adding a kernel image format".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/common/error.h"

namespace kstacklab::campaign {

// What an image is.
struct KernelImage {
  const Architecture* arch = nullptr;
  std::string format;   // the row's name: "bzImage", "Image", "Image.gz"
  std::string release;  // "6.1.0-57-amd64"; "" when the image says none (a bzImage without one)
};

// The bytes of one image file as a row sees them.
struct ImageBytes {
  std::string_view path;  // for messages (escaped by the caller's formatting)
  std::string_view head;  // the first kImageHeadBytes bytes (fewer in a shorter file)
  uint64_t size = 0;      // the file's size
  // Calls `chunk` with the file's bytes in order, from offset 0, until it returns false or the
  // file ends; RuntimeError when a read fails.
  std::function<Status(const std::function<bool(std::string_view)>& chunk)> stream;
};

inline constexpr size_t kImageHeadBytes = size_t{64} * 1024;
// The most an image is read (or, compressed, inflated) looking for its banner.
inline constexpr uint64_t kMaxImageScanBytes = uint64_t{256} << 20;

// One row: a format of one architecture. `read` gives nullopt when the bytes are not this format,
// the image's facts when they are, and a UsageError naming the image when they are this format
// but broken (cut short, no release where one must be).
struct ImageFormat {
  const char* name;  // "bzImage"
  const char* arch;  // its Architecture's name
  const char* summary;
  Expected<std::optional<KernelImage>> (*read)(const ImageBytes& image);
};

// The table, in the order an image is tried.
std::span<const ImageFormat> ImageFormats();

// "x86-64 bzImage, arm64 Image or arm64 Image.gz": the accepted formats, for messages.
std::string ImageFormatNames();

// The image at `path`: its architecture, format and release. UsageError (one line naming the
// image, what was found and the fix) for anything else: a missing file, a directory, a FIFO (never
// waited on), an empty file, an ELF vmlinux, a RISC-V Image, a PE/EFI file of no row, a gzip file
// without an arm64 Image, a truncated image, bytes of no known kind.
Expected<KernelImage> ReadKernelImage(const std::string& path);

// The release in a "Linux version 6.1.0-57-arm64 (debian-kernel@...) ..." banner at the start of
// `text`, or "" when `text` is not one (the word must be printable, at most 64 bytes).
std::string BannerRelease(std::string_view text);

}  // namespace kstacklab::campaign
