#ifndef SOFTWARE_TPU_TESTS_HLO_CORPUS_KNOWN_INPUTS_H_
#define SOFTWARE_TPU_TESTS_HLO_CORPUS_KNOWN_INPUTS_H_

// Inputs (and the outputs they must give) for corpus modules whose random
// inputs mean nothing: the ragged-all-to-all tests of XLA's
// collective_ops_e2e_test.cc take offsets and sizes that must describe
// ragged rows that fit, and XLA's test builds them from a table of row
// counts. KnownInputs builds the same kind of data from the same tables
// (xla_hlo/220..223; the 8-replica test draws its counts at random, here
// they come from a fixed formula): every update's rows hold distinct exact
// values, the output starts as -1, and the expected output of each replica
// is the output with every update it receives written in place.
//
// Thread safety: a plain function.

#include <optional>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "proto/hlo.pb.h"

namespace tpu {

struct KnownInputs {
  // Per core (replica-major), the entry parameters in order.
  std::vector<std::vector<Literal>> arguments;
  // Per core, the result it must compute bit for bit.
  std::vector<Literal> expected;
};

// nullopt for a module without known inputs (or whose parameters do not
// have the shapes the table was written for).
std::optional<KnownInputs> KnownInputsFor(const std::string& file,
                                          const xla::ProgramShapeProto& program,
                                          int cores);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TESTS_HLO_CORPUS_KNOWN_INPUTS_H_
