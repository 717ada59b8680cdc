#ifndef SOFTWARE_TPU_PROTO_PEM_FILE_H_
#define SOFTWARE_TPU_PROTO_PEM_FILE_H_

// Reads the PEM files TLS needs (certificates, keys, CAs). Both ends of the
// wire read them, the worker for --tls_cert and the grpcs:// driver for its
// ca=/cert=/key= parameters, so, like event_id.h, it lives beside the protos
// where both layers may depend on it.
//
// Thread safety: reentrant.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpu {

// The contents of `path`. `what` names the file in messages ("the TLS
// certificate"). Errors: NOT_FOUND or PERMISSION_DENIED when it cannot be
// opened (with the OS's reason), INVALID_ARGUMENT when it holds no PEM block
// (e.g. a DER file, or the wrong file).
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

}  // namespace tpu

#endif  // SOFTWARE_TPU_PROTO_PEM_FILE_H_
