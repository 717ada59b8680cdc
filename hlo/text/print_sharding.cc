// Shardings as XLA prints them: {replicated}, {maximal device=1},
// {devices=[2,2]<=[4] last_tile_dim_replicate}, tuples {{...}, {...}}, and
// named shardings {mesh[a=2], [{a}]} / {maximal_mesh[device_id=0]}.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_lexer.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo::text_internal {
namespace {

absl::string_view SubgroupName(int type) {
  switch (type) {
    case xla::OpSharding::MANUAL:
      return "manual";
    case xla::OpSharding::UNREDUCED:
      return "unreduced";
    case xla::OpSharding::MAXIMAL:
      return "maximal";
    default:
      return "replicated";
  }
}

// devices=[dims]ids or devices=[dims]<=[reshape]T(perm), then the subgroup
// markers.
void AppendTileAssignment(const xla::OpSharding& s, std::string* out) {
  absl::StrAppend(out, "devices=[",
                  absl::StrJoin(s.tile_assignment_dimensions(), ","), "]");
  if (s.iota_reshape_dims_size() > 0) {
    absl::StrAppend(out, "<=[", absl::StrJoin(s.iota_reshape_dims(), ","), "]");
    bool identity = true;
    for (int i = 0; i < s.iota_transpose_perm_size(); ++i) {
      identity &= s.iota_transpose_perm(i) == i;
    }
    if (!identity) {
      absl::StrAppend(out, "T(", absl::StrJoin(s.iota_transpose_perm(), ","),
                      ")");
    }
  } else {
    absl::StrAppend(out, absl::StrJoin(s.tile_assignment_devices(), ","));
  }
  if (s.replicate_on_last_tile_dim()) *out += " last_tile_dim_replicate";
  if (s.last_tile_dims_size() > 0) {
    std::vector<absl::string_view> names;
    for (int t : s.last_tile_dims()) names.push_back(SubgroupName(t));
    absl::StrAppend(out, " last_tile_dims={", absl::StrJoin(names, ", "), "}");
  }
}

// Shard group and metadata, after the type.
void AppendShardingSuffix(const xla::OpSharding& s, std::string* out) {
  if (s.is_shard_group()) {
    absl::StrAppend(out,
                    s.shard_group_type() == xla::OpSharding::AS
                        ? " shard_as "
                        : " shard_like ",
                    s.shard_group_id());
  }
  if (s.metadata_size() == 1) {
    absl::StrAppend(out, " metadata=", PrintMetadata(s.metadata(0)));
  } else if (s.metadata_size() > 1) {
    std::vector<std::string> parts;
    for (const auto& m : s.metadata()) parts.push_back(PrintMetadata(m));
    absl::StrAppend(out, " metadata={", absl::StrJoin(parts, ", "), "}");
  }
}

// A mesh axis as its name: bare when the parser reads it back as a word,
// else quoted (all-digit names too: bare digits are axis indices).
std::string AxisNameText(const xla::MeshProto& mesh, int64_t index) {
  if (index < 0 || index >= mesh.axes_size()) return absl::StrCat(index);
  const std::string& name = mesh.axes(index).name();
  bool bare = !name.empty() &&
              name.find_first_not_of("0123456789") != std::string::npos;
  for (char c : name) bare &= HloLexer::IsNameChar(c);
  return bare ? name : Quoted(name);
}

std::string AxisRefText(const xla::MeshProto& mesh,
                        const xla::AxisRefProto& axis) {
  std::string text = AxisNameText(mesh, axis.mesh_axis_index());
  if (axis.has_sub_axis_info()) {
    absl::StrAppend(&text, ":(", axis.sub_axis_info().pre_size(), ")",
                    axis.sub_axis_info().size());
  }
  return text;
}

std::string AxisListText(
    const xla::MeshProto& mesh,
    const google::protobuf::RepeatedPtrField<xla::AxisRefProto>& axes) {
  std::vector<std::string> parts;
  for (const auto& axis : axes) parts.push_back(AxisRefText(mesh, axis));
  return absl::StrJoin(parts, ", ");
}

bool IsMaximalMesh(const xla::MeshProto& mesh) {
  return mesh.axes_size() == 0 && mesh.device_ids_size() == 1;
}

std::string MeshText(const xla::MeshProto& mesh) {
  if (IsMaximalMesh(mesh)) {
    return absl::StrCat("maximal_mesh[device_id=", mesh.device_ids(0), "]");
  }
  std::vector<std::string> axes;
  for (int i = 0; i < mesh.axes_size(); ++i) {
    axes.push_back(
        absl::StrCat(AxisNameText(mesh, i), "=", mesh.axes(i).size()));
  }
  std::string text = absl::StrCat("mesh[", absl::StrJoin(axes, ","), "]");
  if (mesh.device_ids_size() > 0) {
    absl::StrAppend(&text, ", device_ids=(",
                    absl::StrJoin(mesh.device_ids(), ","), ")");
  }
  return text;
}

// True if `axes` is every axis of `mesh` in order (what "manual" and
// "unreduced" alone stand for).
bool IsEveryAxis(
    const xla::MeshProto& mesh,
    const google::protobuf::RepeatedPtrField<xla::AxisRefProto>& axes) {
  if (axes.size() != mesh.axes_size()) return false;
  for (int i = 0; i < axes.size(); ++i) {
    if (axes[i].mesh_axis_index() != i || axes[i].has_sub_axis_info()) {
      return false;
    }
  }
  return true;
}

// The words XLA abbreviates a whole sharding to ("replicated", "manual",
// "unreduced"), used only when they parse back to exactly `s`; else empty.
absl::string_view NamedShortcut(const xla::NamedShardingProto& s) {
  if (s.dim_shardings_size() > 0 || s.replicated_axes_size() > 0) return "";
  const bool no_unreduced = s.unreduced_axes_size() == 0;
  const bool no_manual = s.manual_axes_size() == 0;
  if (no_unreduced && no_manual) return "replicated";
  if (s.mesh().axes_size() == 0) return "";
  if (no_manual && IsEveryAxis(s.mesh(), s.unreduced_axes())) {
    return "unreduced";
  }
  if (no_unreduced && IsEveryAxis(s.mesh(), s.manual_axes())) return "manual";
  return "";
}

std::string DimensionShardingText(
    const xla::MeshProto& mesh,
    const xla::NamedShardingProto::DimensionSharding& dim) {
  std::string text = absl::StrCat("{", AxisListText(mesh, dim.axes()));
  if (!dim.is_closed()) text += dim.axes_size() == 0 ? "?" : ", ?";
  return text + "}";
}

std::string PrintNamedSharding(const xla::NamedShardingProto& s) {
  const xla::MeshProto& mesh = s.mesh();
  std::string out = absl::StrCat("{", MeshText(mesh));
  // A maximal mesh stands alone: one device holds the whole value.
  const absl::string_view shortcut = NamedShortcut(s);
  if (IsMaximalMesh(mesh)) {
  } else if (!shortcut.empty()) {
    absl::StrAppend(&out, ", ", shortcut);
  } else {
    std::vector<std::string> dims;
    for (const auto& dim : s.dim_shardings()) {
      dims.push_back(DimensionShardingText(mesh, dim));
    }
    absl::StrAppend(&out, ", [", absl::StrJoin(dims, ", "), "]");
    const std::pair<absl::string_view, const google::protobuf::RepeatedPtrField<
                                           xla::AxisRefProto>*>
        lists[] = {{"replicated", &s.replicated_axes()},
                   {"unreduced", &s.unreduced_axes()},
                   {"manual", &s.manual_axes()}};
    for (const auto& [key, axes] : lists) {
      if (axes->empty()) continue;
      absl::StrAppend(&out, ", ", key, "={", AxisListText(mesh, *axes), "}");
    }
  }
  if (s.metadata_size() > 0) {
    std::vector<std::string> parts;
    for (const auto& m : s.metadata()) parts.push_back(PrintMetadata(m));
    absl::StrAppend(&out, ", metadata={", absl::StrJoin(parts, ", "), "}");
  }
  return out + "}";
}

}  // namespace

std::string PrintSharding(const xla::OpSharding& s) {
  if (s.type() == xla::OpSharding::TUPLE) {
    std::vector<std::string> parts;
    for (const auto& element : s.tuple_shardings()) {
      parts.push_back(PrintSharding(element));
    }
    return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  }
  if (s.has_named_sharding()) return PrintNamedSharding(s.named_sharding());
  std::string out = "{";
  switch (s.type()) {
    case xla::OpSharding::REPLICATED:
      out += "replicated";
      break;
    case xla::OpSharding::MANUAL:
      out += "manual";
      break;
    case xla::OpSharding::UNKNOWN:
      out += "unknown";
      break;
    case xla::OpSharding::UNREDUCED:
      out += "unreduced";
      break;
    case xla::OpSharding::MAXIMAL:
      absl::StrAppend(&out, "maximal device=",
                      s.tile_assignment_devices_size() > 0
                          ? s.tile_assignment_devices(0)
                          : 0);
      break;
    default:
      AppendTileAssignment(s, &out);
  }
  AppendShardingSuffix(s, &out);
  out += "}";
  return out;
}

}  // namespace tpu::hlo::text_internal
