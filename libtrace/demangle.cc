// demangle.cc — kvs_demangle(): C++ kernel names as Kineto writes them
// ("void at::native::vectorized_elementwise_kernel<8, ...>(...)"), through
// the C++ ABI's __cxa_demangle. The only C++ in libtrace.
#include <cxxabi.h>
#include <cstdlib>

extern "C" char *kvs_demangle(const char *mangled);

extern "C" char *kvs_demangle(const char *mangled)
{
    if (!mangled || mangled[0] != '_' || mangled[1] != 'Z')
        return nullptr;
    int status = 0;
    char *out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    if (status != 0) {
        std::free(out);
        return nullptr;
    }
    return out; // malloc'd by the ABI: free() it
}
