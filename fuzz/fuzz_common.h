#pragma once
/// Shared by the libFuzzer targets: the documented bad-input path (trident::InputError) is
/// accepted; any other exception is a bug and aborts with its message so libFuzzer records
/// the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "topology/errors.h"

namespace trident::fuzz {

/// The fuzzer's bytes as text.
[[nodiscard]] inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
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
