// A look at a PDF's bytes before Poppler parses them: the counts its
// structure declares, which Poppler allocates for up front.
//
// Poppler sizes its cross-reference table (~40 bytes an entry) to the largest
// object number it is told of: the trailer's or an xref stream's /Size, an
// xref section's "first count" header, an xref stream's /Index pairs, and,
// when it reconstructs a damaged file, every "N G obj" it finds. An object
// stream's /N sizes an array the same way. A 1.3 KB file declaring object
// 7,000,000 made it allocate 282 MB and spend 2.6 s (found by fuzz_pdf), so
// these numbers are bounded before any parsing: legitimate documents number
// their objects densely from 1, and a file of tens of thousands of pages has
// a few hundred thousand.
#pragma once

#include <cstdint>
#include <span>

namespace qvl {

// Throws qvl::Error naming the value, where it was declared and its byte
// offset when one of the counts above passes max_objects.
void check_pdf_object_counts(std::span<const uint8_t> bytes, int64_t max_objects);

}  // namespace qvl
