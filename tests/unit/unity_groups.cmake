# Written by tests/unit/unity_groups.py (see there): unit-test files compiled
# together when IODIAG_UNITY=ON; a file in no group is compiled on its own.
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/accuracy_rules_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/analysis_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/atomic_file_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/attribution_math_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/bad_input_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/block_queue_config_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/bpf_features_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/bundle_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/ceph_attribution_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/ceph_collector_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/ceph_host_findings_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/cgroup_names_render_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_0)
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/ceph_parsers_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/cgroup_collector_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/collector_d_rules_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/contention_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/deferred_release_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/delayacct_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/derived_metrics_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/dirty_limits_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/diskstats_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/fingerprint_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/heatmap_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/histogram_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_1)
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/cgroup_names_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/delayacct_rules_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/evidence_lookup_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/history_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/interval_series_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/iouring_evidence_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/kallsyms_cache_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/kernel_btf_view_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/layer_observer_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/layer_share_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/log2_flat_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/lost_events_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_2)
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/meminfo_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/not_evaluated_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/ns_to_us_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/nvme_rules_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/nvme_smart_log_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/playbooks_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/plugin_output_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/proc_io_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/procfs_series_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/progress_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/psi_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/report_html_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_3)
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/nvme_smart_collector_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/render_markdown_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/rule_eval_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/rule_loader_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/shipped_rules_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/startup_heap_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/tail_call_chain_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/text_page_filter_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/triage_graph_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/verdict_diff_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/vmstat_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/watch_triggers_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_4)
set_source_files_properties(
  ${PROJECT_SOURCE_DIR}/tests/unit/render_prometheus_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/site_config_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/syscall_bpf_support_test.cpp
  ${PROJECT_SOURCE_DIR}/tests/unit/who_suffered_test.cpp
  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_5)
