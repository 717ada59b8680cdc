#ifndef SOFTWARE_TPU_PROTO_WAIT_REPORT_DOT_H_
#define SOFTWARE_TPU_PROTO_WAIT_REPORT_DOT_H_

// The wait report (proto/control.proto) as a Graphviz picture of who waits
// for whom: `tpu_ctl waits --format=dot | dot -Tsvg > waits.svg`.
//
// Thread safety: stateless functions.

#include <string>

#include "proto/control.pb.h"

namespace tpu::wire {

// A `digraph` with one node per core that is not idle or is waited for
// (labelled with its state and program), and one edge from each waiting core
// to each member it waits for, labelled with the waiter's program, launch
// and collective. Edges on a cycle of the wait-for graph are drawn red and
// bold, and the cycle is named in the graph's label.
std::string WaitReportToDot(const tpu_emulator::WaitReport& report);

}  // namespace tpu::wire

#endif  // SOFTWARE_TPU_PROTO_WAIT_REPORT_DOT_H_
