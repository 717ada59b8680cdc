"""fuzz_target: one libFuzzer target and its replay test.

Under --config=fuzz (which sets --define=fuzzing=1) `<name>` links libFuzzer's
main: run it as `bazel-bin/fuzz/<name> fuzz/corpus/<name>`. In the default
gcc build `<name>` links replay_main instead, and `<name>_replay_test` feeds it
the seed corpus and every past finding (fuzz/regressions/<name>/), so each
finding stays a regression test in the normal suite.
"""

def fuzz_target(name, srcs, deps, size = "small"):
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + select({
            ":fuzzing": [],
            "//conditions:default": [":replay_main"],
        }),
        linkopts = select({
            ":fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        copts = ["-Wno-deprecated-declarations"],
        testonly = True,
    )
    native.cc_test(
        name = name + "_replay_test",
        size = size,
        srcs = srcs,
        deps = deps + [":replay_main"],
        copts = ["-Wno-deprecated-declarations"],
        args = [
            "fuzz/corpus/" + name,
            "fuzz/regressions/" + name,
        ],
        data = native.glob(
            ["corpus/%s/**" % name, "regressions/%s/**" % name],
            allow_empty = True,
        ),
    )
