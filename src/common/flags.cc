#include "common/flags.h"

#include <cstdio>
#include <optional>

#include "common/units.h"

namespace xpool {
namespace {

// How a flag is written: "-o" for one letter, "--listen" otherwise.
std::string Spelled(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

}  // namespace

FlagSet::FlagSet(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void FlagSet::String(std::string name, std::string* target, std::string help) {
  flags_.push_back({std::move(name), Kind::kString, target, std::move(help)});
}
void FlagSet::Int(std::string name, int64_t* target, std::string help) {
  flags_.push_back({std::move(name), Kind::kInt, target, std::move(help)});
}
void FlagSet::Bool(std::string name, bool* target, std::string help) {
  flags_.push_back({std::move(name), Kind::kBool, target, std::move(help)});
}
void FlagSet::Repeated(std::string name, std::vector<std::string>* target, std::string help) {
  flags_.push_back({std::move(name), Kind::kRepeated, target, std::move(help)});
}

FlagSet::Flag* FlagSet::Find(std::string_view name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FlagSet::WasSet(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.set;
  }
  return false;
}

Status FlagSet::Assign(Flag& flag, std::string_view value) {
  flag.set = true;
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.target) = std::string(value);
      return Status::Ok();
    case Kind::kRepeated:
      static_cast<std::vector<std::string>*>(flag.target)->emplace_back(value);
      return Status::Ok();
    case Kind::kInt: {
      bool negative = !value.empty() && value.front() == '-';
      auto parsed = ParseNonNegativeInt(negative ? value.substr(1) : value);
      if (!parsed.ok()) {
        return InvalidArgumentError(Spelled(flag.name) + ": \"" + std::string(value) + "\" is not an integer");
      }
      *static_cast<int64_t*>(flag.target) = negative ? -*parsed : *parsed;
      return Status::Ok();
    }
    case Kind::kBool:
      if (value == "true" || value == "1" || value.empty()) {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return InvalidArgumentError(Spelled(flag.name) + ": \"" + std::string(value) + "\" is not true/false");
      }
      return Status::Ok();
  }
  return InternalError("unknown flag kind");
}

Status FlagSet::Parse(const std::vector<std::string>& args) {
  positional_.clear();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional_.insert(positional_.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg == "--help" || arg == "-h") return FailedPreconditionError(Usage());
    std::string_view name;
    std::optional<std::string_view> value;  // given in the same argument: --name=value, -ovalue, -o=value
    if (arg.size() >= 3 && arg.compare(0, 2, "--") == 0) {
      std::string_view body(arg);
      body.remove_prefix(2);
      const size_t eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string_view::npos) value = body.substr(eq + 1);
    } else if (arg.size() >= 2 && arg[0] == '-' && Find(std::string_view(arg).substr(1, 1)) != nullptr) {
      name = std::string_view(arg).substr(1, 1);  // a one-letter flag: -o wide, -owide, -o=wide
      if (arg.size() > 2) value = std::string_view(arg).substr(arg[2] == '=' ? 3 : 2);
    } else {
      positional_.push_back(arg);
      continue;
    }
    Flag* flag = Find(name);
    if (flag == nullptr) return InvalidArgumentError("unknown flag --" + std::string(name));
    if (value) {
      RETURN_IF_ERROR(Assign(*flag, *value));
    } else if (flag->kind == Kind::kBool) {
      RETURN_IF_ERROR(Assign(*flag, ""));
    } else {
      if (i + 1 >= args.size()) return InvalidArgumentError("flag " + Spelled(flag->name) + " needs a value");
      RETURN_IF_ERROR(Assign(*flag, args[++i]));
    }
  }
  return Status::Ok();
}

std::string FlagSet::Usage() const {
  std::string out = "usage: " + command_ + " [flags]\n" + summary_ + "\n";
  if (!flags_.empty()) out += "\nflags:\n";
  for (const Flag& f : flags_) {
    std::string left = "  " + Spelled(f.name);
    if (f.kind != Kind::kBool) left += " VALUE";
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + f.help + "\n";
  }
  return out;
}

bool ParseFlagsOrExit(FlagSet& flags, const std::vector<std::string>& args, int* exit_code) {
  Status s = flags.Parse(args);
  if (s.ok()) return true;
  if (s.code() == StatusCode::kFailedPrecondition) {
    std::fputs(s.message().c_str(), stdout);
    *exit_code = 0;
  } else {
    std::fprintf(stderr, "error: %s\n\n%s", s.message().c_str(), flags.Usage().c_str());
    *exit_code = 2;
  }
  return false;
}

}  // namespace xpool
