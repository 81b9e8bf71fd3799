# Unity builds for the first run and the product build of the test command
# (.ci/packages.sh): with precompiled headers the parsing is ~5 % of a
# translation unit here; most of the rest is generating code for the same
# nlohmann/json, CLI11 and fmt templates again in every file. Compiling the
# libraries' files in batches generates each once per batch. Developers keep
# IODIAG_UNITY off (the default): a change recompiles one file, not a batch.
#
#   -DIODIAG_UNITY=ON
option(IODIAG_UNITY "Compile the iodiag libraries in unity batches (faster from scratch)" OFF)
# 32: the first run's build from scratch on 2 idle cores took 171 s with make
# at 8 per batch, 151 s with make at 32, 142 s (median of 3) with Ninja at 32
# (docs/development.md).
set(IODIAG_UNITY_BATCH_SIZE 32 CACHE STRING "Source files per unity batch")

# Files whose file-local helpers share a name with another file's (a unity
# batch would see both definitions): compiled on their own.
set(IODIAG_UNITY_ALONE
  engine/rules/rule_loader.cpp engine/rules/site_config.cpp engine/rules/rule_eval.cpp
  engine/rules/rule_model.cpp engine/triage/layer_table.cpp engine/derive/ceph_attribution.cpp
  engine/triage/history_metrics.cpp engine/triage/analysis.cpp
  engine/render/render_diff.cpp engine/render/render_text.cpp engine/render/render_markdown.cpp
  engine/render/plugin_output.cpp engine/render/report_sections.cpp engine/render/heatmap.cpp
  collectors/bpf/bpf_features.cpp collectors/bpf/kallsyms_cache.cpp collectors/bpf/iouring_bpf.cpp
  collectors/procfs/delayacct.cpp app/watch_sampler.cpp)

function(iodiag_unity target)
  if(IODIAG_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${IODIAG_UNITY_BATCH_SIZE})
    list(TRANSFORM IODIAG_UNITY_ALONE PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE alone)
    set_source_files_properties(${alone} TARGET_DIRECTORY ${target} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
