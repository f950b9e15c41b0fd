#include "inferopt/pass/registry.hpp"

#include <algorithm>

namespace inferopt {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void pass_registry::add(std::string name, std::string description, factory make) {
  expects(!name.empty() && make != nullptr, "a pass needs a name and a factory");
  if (passes_.count(name)) throw error(errc::invalid_argument, "pass '" + name + "' is registered twice");
  std::string key = name;
  passes_.emplace(std::move(key), entry{std::move(name), std::move(description), std::move(make)});
}

bool pass_registry::contains(std::string_view name) const { return passes_.find(name) != passes_.end(); }

std::unique_ptr<pass> pass_registry::create(std::string_view name) const {
  auto it = passes_.find(name);
  if (it == passes_.end()) {
    std::string message = "unknown pass '" + std::string(name) + "'";
    auto close = nearest(name);
    if (!close.empty()) {
      message += "; did you mean ";
      for (std::size_t k = 0; k < close.size(); ++k) message += (k ? ", '" : "'") + close[k] + "'";
    }
    throw error(errc::invalid_argument, message);
  }
  return it->second.make();
}

std::vector<const pass_registry::entry*> pass_registry::passes() const {
  std::vector<const entry*> out;
  for (const auto& [_, e] : passes_) out.push_back(&e);
  return out;
}

void pass_registry::add_pipeline(std::string name, std::string text, std::string description) {
  std::string key = name;
  pipelines_[std::move(key)] = named_pipeline{std::move(name), std::move(text), std::move(description)};
}

const pass_registry::named_pipeline* pass_registry::find_pipeline(std::string_view name) const {
  auto it = pipelines_.find(name);
  return it == pipelines_.end() ? nullptr : &it->second;
}

std::vector<const pass_registry::named_pipeline*> pass_registry::pipelines() const {
  std::vector<const named_pipeline*> out;
  for (const auto& [_, p] : pipelines_) out.push_back(&p);
  return out;
}

std::vector<std::string> pass_registry::nearest(std::string_view name, std::size_t count) const {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& [known, _] : passes_) {
    std::size_t d = edit_distance(name, known);
    // Substring matches ("bn" in "fuse-conv-bn") count as close however long the name is.
    if (known.find(name) != std::string::npos || name.find(known) != std::string_view::npos) d = std::min<std::size_t>(d, 1);
    if (d <= std::max<std::size_t>(3, known.size() / 2)) scored.emplace_back(d, known);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < scored.size() && k < count; ++k) out.push_back(scored[k].second);
  return out;
}

}  // namespace inferopt
