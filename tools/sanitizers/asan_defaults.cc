// Linked into every binary of the asan and fuzz builds (.bazelrc:
// --custom_malloc): LeakSanitizer's suppressions, only for leaks inside
// Debian's system libraries, which the project cannot fix. Each names the
// test that showed it.

extern "C" const char* __lsan_default_suppressions() {
  // c-ares (gRPC's DNS resolver) keeps a few bytes per resolver channel
  // (//tests/protocol:credentials_test).
  return "leak:libcares.so\n";
}
