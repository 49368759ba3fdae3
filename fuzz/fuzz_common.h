#pragma once
/// Shared by the libFuzzer targets: the documented bad-input path (trident::InputError) is
/// accepted; any other exception is a bug and aborts with its message so libFuzzer records
/// the input as a crash.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <string>

#include "topology/errors.h"
#include "topology/text_check.h"

namespace trident::fuzz {

/// The fuzzer's bytes as text.
[[nodiscard]] inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// The bytes as the CLI hands them to a parser (cli/input_file.h): UTF-8 without NUL, else
/// the InputError the CLI reports. Call inside accept_input_errors.
[[nodiscard]] inline std::string as_checked_text(const std::uint8_t* data, std::size_t size,
                                                 const std::string& source) {
  std::string text = as_text(data, size);
  check_text(text, source);
  return text;
}

/// Aborts unless every value is finite: the answer's numbers (no NaN out).
inline void require_finite(std::initializer_list<double> values, const char* what) {
  for (const double value : values) {
    if (!std::isfinite(value)) {
      std::fprintf(stderr, "trident fuzz: invariant broken: %s is %g\n", what, value);
      std::abort();
    }
  }
}

/// Runs `body`; InputError is fine, anything else aborts naming what escaped.
template <typename Body>
void accept_input_errors(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
    // the documented bad-input path
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident fuzz: unexpected exception: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "trident fuzz: unexpected non-std exception\n");
    std::abort();
  }
}

/// Aborts with `what` when `ok` is false: an invariant the parser promises.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "trident fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace trident::fuzz
