# celery_beat_bench: one read of django-celery-beat's tables (bench/celery_beat_bench.py makes
# 10,000 tasks and compares with DatabaseScheduler loading them).
if(TARGET schedwatch_sources)
  add_executable(celery_beat_bench ${CMAKE_SOURCE_DIR}/bench/celery_beat_bench.cc)
  target_link_libraries(celery_beat_bench PRIVATE schedwatch::sources)
endif()
