// Pipeline text: steps separated by commas; a step is `name`, `name{key=value,...}` or
// `fixpoint{max-iterations=N}(steps)`.

#include "inferopt/pass/pipeline.hpp"

#include <cctype>
#include <charconv>

namespace inferopt {
namespace {

class parser {
 public:
  parser(std::string_view text, const pass_registry& registry, const pipeline_parse_options& options)
      : text_(text), registry_(registry), options_(options) {}

  pipeline parse() {
    pipeline p;
    skip_space();
    if (at_end()) return p;
    p.steps = steps();
    skip_space();
    if (!at_end()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return p;
  }

 private:
  std::vector<pipeline_step> steps() {
    std::vector<pipeline_step> out;
    for (;;) {
      if (auto s = step()) out.push_back(std::move(*s));
      skip_space();
      if (!consume(',')) return out;
    }
  }

  std::optional<pipeline_step> step() {
    skip_space();
    const std::size_t start = pos_;
    std::string name = identifier();
    if (name.empty()) fail("expected a pass name");
    std::vector<std::pair<std::string, std::string>> opts;
    skip_space();
    if (consume('{')) opts = option_list();
    skip_space();
    if (name == "fixpoint") {
      pipeline_step group;
      for (const auto& [k, v] : opts) {
        if (k != "max-iterations") fail_at(start, "fixpoint has no option '" + k + "'");
        int n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size() || n < 1) fail_at(start, "max-iterations must be a positive integer");
        group.max_iterations = n;
      }
      if (!consume('(')) fail("expected '(' after fixpoint");
      group.group = steps();
      skip_space();
      if (!consume(')')) fail("expected ')' to close fixpoint");
      if (group.group.empty()) return std::nullopt;  // every member was disabled
      return group;
    }
    if (options_.disabled.count(name)) {
      if (!registry_.contains(name)) (void)registry_.create(name);  // still report typos
      return std::nullopt;
    }
    pipeline_step s;
    s.single = registry_.create(name);
    for (const auto& [k, v] : opts) s.single->set_option(k, v);
    return s;
  }

  std::vector<std::pair<std::string, std::string>> option_list() {
    std::vector<std::pair<std::string, std::string>> out;
    skip_space();
    if (consume('}')) return out;
    for (;;) {
      skip_space();
      std::string key = identifier();
      if (key.empty()) fail("expected an option name");
      skip_space();
      if (!consume('=')) fail("expected '=' after option '" + key + "'");
      skip_space();
      std::size_t start = pos_;
      while (!at_end() && text_[pos_] != ',' && text_[pos_] != '}') ++pos_;
      std::string value(text_.substr(start, pos_ - start));
      while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
      out.emplace_back(std::move(key), std::move(value));
      if (consume('}')) return out;
      if (!consume(',')) fail("expected ',' or '}' in options");
    }
  }

  std::string identifier() {
    std::size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
                         text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  bool consume(char c) {
    if (!at_end() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    throw error(errc::invalid_argument, "pipeline column " + std::to_string(at + 1) + ": " + what);
  }

  std::string_view text_;
  const pass_registry& registry_;
  const pipeline_parse_options& options_;
  std::size_t pos_ = 0;
};

void print(const std::vector<pipeline_step>& steps, std::string& out);

void print_step(const pipeline_step& s, std::string& out) {
  {
    if (s.is_fixpoint()) {
      out += "fixpoint";
      if (s.max_iterations != pipeline_step{}.max_iterations) out += "{max-iterations=" + std::to_string(s.max_iterations) + "}";
      out += '(';
      print(s.group, out);
      out += ')';
      return;
    }
    out += s.single->name();
    auto opts = s.single->options();
    if (opts.empty()) return;
    out += '{';
    bool first = true;
    for (const auto& [key, value] : opts) {
      out += (first ? "" : ",") + key + "=" + value;
      first = false;
    }
    out += '}';
  }
}

void print(const std::vector<pipeline_step>& steps, std::string& out) {
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (k) out += ',';
    print_step(steps[k], out);
  }
}

std::size_t count(const std::vector<pipeline_step>& steps) {
  std::size_t n = 0;
  for (const auto& s : steps) n += s.is_fixpoint() ? count(s.group) : 1;
  return n;
}

}  // namespace

std::string to_string(const std::vector<pipeline_step>& steps) {
  std::string out;
  print(steps, out);
  return out;
}

std::string to_string(const pipeline_step& step) {
  std::string out;
  print_step(step, out);
  return out;
}

std::string pipeline::to_string() const { return inferopt::to_string(steps); }

std::size_t pipeline::pass_count() const { return count(steps); }

pipeline parse_pipeline(std::string_view text, const pass_registry& registry, const pipeline_parse_options& options) {
  return parser(text, registry, options).parse();
}

pipeline level_pipeline(int level, const pass_registry& registry, const pipeline_parse_options& options) {
  if (level < 0 || level > 3) throw error(errc::invalid_argument, "optimization level must be 0..3, got " + std::to_string(level));
  const auto* named = registry.find_pipeline("O" + std::to_string(level));
  if (!named) throw error(errc::invalid_argument, "no pipeline is registered for -O" + std::to_string(level));
  return parse_pipeline(named->text, registry, options);
}

}  // namespace inferopt
