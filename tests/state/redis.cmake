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
# Redis Cluster slots and redirections, sentinel answers (issue 19), without a server.
waitroom_add_test(redis_topology_test
  SOURCES redis_topology_test.cpp
  LIBS waitroom_state_redis
  LABELS unit)
target_include_directories(redis_topology_test PRIVATE ${PROJECT_SOURCE_DIR}/src/state/redis)
# The Redis store on Redis Cluster and behind Redis Sentinel (issue 19): real redis-server
# processes (three cluster masters; a master, a replica and three sentinels) on loopback.
waitroom_add_test(redis_cluster_test
  SOURCES redis_cluster_test.cpp
  LIBS waitroom_state_redis
  LABELS redis)
target_include_directories(redis_cluster_test PRIVATE ${PROJECT_SOURCE_DIR}/src/state/redis)
waitroom_add_test(redis_sentinel_test
  SOURCES redis_sentinel_test.cpp
  LIBS waitroom_state_redis
  LABELS redis)
