// JPEG via libjpeg-turbo: YCbCr, RGB, grey, CMYK and YCCK; EXIF orientation;
// optional DCT-domain downscaling (DecodeHint).
// libjpeg reports errors by longjmp: the functions that call setjmp hold only
// trivially destructible locals and every C++ object lives in decode_jpeg, so
// no destructor is skipped; the decompressor itself is freed by a guard.
#include <cstdio>
#include <jpeglib.h>
#include <jerror.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <vector>

#include "image/decoders.h"
#include "image/preprocess.h"
#include "util/error.h"

namespace qvl::image_detail {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg casts cinfo->err to this
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
  // What on_progress enforces (DecodeLimits::max_jpeg_scans, max_seconds).
  int max_scans;
  const DecodeDeadline* deadline;
  bool over_limit;  // stopped by on_progress: not corrupt, refused
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// libjpeg only warns when the data ends early (and pads the rest with grey).
// A service should reject a clearly truncated upload rather than describe a
// half-grey picture, so that warning becomes an error; the other warnings
// (e.g. stray bytes before a marker, common in camera files) are tolerated.
void on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    reinterpret_cast<ErrorManager*>(cinfo->err)->truncated = true;
    on_error(cinfo);
  }
}

// libjpeg calls the progress monitor once per MCU row (libjpeg.txt,
// "Progress monitoring"), also while jpeg_start_decompress absorbs a
// multi-scan file into its coefficient buffer: the place to stop a file
// with too many scans, or one that takes too long, within a row of work.
void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (d->input_scan_number > e->max_scans) {
    e->over_limit = true;
    std::snprintf(e->message, sizeof e->message, "more than %d progressive scans (the limit)", e->max_scans);
    std::longjmp(e->jump, 1);
  }
  if (e->deadline->passed()) {
    e->over_limit = true;
    std::snprintf(e->message, sizeof e->message, "decoding took over the limit of %g s", e->deadline->seconds());
    std::longjmp(e->jump, 1);
  }
}

bool create(j_decompress_ptr cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return false;  // out of memory while creating
  jpeg_create_decompress(cinfo);
  return true;
}

bool read_header(j_decompress_ptr cinfo, ErrorManager* err, const uint8_t* data, size_t size) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(cinfo, TRUE);
  return true;
}

bool compute_output(j_decompress_ptr cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return false;
  jpeg_calc_output_dimensions(cinfo);
  return true;
}

bool read_pixels(j_decompress_ptr cinfo, ErrorManager* err, uint8_t* out, size_t stride) {
  if (setjmp(err->jump)) return false;
  jpeg_start_decompress(cinfo);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + cinfo->output_scanline * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

void abort_quietly(j_decompress_ptr cinfo, ErrorManager* err) {
  if (setjmp(err->jump)) return;
  jpeg_abort_decompress(cinfo);
}

struct JpegGuard {
  jpeg_decompress_struct* cinfo;
  ~JpegGuard() { jpeg_destroy_decompress(cinfo); }
};

// Largest power-of-two reduction (libjpeg-turbo has fast IDCTs for 1/2, 1/4,
// 1/8) that keeps >= min_ratio x the preprocessing target on both sides.
int scale_denominator(int width, int height, const DecodeHint& hint) {
  if (hint.factor <= 0 || hint.max_pixels <= 0) return 1;
  ResizedSize target;
  try {
    target = smart_resize(height, width, hint.factor, hint.min_pixels, hint.max_pixels);
  } catch (const Error&) {
    return 1;  // preprocess will report the problem
  }
  for (int d = 8; d >= 2; d /= 2) {
    const double w = (width + d - 1) / d, h = (height + d - 1) / d;
    if (w >= hint.min_ratio * target.width && h >= hint.min_ratio * target.height) return d;
  }
  return 1;
}

// What the decode below holds at its peak: libjpeg's whole-image coefficient
// buffer when the file has several scans (one JBLOCK of 64 coefficients per
// 8x8 block of each component), the output rows, the CMYK-to-RGB copy and
// the rotated copy EXIF orientation makes.
uint64_t peak_bytes(j_decompress_ptr cinfo, bool cmyk, int orientation) {
  const uint64_t out = uint64_t{cinfo->output_width} * cinfo->output_height;
  uint64_t bytes = out * static_cast<uint64_t>(cinfo->output_components);
  if (cmyk) bytes += out * 3;
  if (orientation != 1) bytes += out * 3;
  if (jpeg_has_multiple_scans(cinfo))
    for (int c = 0; c < cinfo->num_components; ++c) {
      const jpeg_component_info& comp = cinfo->comp_info[c];
      // Rows and columns of blocks rounded up to whole MCUs, as libjpeg allocates them.
      const uint64_t cols = (comp.width_in_blocks + comp.h_samp_factor) / comp.h_samp_factor * comp.h_samp_factor;
      const uint64_t rows = (comp.height_in_blocks + comp.v_samp_factor) / comp.v_samp_factor * comp.v_samp_factor;
      bytes += cols * rows * sizeof(JBLOCK);
    }
  return bytes;
}

inline uint8_t mul255(uint32_t a, uint32_t b) {  // round(a * b / 255)
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

}  // namespace

Image decode_jpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits, const DecodeHint& hint) {
  jpeg_decompress_struct cinfo{};  // zeroed: destroying it is safe whatever happens below
  ErrorManager err;
  std::memset(&err, 0, sizeof err);
  const DecodeDeadline deadline(limits);
  err.max_scans = limits.max_jpeg_scans;
  err.deadline = &deadline;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  JpegGuard guard{&cinfo};
  if (!create(&cinfo, &err)) fail("JPEG: cannot create the decoder: ", err.message);
  jpeg_progress_mgr progress{};
  progress.progress_monitor = on_progress;
  cinfo.progress = &progress;

  auto failed = [&](const char* stage) {
    if (err.truncated) fail("truncated JPEG: the data ends before the ", stage, " is complete (", bytes.size(), " bytes)");
    if (err.over_limit) fail("JPEG refused: ", err.message);
    fail("corrupt JPEG (", stage, "): ", err.message);
  };
  if (!read_header(&cinfo, &err, bytes.data(), bytes.size())) failed("header");
  check_dimensions(cinfo.image_width, cinfo.image_height, limits, "JPEG");

  int orientation = 1;
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1) {
      const int o = exif_orientation({m->data, m->data_length});
      if (o != 1) orientation = o;
    }
  }

  // A progressive JPEG keeps every DCT coefficient in memory (up to 6 bytes
  // per pixel at 4:4:4); bound libjpeg's own allocations by the pixel limit.
  cinfo.mem->max_memory_to_use =
      static_cast<long>(std::min<uint64_t>(limits.max_decoded_pixels * 8 + (64u << 20), 1ull << 40));

  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = scale_denominator(cinfo.image_width, cinfo.image_height, hint);
  if (!compute_output(&cinfo, &err)) failed("header");
  const int comps = cinfo.output_components;
  if (comps != (cmyk ? 4 : 3)) fail("JPEG: unexpected ", comps, " output components");
  reserve_memory(limits, peak_bytes(&cinfo, cmyk, orientation));

  const size_t w = cinfo.output_width, h = cinfo.output_height;
  std::vector<uint8_t> buf(w * h * comps);
  if (!read_pixels(&cinfo, &err, buf.data(), w * comps)) {
    abort_quietly(&cinfo, &err);
    failed("image data");
  }

  Image img;
  img.width = static_cast<int>(w);
  img.height = static_cast<int>(h);
  if (cinfo.scale_denom != 1) {
    img.full_width = static_cast<int>(cinfo.image_width);
    img.full_height = static_cast<int>(cinfo.image_height);
    img.scale_denom = static_cast<int>(cinfo.scale_denom);
  }
  if (!cmyk) {
    img.rgb = std::move(buf);
  } else {
    // Adobe (Photoshop) CMYK JPEGs store inverted ink values; with the inks
    // k' = 255 - k the naive conversion is R = (255 - C)(255 - K) / 255.
    const bool inverted = cinfo.saw_Adobe_marker;
    img.rgb.resize(w * h * 3);
    const uint8_t* s = buf.data();
    uint8_t* d = img.rgb.data();
    for (size_t i = 0; i < w * h; ++i, s += 4, d += 3) {
      const uint32_t k = inverted ? s[3] : 255 - s[3];
      for (int c = 0; c < 3; ++c) d[c] = mul255(inverted ? s[c] : 255 - s[c], k);
    }
  }
  return apply_orientation(std::move(img), orientation);
}

}  // namespace qvl::image_detail
