#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs size_t and FILE declared first
#include <cstdlib>

#include <jpeglib.h>

#include "image/encode.h"
#include "util/error.h"

namespace qvl {
namespace {

// libjpeg reports errors by calling error_exit, which must not return: jump
// back to encode_jpeg with the message, as the decoder does.
struct ErrorJump {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorJump*>(cinfo->err);
  e->mgr.format_message(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  if (image.width <= 0 || image.height <= 0 || image.width > JPEG_MAX_DIMENSION || image.height > JPEG_MAX_DIMENSION)
    fail("encode_jpeg: an image of ", image.width, " x ", image.height, " px cannot be a JPEG (1 to ",
         JPEG_MAX_DIMENSION, " px a side)");
  if (image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
    fail("encode_jpeg: image ", image.width, " x ", image.height, " has ", image.rgb.size(),
         " bytes, not width*height*3");
  if (quality < 1 || quality > 100) fail("encode_jpeg: quality ", quality, " is outside 1..100");

  jpeg_compress_struct cinfo{};
  ErrorJump err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_error;
  // Written by libjpeg (jpeg_mem_dest grows it with malloc), freed here.
  // volatile: read after a longjmp.
  unsigned char* volatile out = nullptr;
  unsigned long volatile out_size = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(out);
    fail("encode_jpeg: ", err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, const_cast<unsigned char**>(&out), const_cast<unsigned long*>(&out_size));
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(image.width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.rgb.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> bytes(out, out + out_size);
  std::free(out);
  return bytes;
}

}  // namespace qvl
