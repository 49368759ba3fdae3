#pragma once
// Shared helpers of the validate/ tests (test_validate.cpp, test_validate_fp8.cpp,
// test_nccl_tests.cpp): a file of tests/data/, and the message of an InputError.
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "topology/errors.h"

namespace trident::test {

/// The text of tests/data/NAME.
inline std::string data(const std::string& name) {
  std::ifstream in(std::string(TRIDENT_SOURCE_DIR) + "/tests/data/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The InputError `fn` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace trident::test
