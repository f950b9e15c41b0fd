#pragma once
/// Forward declarations of the serve module.

namespace inferopt::serve {

class request_key;
class response_cache;
struct response_cache_options;
struct response_cache_stats;
class histogram;
class prometheus_text;

}  // namespace inferopt::serve
