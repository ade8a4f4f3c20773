# Redis store tests (issue 5). `redis` tests start a real redis-server on a free loopback port.
waitroom_add_test(redis_store_test
  SOURCES redis_store_test.cpp
  LIBS waitroom_state_redis
  LABELS redis)
waitroom_add_test(redis_protocol_test
  SOURCES redis_protocol_test.cpp
  LIBS waitroom_state_redis PkgConfig::HIREDIS
  LABELS unit)
target_include_directories(redis_protocol_test PRIVATE ${PROJECT_SOURCE_DIR}/src/state/redis)
