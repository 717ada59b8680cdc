// Shardings ({replicated}, {devices=[2,2]0,1,2,3 last_tile_dim_replicate},
// {maximal device=1}, tuples {...}) and replica groups ({{0,1},{2,3}} or the
// iota form [2,2]<=[4]), which share the iota device-list syntax. Named
// shardings ({mesh[...], ...}) are in parse_named_sharding.cc.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// The OpSharding type a word names, for last_tile_dims; false if none.
bool SubgroupType(absl::string_view word, xla::OpSharding::Type* type) {
  if (word == "replicated") {
    *type = xla::OpSharding::REPLICATED;
  } else if (word == "manual") {
    *type = xla::OpSharding::MANUAL;
  } else if (word == "unreduced") {
    *type = xla::OpSharding::UNREDUCED;
  } else if (word == "maximal") {
    *type = xla::OpSharding::MAXIMAL;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> ExpandIota(const std::vector<int64_t>& reshape,
                                const std::vector<int64_t>& perm) {
  const size_t rank = reshape.size();
  int64_t count = 1;
  for (int64_t d : reshape) count *= d;
  std::vector<int64_t> strides(rank, 1);
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * reshape[i + 1];
  }
  std::vector<int64_t> result(count);
  std::vector<int64_t> index(rank, 0);  // Index in the transposed array.
  for (int64_t k = 0; k < count; ++k) {
    int64_t source = 0;
    for (size_t i = 0; i < rank; ++i) source += index[i] * strides[perm[i]];
    result[k] = source;
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
      if (++index[i] < reshape[perm[i]]) break;
      index[i] = 0;
    }
  }
  return result;
}

absl::Status Parser::ParseIotaList(std::vector<int64_t>* reshape,
                                   std::vector<int64_t>* perm) {
  // '<=' '[' dims ']' ['T' '(' perm ')']
  HLO_RETURN_IF_ERROR(ExpectStr("<="));
  return ParseIotaReshape(reshape, perm);
}

absl::Status Parser::ParseIotaReshape(std::vector<int64_t>* reshape,
                                      std::vector<int64_t>* perm) {
  HLO_RETURN_IF_ERROR(Expect('['));
  const size_t at = lexer_.pos();
  reshape->clear();
  perm->clear();
  while (true) {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    if (v <= 0) return ErrorAt(at, "iota dimensions must be positive");
    reshape->push_back(v);
    if (lexer_.TryConsume(']')) break;
    HLO_RETURN_IF_ERROR(Expect(','));
  }
  if (lexer_.PeekRaw() != 'T' || lexer_.PeekRawAt(1) != '(') {
    for (size_t i = 0; i < reshape->size(); ++i) perm->push_back(i);
    return absl::OkStatus();
  }
  lexer_.set_pos(lexer_.pos() + 2);
  const size_t perm_pos = lexer_.pos();
  while (true) {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    perm->push_back(v);
    if (lexer_.TryConsume(')')) break;
    HLO_RETURN_IF_ERROR(Expect(','));
  }
  std::vector<int64_t> sorted = *perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int64_t>(i) ||
        sorted.size() != reshape->size()) {
      return ErrorAt(perm_pos,
                     "iota transpose is not a permutation of the "
                     "reshape dimensions");
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseReplicaGroups(
    google::protobuf::RepeatedPtrField<xla::ReplicaGroup>* groups) {
  if (lexer_.Peek() != '[') {
    return ParseBracedList(
        [&] { return ParseIntList(groups->Add()->mutable_replica_ids()); });
  }
  // [num_groups,group_size]<=[dims]T(perm): expanded to explicit groups.
  const size_t at = lexer_.pos();
  lexer_.set_pos(at + 1);
  int64_t num_groups, group_size;
  HLO_RETURN_IF_ERROR(ParseInt(&num_groups));
  HLO_RETURN_IF_ERROR(Expect(','));
  HLO_RETURN_IF_ERROR(ParseInt(&group_size));
  HLO_RETURN_IF_ERROR(Expect(']'));
  std::vector<int64_t> reshape, perm;
  HLO_RETURN_IF_ERROR(ParseIotaList(&reshape, &perm));
  std::vector<int64_t> ids = ExpandIota(reshape, perm);
  if (num_groups < 0 || group_size < 0 ||
      num_groups * group_size != static_cast<int64_t>(ids.size())) {
    return ErrorAt(
        at, absl::StrCat("iota replica groups [", num_groups, ",", group_size,
                         "] do not cover ", ids.size(), " devices"));
  }
  for (int64_t g = 0; g < num_groups; ++g) {
    auto* group = groups->Add();
    for (int64_t i = 0; i < group_size; ++i) {
      group->add_replica_ids(ids[g * group_size + i]);
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseSharding(xla::OpSharding* sharding) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  const char first = lexer_.Peek();
  if (first == '{' || first == '}') {
    sharding->set_type(xla::OpSharding::TUPLE);
    if (lexer_.TryConsume('}')) return absl::OkStatus();
    while (true) {
      HLO_RETURN_IF_ERROR(ParseSharding(sharding->add_tuple_shardings()));
      if (lexer_.TryConsume('}')) return absl::OkStatus();
      HLO_RETURN_IF_ERROR(Expect(','));
    }
  }
  if (StartsNamedSharding()) {
    return ParseNamedSharding(sharding->mutable_named_sharding());
  }
  bool maximal = false;
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view word = lexer_.ConsumeWord();
    int64_t value;
    xla::OpSharding::Type type;
    if (word == "unknown") {
      sharding->set_type(xla::OpSharding::UNKNOWN);
    } else if (SubgroupType(word, &type)) {
      sharding->set_type(type);
      if (type == xla::OpSharding::MAXIMAL) maximal = true;
    } else if (word == "device") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      if (!maximal) return ErrorAt(at, "'device=' needs 'maximal'");
      sharding->add_tile_assignment_dimensions(1);
      sharding->add_tile_assignment_devices(value);
    } else if (word == "devices") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(ParseTileAssignment(sharding));
    } else if (word == "last_tile_dim_replicate") {
      sharding->set_replicate_on_last_tile_dim(true);
    } else if (word == "last_tile_dims") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(ParseLastTileDims(sharding));
    } else if (word == "metadata") {
      HLO_RETURN_IF_ERROR(Expect('='));
      HLO_RETURN_IF_ERROR(ParseMetadataList(sharding->mutable_metadata()));
    } else if (word == "shard_as" || word == "shard_like") {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      sharding->set_is_shard_group(true);
      sharding->set_shard_group_id(value);
      sharding->set_shard_group_type(
          word == "shard_as" ? xla::OpSharding::AS : xla::OpSharding::LIKE);
    } else {
      return ExpectedAt(at, "sharding attribute");
    }
  }
  return absl::OkStatus();
}

// [dims] then the devices: an explicit list "0,1,2,3" or an iota list
// "<=[4]T(0)".
absl::Status Parser::ParseTileAssignment(xla::OpSharding* sharding) {
  sharding->set_type(xla::OpSharding::OTHER);
  HLO_RETURN_IF_ERROR(Expect('['));
  int64_t value;
  while (true) {
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    sharding->add_tile_assignment_dimensions(value);
    if (lexer_.TryConsume(']')) break;
    HLO_RETURN_IF_ERROR(Expect(','));
  }
  if (lexer_.Peek() == '<') {
    std::vector<int64_t> reshape, perm;
    HLO_RETURN_IF_ERROR(ParseIotaList(&reshape, &perm));
    for (int64_t d : reshape) sharding->add_iota_reshape_dims(d);
    for (int64_t p : perm) {
      sharding->add_iota_transpose_perm(static_cast<int32_t>(p));
    }
    return absl::OkStatus();
  }
  while (true) {
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    sharding->add_tile_assignment_devices(value);
    if (lexer_.Peek() != ',') return absl::OkStatus();
    lexer_.set_pos(lexer_.pos() + 1);
  }
}

// {replicated, manual, ...}
absl::Status Parser::ParseLastTileDims(xla::OpSharding* sharding) {
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t type_pos = lexer_.pos();
    xla::OpSharding::Type type;
    if (!SubgroupType(lexer_.ConsumeWord(), &type)) {
      return ExpectedAt(type_pos, "sharding type");
    }
    sharding->add_last_tile_dims(type);
    lexer_.TryConsume(',');
  }
  return absl::OkStatus();
}

// Either one metadata "{...}" or a list "{{...}, {...}}".
absl::Status Parser::ParseMetadataList(
    google::protobuf::RepeatedPtrField<xla::OpMetadata>* metadata) {
  const size_t brace = lexer_.pos();
  HLO_RETURN_IF_ERROR(Expect('{'));
  if (lexer_.Peek() == '{' || lexer_.Peek() == '}') {
    while (!lexer_.TryConsume('}')) {
      HLO_RETURN_IF_ERROR(ParseMetadata(metadata->Add()));
      lexer_.TryConsume(',');
    }
    return absl::OkStatus();
  }
  lexer_.set_pos(brace);
  return ParseMetadata(metadata->Add());
}

// Named shardings start with the mesh: "mesh[" or "maximal_mesh[".
bool Parser::StartsNamedSharding() {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  const absl::string_view word = lexer_.ConsumeWord();
  lexer_.set_pos(at);
  return word == "mesh" || word == "maximal_mesh";
}

}  // namespace tpu::hlo::text_internal
