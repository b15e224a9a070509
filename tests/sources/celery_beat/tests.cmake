
# The celery_beat source: its mapping and CeleryBeatSource over a SQLite database made from
# django-celery-beat's own schema (fixtures/django_celery_beat_schema.sql, from its migrations).
pkg_check_modules(TEST_SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/celery_beat/celery_beat_source_test.cc)
target_link_libraries(celery_beat_source_test PRIVATE PkgConfig::TEST_SQLITE3)
# Real PostgreSQL 15, Redis, Django with django-celery-beat and -results, celery beat and worker,
# read by the exporter; then the same on SQLite. Runs as root (postgres runs as its own user).
schedwatch_script_test(NAME celery_beat_e2e LABELS integration needs-root TIMEOUT 900
  COMMAND ${TESTS}/sources/celery_beat/celery_beat_e2e_test.py --exporter ${EXPORTER})
# reconcile inserts deleted tasks from their templates, on PostgreSQL 15 and SQLite; Django's
# DatabaseScheduler loads them.
schedwatch_script_test(NAME celery_beat_reconcile LABELS integration needs-root TIMEOUT 300
  COMMAND ${TESTS}/sources/celery_beat/celery_beat_reconcile_test.py --exporter ${EXPORTER})
