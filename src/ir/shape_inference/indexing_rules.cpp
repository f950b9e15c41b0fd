// Gather, Scatter and ops whose output depends on the data (NonZero, Compress).

#include "inference_context.hpp"

namespace inferopt::ir::shape_inference_detail {
namespace {

using namespace shape_rules;

/// Gather; on a tracked shape vector it also picks the elements (Shape -> Gather).
void gather(inference_context& ctx) {
  const sym_shape* data = ctx.dims(0);
  const sym_shape* indices = ctx.dims(1);
  if (!data || !indices) return ctx.set_output_like(0, 0, std::nullopt);
  const std::int64_t axis = ctx.node().attr_int("axis", 0);
  value_facts out{ctx.input(0).elem, gather_shape<sym_dim>(*data, *indices, axis), std::nullopt};
  const auto& values = ctx.input(0).values;
  const auto picks = ctx.ints(1);
  if (values && data->size() == 1 && picks) {
    std::vector<sym_dim> picked;
    const auto n = static_cast<std::int64_t>(values->size());
    for (std::int64_t i : *picks) {
      if (i < -n || i >= n) ctx.fail("index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " elements");
      picked.push_back((*values)[i < 0 ? i + n : i]);
    }
    out.values = std::move(picked);
  }
  ctx.set_output(0, std::move(out));
}

/// GatherElements: the indices' shape.
void gather_elements(inference_context& ctx) { ctx.set_output_like(0, 0, ctx.input(1).dims); }

/// GatherND: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:].
void gather_nd(inference_context& ctx) {
  const sym_shape* data = ctx.dims(0);
  const sym_shape* indices = ctx.dims(1);
  if (!data || !indices || indices->empty()) return ctx.set_output_like(0, 0, std::nullopt);
  const auto last = indices->back().constant();
  const std::int64_t batch_dims = ctx.node().attr_int("batch_dims", 0);
  if (!last) return ctx.set_output_like(0, 0, std::nullopt);
  if (batch_dims < 0 || batch_dims + *last > static_cast<std::int64_t>(data->size())) ctx.fail("indices address more axes than data has");
  sym_shape out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + batch_dims + *last, data->end());
  ctx.set_output_like(0, 0, std::move(out));
}

/// NonZero: [rank, count]; the count is the data's to decide.
void non_zero(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  if (!in) return ctx.set_output(0, value_facts{data_type::int64, sym_shape{sym_dim{}, ctx.data_dependent_dim(0, 1)}, std::nullopt});
  ctx.set_output(0, value_facts::of(data_type::int64, {static_cast<std::int64_t>(in->size()), ctx.data_dependent_dim(0, 1)}));
}

/// Compress: along `axis` (or flattened) as many elements as the condition selects.
void compress(inference_context& ctx) {
  const sym_shape* in = ctx.dims(0);
  const attribute* axis = ctx.node().find_attribute("axis");
  if (!axis) return ctx.set_output_like(0, 0, sym_shape{ctx.data_dependent_dim(0, 0)});
  if (!in) return ctx.set_output_like(0, 0, std::nullopt);
  sym_shape out = *in;
  const std::int64_t a = normalize_axis(axis->i, static_cast<std::int64_t>(in->size()));
  out[a] = ctx.data_dependent_dim(0, static_cast<std::size_t>(a));
  ctx.set_output_like(0, 0, std::move(out));
}

/// OneHot: indices' shape with `depth` inserted at `axis`.
void one_hot(inference_context& ctx) {
  const sym_shape* indices = ctx.dims(0);
  if (!indices) return ctx.set_output_like(0, 2, std::nullopt);
  const auto depth = ctx.input(1).values;
  const auto rank = static_cast<std::int64_t>(indices->size() + 1);
  std::int64_t axis = ctx.node().attr_int("axis", -1);
  axis = normalize_axis(axis, rank);
  sym_shape out = *indices;
  out.insert(out.begin() + axis, depth && depth->size() == 1 ? (*depth)[0] : sym_dim{});
  ctx.set_output_like(0, 2, std::move(out));
}

/// EyeLike: the input's shape, in `dtype` when given.
void eye_like(inference_context& ctx) {
  const attribute* dtype = ctx.node().find_attribute("dtype");
  ctx.set_output(0, value_facts{dtype ? static_cast<data_type>(dtype->i) : ctx.input(0).elem, ctx.input(0).dims, std::nullopt});
}

void first_input_shape(inference_context& ctx) { ctx.set_output_like(0, 0, ctx.input(0).dims); }

}  // namespace

void register_indexing_rules(rule_table& t) {
  t["Gather"] = gather;
  t["GatherElements"] = gather_elements;
  t["GatherND"] = gather_nd;
  for (const char* op : {"Scatter", "ScatterElements", "ScatterND", "CumSum", "Trilu"}) t[op] = first_input_shape;
  t["NonZero"] = non_zero;
  t["Compress"] = compress;
  t["OneHot"] = one_hot;
  t["EyeLike"] = eye_like;
}

}  // namespace inferopt::ir::shape_inference_detail
