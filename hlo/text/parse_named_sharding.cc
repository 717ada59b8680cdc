// Named (mesh-based, Shardy-style) shardings, the syntax current XLA prints
// beside the older {devices=[...]} form:
//
//   {mesh[a=2,b=4], [{a}, {b:(2)2, ?}], replicated={...}, metadata={...}}
//   {mesh['x'=2,'y'=2], device_ids=(0,2,1,3), replicated}
//   {mesh[], replicated}      {mesh[a=2], manual}      {mesh[a=2], unreduced}
//   {maximal_mesh[device_id=0]}
//
// They fill OpSharding.named_sharding as XLA's HloSharding::ToProto does:
// the mesh (axes and, unless they are iota, device ids; a maximal mesh is
// one device id and no axes), the dimension shardings, the replicated,
// unreduced and manual axes (axis references are indices into the mesh),
// and the metadata. "manual" and "unreduced" alone mean every mesh axis.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

using AxisRefs = google::protobuf::RepeatedPtrField<xla::AxisRefProto>;

void AddAllAxes(const xla::MeshProto& mesh, AxisRefs* axes) {
  for (int i = 0; i < mesh.axes_size(); ++i) {
    axes->Add()->set_mesh_axis_index(i);
  }
}

}  // namespace

absl::Status Parser::ParseNamedSharding(xla::NamedShardingProto* sharding) {
  xla::MeshProto* mesh = sharding->mutable_mesh();
  bool maximal = false;
  HLO_RETURN_IF_ERROR(ParseMesh(mesh, &maximal));
  if (maximal) {
    HLO_RETURN_IF_ERROR(ParseNamedShardingMetadata(sharding));
    return Expect('}');
  }
  lexer_.TryConsume(',');
  for (absl::string_view word : {"replicated", "unreduced", "manual"}) {
    const size_t at = lexer_.pos();
    if (!lexer_.TryConsumeKeyword(word)) continue;
    if (lexer_.Peek() == '=') {  // "replicated={...}" needs dimensions first.
      lexer_.set_pos(at);
      return Expected("'[' (dimension shardings)");
    }
    if (word == "unreduced")
      AddAllAxes(*mesh, sharding->mutable_unreduced_axes());
    if (word == "manual") AddAllAxes(*mesh, sharding->mutable_manual_axes());
    HLO_RETURN_IF_ERROR(ParseNamedShardingMetadata(sharding));
    return Expect('}');
  }
  HLO_RETURN_IF_ERROR(ParseDimensionShardings(*mesh, sharding));
  while (!lexer_.TryConsume('}')) {
    HLO_RETURN_IF_ERROR(Expect(','));
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    HLO_RETURN_IF_ERROR(Expect('='));
    if (key == "replicated") {
      HLO_RETURN_IF_ERROR(
          ParseAxisRefList(*mesh, sharding->mutable_replicated_axes()));
    } else if (key == "unreduced") {
      HLO_RETURN_IF_ERROR(
          ParseAxisRefList(*mesh, sharding->mutable_unreduced_axes()));
    } else if (key == "manual") {
      HLO_RETURN_IF_ERROR(
          ParseAxisRefList(*mesh, sharding->mutable_manual_axes()));
    } else if (key == "metadata") {
      HLO_RETURN_IF_ERROR(ParseMetadataList(sharding->mutable_metadata()));
    } else {
      return ExpectedAt(at, "replicated=, unreduced=, manual= or metadata=");
    }
  }
  return absl::OkStatus();
}

// [", metadata=" (one metadata or a braced list)]
absl::Status Parser::ParseNamedShardingMetadata(
    xla::NamedShardingProto* sharding) {
  if (!lexer_.TryConsume(',')) return absl::OkStatus();
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  if (lexer_.ConsumeWord() != "metadata") return ExpectedAt(at, "'metadata'");
  HLO_RETURN_IF_ERROR(Expect('='));
  return ParseMetadataList(sharding->mutable_metadata());
}

// mesh[name=size, ...][, device_ids=(ids) | device_ids=([dims]T(perm))]
// or maximal_mesh[device_id=N].
absl::Status Parser::ParseMesh(xla::MeshProto* mesh, bool* maximal) {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  absl::string_view kind = lexer_.ConsumeWord();
  if (kind == "maximal_mesh") {
    *maximal = true;
    HLO_RETURN_IF_ERROR(Expect('['));
    lexer_.SkipSpace();
    const size_t key_pos = lexer_.pos();
    if (lexer_.ConsumeWord() != "device_id") {
      return ExpectedAt(key_pos, "'device_id'");
    }
    HLO_RETURN_IF_ERROR(Expect('='));
    int64_t device;
    HLO_RETURN_IF_ERROR(ParseInt(&device));
    mesh->add_device_ids(device);
    return Expect(']');
  }
  if (kind != "mesh") return ExpectedAt(at, "'mesh' or 'maximal_mesh'");
  HLO_RETURN_IF_ERROR(Expect('['));
  if (!lexer_.TryConsume(']')) {
    while (true) {
      xla::MeshProto::MeshAxis* axis = mesh->add_axes();
      HLO_RETURN_IF_ERROR(ParseAxisName(axis->mutable_name()));
      HLO_RETURN_IF_ERROR(Expect('='));
      int64_t size;
      HLO_RETURN_IF_ERROR(ParseInt(&size));
      axis->set_size(size);
      if (lexer_.TryConsume(']')) break;
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  return ParseMeshDeviceIds(mesh);
}

// [", device_ids=(" (ids | [dims]T(perm)) ")"]; iota ids that need no
// transpose are not stored (XLA stores device ids only for other orders).
absl::Status Parser::ParseMeshDeviceIds(xla::MeshProto* mesh) {
  const size_t before = lexer_.pos();
  if (!lexer_.TryConsume(',')) return absl::OkStatus();
  if (lexer_.ConsumeWord() != "device_ids" || lexer_.Peek() != '=') {
    lexer_.set_pos(before);  // The comma starts what follows the mesh.
    return absl::OkStatus();
  }
  HLO_RETURN_IF_ERROR(Expect('='));
  HLO_RETURN_IF_ERROR(Expect('('));
  if (lexer_.Peek() == '[') {
    std::vector<int64_t> reshape, perm;
    HLO_RETURN_IF_ERROR(ParseIotaReshape(&reshape, &perm));
    if (reshape.size() > 1) {
      for (int64_t id : ExpandIota(reshape, perm)) mesh->add_device_ids(id);
    }
    return Expect(')');
  }
  while (true) {
    int64_t id;
    HLO_RETURN_IF_ERROR(ParseInt(&id));
    mesh->add_device_ids(id);
    if (lexer_.TryConsume(')')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

// A mesh axis name: a word, or a string in single or double quotes.
absl::Status Parser::ParseAxisName(std::string* name) {
  const char c = lexer_.Peek();
  if (c == '"' || c == '\'') return ParseString(name);
  absl::string_view word = lexer_.ConsumeWord();
  if (word.empty()) return Expected("mesh axis name");
  name->assign(word.data(), word.size());
  return absl::OkStatus();
}

// An axis by name (or index), optionally a sub-axis ":(pre_size)size".
absl::Status Parser::ParseAxisRef(const xla::MeshProto& mesh,
                                  xla::AxisRefProto* axis) {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  std::string name;
  HLO_RETURN_IF_ERROR(ParseAxisName(&name));
  int index = -1;
  for (int i = 0; i < mesh.axes_size(); ++i) {
    if (mesh.axes(i).name() == name) index = i;
  }
  // Printed without the mesh's names, an axis is its index.
  if (index < 0 && !absl::SimpleAtoi(name, &index)) index = -1;
  if (index < 0 || index >= mesh.axes_size()) {
    return ErrorAt(at, absl::StrCat("unknown mesh axis '", name, "'"));
  }
  axis->set_mesh_axis_index(index);
  if (!lexer_.TryConsume(':')) return absl::OkStatus();
  int64_t pre_size, size;
  HLO_RETURN_IF_ERROR(Expect('('));
  HLO_RETURN_IF_ERROR(ParseInt(&pre_size));
  HLO_RETURN_IF_ERROR(Expect(')'));
  HLO_RETURN_IF_ERROR(ParseInt(&size));
  axis->mutable_sub_axis_info()->set_pre_size(pre_size);
  axis->mutable_sub_axis_info()->set_size(size);
  return absl::OkStatus();
}

// {axis, axis, ...}
absl::Status Parser::ParseAxisRefList(const xla::MeshProto& mesh,
                                      AxisRefs* axes) {
  return ParseBracedList([&] { return ParseAxisRef(mesh, axes->Add()); });
}

// [{axes[, ?]}, ...]: per tensor dimension, major to minor; '?' leaves the
// dimension open to further sharding.
absl::Status Parser::ParseDimensionShardings(
    const xla::MeshProto& mesh, xla::NamedShardingProto* sharding) {
  HLO_RETURN_IF_ERROR(Expect('['));
  if (lexer_.TryConsume(']')) return absl::OkStatus();
  while (true) {
    auto* dim = sharding->add_dim_shardings();
    dim->set_is_closed(true);
    HLO_RETURN_IF_ERROR(Expect('{'));
    while (!lexer_.TryConsume('}')) {
      if (!dim->is_closed()) return Expected("'}' after '?'");
      if (lexer_.TryConsume('?')) {
        dim->set_is_closed(false);
      } else {
        HLO_RETURN_IF_ERROR(ParseAxisRef(mesh, dim->add_axes()));
      }
      if (lexer_.Peek() != '}') HLO_RETURN_IF_ERROR(Expect(','));
    }
    if (lexer_.TryConsume(']')) return absl::OkStatus();
    HLO_RETURN_IF_ERROR(Expect(','));
  }
}

}  // namespace tpu::hlo::text_internal
