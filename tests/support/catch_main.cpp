#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer reads these before main. libstdc++ is not built with it, so the atomic
// reference count of an exception held by std::exception_ptr is invisible to it: when a future
// rethrows an exception another thread stored (serve's batcher rejecting a timed-out request)
// and that thread frees it last, the free looks unordered with the reader's accesses. The
// count does order them; nothing else is suppressed.
extern "C" const char* __tsan_default_suppressions() {
  return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}
#endif
