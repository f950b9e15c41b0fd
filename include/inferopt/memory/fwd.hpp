#pragma once
/// Forward declarations of the memory module.

namespace inferopt::memory {

struct stream_ref;
struct event_ref;
class memory_resource;
class stream_events;
class host_resource;
class pmr_adaptor;
class caching_pool;
struct caching_pool_options;
class statistics_adaptor;
class limiting_adaptor;
class tracking_adaptor;
struct tensor_lifetime;
struct arena_plan;

}  // namespace inferopt::memory
