// Files <-> models: parsing with protobuf's streaming reader (the weights are read once and
// moved into the IR, never copied), and atomic saving through a temporary file.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "graph_access.hpp"
#include "inferopt/core/atomic_file.hpp"
#include "inferopt/ir/serialize.hpp"
#include "proto_bridge.hpp"
#include "unknown_fields.hpp"

namespace inferopt::ir {
namespace {

namespace fs = std::filesystem;

void check_model_message(const onnx::ModelProto& mp, const std::string& subject) {
  if (!mp.has_ir_version()) throw error(errc::invalid_model, subject + ": not an ONNX model (no ir_version)");
  if (!mp.has_graph()) throw error(errc::invalid_model, subject + ": model has no graph");
  try {
    detail::check_unknown_fields(mp);
  } catch (const error& e) {
    throw error(e.code(), subject + ": " + e.what());
  }
}

/// Buffer size for file streams. Protobuf's default (8 KiB) costs one system call per 8 KiB;
/// 64 KiB parsed a 100 MB model ~15% faster, and 1 MiB (no longer fitting in L2) was slower
/// again (measured with benchmarks/ir/load_save_bench.cpp's model).
constexpr int file_block_size = 64 << 10;

bool parse_stream(google::protobuf::io::ZeroCopyInputStream& raw, onnx::ModelProto& mp) {
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  return mp.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

model finish(onnx::ModelProto& mp, const std::string& subject, const fs::path& base, const load_options& options) {
  check_model_message(mp, subject);
  try {
    return detail::model_from_proto(mp, detail::external_source{base, options.load_external_data});
  } catch (const error& e) {
    throw error(e.code(), subject + ": " + e.what());
  }
}

/// The protobuf wire format cannot hold a message over 2 GiB.
constexpr std::size_t protobuf_limit = (std::size_t{1} << 31) - (std::size_t{64} << 20);

std::size_t total_tensor_bytes(const graph& g) {
  std::size_t total = 0;
  for (value* v : g.initializers()) total += v->initializer()->byte_size();
  for (node* n : g.nodes()) {
    for (const attribute& a : n->attributes()) {
      for (const tensor& t : a.tensors) total += t.byte_size();
      for (const auto& sub : a.graphs) total += total_tensor_bytes(*sub);
    }
  }
  return total;
}

}  // namespace

model parse_model(std::string_view bytes, const fs::path& base_dir, const load_options& options) {
  if (bytes.empty()) throw error(errc::invalid_model, "model: empty input");
  onnx::ModelProto mp;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(std::min<std::size_t>(bytes.size(), INT_MAX)));
  if (bytes.size() > INT_MAX || !parse_stream(raw, mp)) {
    throw error(errc::invalid_model, "model: cannot parse as an ONNX protobuf (truncated or not a model)");
  }
  return finish(mp, "model", base_dir, options);
}

model load_model(const fs::path& path, const load_options& options) {
  const std::string subject = path.filename().string();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw error(errc::io, path.string() + ": no such file");
  if (fs::is_directory(path, ec)) throw error(errc::io, path.string() + ": is a directory, not a model file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw error(errc::io, path.string() + ": cannot open (" + std::strerror(errno) + ")");
  onnx::ModelProto mp;
  bool ok = false;
  {
    google::protobuf::io::FileInputStream raw(fd, file_block_size);
    raw.SetCloseOnDelete(true);
    if (fs::file_size(path, ec) == 0) throw error(errc::invalid_model, subject + ": empty file");
    ok = parse_stream(raw, mp);
  }
  if (!ok) throw error(errc::invalid_model, subject + ": cannot parse as an ONNX protobuf (truncated or not a model)");
  fs::path base = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  return finish(mp, subject, base, options);
}

std::string serialize_model(const model& m) {
  onnx::ModelProto mp;
  detail::model_to_proto(m, mp, [](const tensor&, onnx::TensorProto&) { return true; });
  if (mp.ByteSizeLong() > protobuf_limit) {
    throw error(errc::unsupported, "model is over protobuf's 2 GB limit; save it with external data");
  }
  std::string out;
  mp.SerializeToString(&out);
  return out;
}

void save_model(const model& m, const fs::path& path, const save_options& options) {
  std::optional<std::size_t> threshold = options.external_data_threshold;
  if (!threshold && total_tensor_bytes(m.graph()) > protobuf_limit) threshold = 1024;

  const std::string data_name =
      options.external_data_file.empty() ? path.filename().string() + ".data" : options.external_data_file;
  expects(fs::path(data_name).filename() == fs::path(data_name), "external data file must be a plain file name");
  std::optional<atomic_file> data_file;
  std::uint64_t data_offset = 0;
  const fs::path data_path = path.parent_path() / data_name;

  auto sink = [&](const tensor& t, onnx::TensorProto& p) {
    if (!threshold || t.byte_size() < *threshold || t.byte_size() == 0) return true;
    if (!data_file) data_file.emplace(data_path);
    constexpr std::uint64_t alignment = 4096;  // lets readers mmap each tensor page-aligned
    std::uint64_t padded = (data_offset + alignment - 1) / alignment * alignment;
    data_file->write(std::string(padded - data_offset, '\0'));
    data_file->write(*t.bytes);
    p.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* kv = p.add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", data_name);
    add("offset", std::to_string(padded));
    add("length", std::to_string(t.bytes->size()));
    data_offset = padded + t.bytes->size();
    return false;
  };

  onnx::ModelProto mp;
  detail::model_to_proto(m, mp, sink, options.value_info == value_info_policy::as_loaded);
  if (mp.ByteSizeLong() > protobuf_limit) {
    throw error(errc::unsupported, path.string() + ": model is over protobuf's 2 GB limit even with external data");
  }
  atomic_file out(path);
  {
    google::protobuf::io::FileOutputStream stream(out.fd(), file_block_size);
    bool ok = false;
    {
      // With aliasing, protobuf hands strings longer than the buffer (the weights' raw_data)
      // straight to write(2) instead of copying them through the buffer first. The bytes are
      // the same; saving a 100 MB model spends about half as long in write.
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.EnableAliasing(true);
      ok = mp.SerializeToCodedStream(&coded) && !coded.HadError();
    }
    if (!ok || !stream.Flush()) {
      throw error(errc::io, path.string() + ": cannot write output");
    }
  }
  if (data_file) data_file->commit();
  out.commit();
}

std::string canonicalize_model_bytes(std::string_view bytes) {
  onnx::ModelProto mp;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  if (!parse_stream(raw, mp)) throw error(errc::invalid_model, "cannot parse model bytes");
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    mp.SerializeToCodedStream(&coded);
  }
  return out;
}

tensor parse_tensor(std::string_view bytes) {
  onnx::TensorProto tp;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(std::min<std::size_t>(bytes.size(), INT_MAX)));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > INT_MAX || !tp.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    throw error(errc::invalid_model, "cannot parse as an ONNX TensorProto");
  }
  return detail::tensor_from_proto(tp, detail::external_source{{}, true});
}

std::string serialize_tensor(const tensor& t) {
  onnx::TensorProto tp;
  tensor raw = t;
  raw.storage = tensor_storage::raw;
  detail::tensor_to_proto(raw, tp, [](const tensor&, onnx::TensorProto&) { return true; });
  return tp.SerializeAsString();
}

bool has_stray_value_info(const graph& g) {
  onnx::GraphProto gp;
  gp.ParseFromString(graph_access::residual(g));
  return gp.value_info_size() > 0;
}

std::size_t drop_stray_value_info(graph& g) {
  onnx::GraphProto gp;
  gp.ParseFromString(graph_access::residual(g));
  auto n = static_cast<std::size_t>(gp.value_info_size());
  if (n == 0) return 0;
  gp.clear_value_info();
  graph_access::residual(g) = gp.SerializeAsString();
  return n;
}

}  // namespace inferopt::ir
