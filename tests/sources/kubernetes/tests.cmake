# Kubernetes source: the real exporter against a loopback API server over TLS, and the example
# manifests of examples/kubernetes/.
set(KUBE_TESTS ${TESTS}/sources/kubernetes)
schedwatch_script_test(NAME kubernetes_exporter_e2e LABELS integration TIMEOUT 300
  COMMAND ${KUBE_TESTS}/exporter_kubernetes_test.py --exporter ${EXPORTER}
          --source-dir ${CMAKE_SOURCE_DIR})
schedwatch_script_test(NAME kubernetes_examples LABELS integration
  COMMAND ${KUBE_TESTS}/examples_test.py --exporter ${EXPORTER} --source-dir ${CMAKE_SOURCE_DIR})
schedwatch_script_test(NAME kubernetes_reconcile LABELS integration TIMEOUT 300
  COMMAND ${KUBE_TESTS}/reconcile_kubernetes_test.py --exporter ${EXPORTER})
# Two replicas of one watcher, both with --reconcile.on-start: a missing CronJob created once.
schedwatch_script_test(NAME kubernetes_reconcile_replicas LABELS integration TIMEOUT 120
  COMMAND ${KUBE_TESTS}/reconcile_replicas_test.py --exporter ${EXPORTER})
# The list-then-watch caches: watches run on the source's own threads.
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit threads SOURCES
  sources/kubernetes/kubernetes_watch_test.cc)
target_link_libraries(kubernetes_watch_test PRIVATE schedwatch::test_fixtures)
# discover: every CronJob, labelled or not, over TLS; the draft, kubectl commands, merging.
schedwatch_script_test(NAME kubernetes_discover LABELS integration
  COMMAND ${KUBE_TESTS}/discover_kubernetes_test.py --exporter ${EXPORTER})
