#pragma once
/// Typed exceptions of the core library. Only cli/app.cpp (run_app) catches them and maps them to
/// exit codes: InputError -> 2 (bad input from the user), everything else -> 1 (internal).
#include <stdexcept>
#include <string>

namespace trident {

/// Bad input: a file, a flag or a spec the user gave. The message is one line that names
/// the input and position ("cluster.yaml:7: nvlink.kind: expected switch|mesh|none, got
/// 'swich' (did you mean 'switch'?)") and what was expected.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// What kind of spec a SpecError is about; the CLI names its flag (--fail-link, --emit).
enum class SpecKind { failure, emit };

/// Bad input in a spec string (a failure spec, a framework release): the spec and what is
/// wrong with it, without the flag that carried it. what() is "'SPEC': PROBLEM"; the CLI
/// prefixes the flag.
class SpecError : public InputError {
 public:
  SpecError(SpecKind kind, const std::string& spec, const std::string& problem)
      : InputError("'" + spec + "': " + problem), kind_(kind) {}
  [[nodiscard]] SpecKind kind() const { return kind_; }

 private:
  SpecKind kind_;
};

/// A request the planner cannot satisfy (e.g. no split of the GPUs obeys the pins).
class PlanError : public std::runtime_error {
 public:
  explicit PlanError(const std::string& message) : std::runtime_error(message) {}
};

/// A validation finding before it is placed in a file: the dotted key it concerns
/// ("nvlink.domain_gpus") and what was expected. Loaders prefix "FILE:LINE: ".
struct Problem {
  std::string key;
  std::string message;
};

}  // namespace trident
