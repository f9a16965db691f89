// Commands whose issue has not landed yet say so plainly and exit 1.
#pragma once

#include <iostream>

namespace qvl::cli {

inline int not_yet(const char* name, const char* issue) {
  std::cerr << "qvl " << name << ": not available yet (" << issue << "); see README.md for what works today\n";
  return 1;
}

}  // namespace qvl::cli
