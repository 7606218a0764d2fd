// kvs_torch_ops.cpp — kvscope's PyTorch hook: every op PyTorch's dispatcher
// runs (ATen ops, autograd nodes; torch.profiler.record_function ranges) is
// handed, with its input dims and dtypes, its sequence number and forward
// thread, to the capture running in the program (libkvscope-inject.so,
// through kvs_torch_ops.h), which records it on kvscope's clock as a
// `cpu_op` and gives it the kernels it launches (External id).
//
// How: one global RecordFunction callback (at::addGlobalCallback, the
// observer API torch.profiler itself is built on) with needsInputs, so the
// program and its outputs are untouched; turned off (at::disableCallback)
// while the capture cannot record, and nothing is formatted for an op it
// would not record. "Input Dims" / "Input type" are written the way
// torch.profiler (record_shapes=True, PyTorch 2.x) writes them, so the
// analysis groups kvscope's ops and the profiler's alike.
//
// Built inside the program at its first `import torch` by sitecustomize.py
// (beside this file), against that torch's headers and libraries:
//   c++ -O2 -std=c++17 -shared -fPIC -DNDEBUG -I<torch includes> kvs_torch_ops.cpp \
//       <libc10.so> <libtorch_cpu.so> -o kvs_torch_ops.so
// and loaded with ctypes; kvs_torch_ops_install() does the rest.
#include <dlfcn.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/UndefinedTensorImpl.h>

#include "kvs_torch_ops.h"

namespace {

// ----------------------------------------------------------------------------
// inputs as torch.profiler writes them

// A scalar list longer than this is an "" input, as in torch.profiler
// (its SCALAR_LIST_LENGTH_LIMIT).
constexpr size_t kScalarListMax = 30;

void put_int(std::string &s, int64_t v)
{
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v); // no locale, no format string: the hot path
    s.append(b, static_cast<size_t>(r.ptr - b));
}

// TensorImpl::has_symbolic_sizes_strides where it is public (PyTorch 2.x):
// such a tensor's sizes() would throw.
template <typename T>
auto symbolic(const T *impl, int) -> decltype(impl->has_symbolic_sizes_strides())
{
    return impl->has_symbolic_sizes_strides();
}
template <typename T>
bool symbolic(const T *, long)
{
    return false;
}

// One tensor's sizes into dims, its dtype name into types; false when it
// has none (undefined, nested, symbolic sizes).
bool put_impl(std::string &dims, std::string &types, const c10::TensorImpl *t)
{
    if (!t || t == c10::UndefinedTensorImpl::singleton() || t->is_nested() || symbolic(t, 0))
        return false;
    const auto sizes = t->sizes();
    dims += '[';
    for (size_t i = 0; i < sizes.size(); i++) {
        if (i)
            dims += ", ";
        put_int(dims, sizes[i]);
    }
    dims += ']';
    const auto name = t->dtype().name();
    types += '"';
    types.append(name.data(), name.size());
    types += '"';
    return true;
}

bool put_tensor(std::string &dims, std::string &types, const at::Tensor &t)
{
    return t.defined() && put_impl(dims, types, t.unsafeGetTensorImpl());
}

void put_input(std::string &dims, std::string &types, const c10::IValue &v)
{
    if (v.isTensor()) {
        if (!put_tensor(dims, types, v.toTensor())) {
            dims += "[]";
            types += "\"\"";
        }
        return;
    }
    if (v.isScalar()) {
        dims += "[]";
        types += "\"Scalar\"";
        return;
    }
    if (v.isTensorList()) {
        // sizes of each tensor, nested; a list holding an undefined tensor
        // has none (as in torch.profiler)
        std::string d = "[", ignored;
        bool ok = true, first = true;
        for (const at::Tensor t : v.toTensorList()) {
            if (!first)
                d += ", ";
            first = false;
            if (!(ok = put_tensor(d, ignored, t)))
                break;
        }
        dims += ok ? d + "]" : std::string("[]");
        types += ok ? "\"TensorList\"" : "\"\"";
        return;
    }
    if (v.isList()) {
        const auto l = v.toListRef();
        bool scalars = l.empty() || (l.size() <= kScalarListMax && l[0].isScalar());
        dims += "[]";
        types += scalars ? "\"ScalarList\"" : "\"\"";
        return;
    }
    dims += "[]";
    types += "\"\"";
}

// ----------------------------------------------------------------------------
// the callback

const kvs_torch_ops *g_ops;
at::CallbackHandle g_handle;

// Which of this thread's open ops were handed on (op_end only for those).
constexpr unsigned kMaxDepth = 256;
thread_local struct {
    unsigned depth; // may exceed kMaxDepth: those ops are not handed on
    bool forwarded[kMaxDepth];
} t_open;

thread_local std::string t_dims, t_types;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
    if (fn.isAsync())
        return nullptr; // may end on another thread: not recorded
    unsigned d = t_open.depth++;
    bool fwd = d < kMaxDepth && g_ops->recording();
    if (d < kMaxDepth)
        t_open.forwarded[d] = fwd;
    if (!fwd)
        return nullptr;
    kvs_torch_op op{};
    op.name = fn.name();
    op.sequence_nr = fn.seqNr();
    op.fwd_tid = static_cast<int64_t>(fn.forwardThreadId());
    op.kind = fn.scope() == at::RecordScope::USER_SCOPE ? KVS_TORCH_OP_RANGE : KVS_TORCH_OP_OP;
    if (op.kind == KVS_TORCH_OP_OP) {
        try {
            t_dims.assign(1, '[');
            t_types.assign(1, '[');
            bool first = true;
            for (const c10::IValue &v : fn.inputs()) {
                if (!first) {
                    t_dims += ", ";
                    t_types += ", ";
                }
                first = false;
                put_input(t_dims, t_types, v);
            }
            t_dims += ']';
            t_types += ']';
            op.input_dims = t_dims.c_str();
            op.input_types = t_types.c_str();
        } catch (...) {
            op.input_dims = op.input_types = nullptr; // the op without shapes, never a throw
        }
    }
    g_ops->op_begin(&op);
    return nullptr;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *)
{
    if (fn.isAsync() || t_open.depth == 0)
        return;
    unsigned d = --t_open.depth;
    if (d < kMaxDepth && t_open.forwarded[d])
        g_ops->op_end();
}

} // namespace

// 1 while the capture can record ops (the switch below sets it), read by the
// hook's Python half (sitecustomize.py) through ctypes: PyTorch's Inductor
// and Dynamo record their kernel launches and compiled regions as
// RecordFunction ranges only while torch.autograd.profiler's
// _is_profiler_enabled reads true, which sitecustomize makes it do while
// this is 1 (a plain int: ctypes reads it without the GIL's help).
extern "C" __attribute__((visibility("default"))) int kvs_torch_ops_recording_flag = 0;

namespace {

// The capture's switch (kvs_torch_ops.set_switch): the observer on while ops
// can be recorded, off between windows, so that PyTorch then boxes no
// inputs and calls nothing for it. Ops open across a change pair up as
// RecordFunction pairs them: an op's end runs the observers its start ran.
void on_switch(int on)
{
    __atomic_store_n(&kvs_torch_ops_recording_flag, on ? 1 : 0, __ATOMIC_RELAXED);
    try {
        if (on)
            at::reenableCallback(g_handle);
        else
            at::disableCallback(g_handle);
    } catch (...) {
        // left as it was: recording() still decides op by op
    }
}

void say(char *err, size_t n, const char *what, const char *detail)
{
    if (err && n)
        std::snprintf(err, n, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

} // namespace

// Load the capture's table from lib (the injection library, loaded if it
// is not yet) and start handing it every op. Returns 0, or -1 with the
// reason in err. A second call does nothing.
extern "C" __attribute__((visibility("default"))) int
kvs_torch_ops_install(const char *lib, char *err, size_t errlen)
{
    if (g_ops)
        return 0;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        say(err, errlen, "cannot load the injection library", dlerror());
        return -1;
    }
    auto get = reinterpret_cast<kvs_torch_ops_fn>(dlsym(h, KVS_TORCH_OPS_SYMBOL));
    const kvs_torch_ops *ops = get ? get() : nullptr;
    if (!ops) {
        say(err, errlen, "the injection library has no " KVS_TORCH_OPS_SYMBOL, lib);
        return -1; // h stays loaded: CUDA may load it again anyway
    }
    if (ops->abi != KVS_TORCH_OPS_ABI || ops->size < sizeof(kvs_torch_ops)) {
        say(err, errlen, "the injection library is of another kvscope version", lib);
        return -1;
    }
    g_ops = ops;
    try {
        g_handle = at::addGlobalCallback(
            at::RecordFunctionCallback(on_start, on_end).needsInputs(true));
    } catch (const std::exception &e) {
        g_ops = nullptr;
        say(err, errlen, "PyTorch refused the RecordFunction callback", e.what());
        return -1;
    }
    ops->set_switch(on_switch); // told the state now, then each change
    return 0;
}

// ----------------------------------------------------------------------------
// ranges PyTorch opens only for its own profiler

// torch._C._profiler._RecordFunctionFast, which Inductor wraps around each
// Triton kernel launch (the kernel's name and its arguments, what
// torch.profiler's trace shows as the kernel's op), starts a RecordFunction
// only while torch.profiler's state exists, so the observer above never sees
// one. sitecustomize.py's stand-in for that class calls these instead while
// the capture records and torch.profiler does not: the same op, handed on
// directly. vals: one per argument, as torch.profiler keeps them — a
// TensorImpl* (a tensor's _cdata), KVS_PY_SCALAR, KVS_PY_SCALAR_LIST,
// KVS_PY_OTHER ("" input), or 0 (an argument torch.profiler drops). Returns
// 1 when the op was begun (kvs_torch_ops_py_end then ends it), 0 when not.
enum : uintptr_t { KVS_PY_SKIP = 0, KVS_PY_SCALAR = 1, KVS_PY_SCALAR_LIST = 2, KVS_PY_OTHER = 3 };

extern "C" __attribute__((visibility("default"))) int
kvs_torch_ops_py_begin(const char *name, const uintptr_t *vals, int n, int kind)
{
    if (!g_ops || !name || !g_ops->recording())
        return 0;
    kvs_torch_op op{};
    op.name = name;
    op.sequence_nr = -1;
    op.kind = kind == KVS_TORCH_OP_RANGE ? KVS_TORCH_OP_RANGE : KVS_TORCH_OP_OP;
    if (op.kind == KVS_TORCH_OP_OP && vals && n >= 0) {
        try {
            t_dims.assign(1, '[');
            t_types.assign(1, '[');
            bool first = true;
            for (int i = 0; i < n; i++) {
                const uintptr_t v = vals[i];
                if (v == KVS_PY_SKIP)
                    continue;
                if (!first) {
                    t_dims += ", ";
                    t_types += ", ";
                }
                first = false;
                if (v > KVS_PY_OTHER &&
                    put_impl(t_dims, t_types, reinterpret_cast<const c10::TensorImpl *>(v)))
                    continue;
                t_dims += "[]";
                t_types += v == KVS_PY_SCALAR        ? "\"Scalar\""
                           : v == KVS_PY_SCALAR_LIST ? "\"ScalarList\""
                                                     : "\"\"";
            }
            t_dims += ']';
            t_types += ']';
            op.input_dims = t_dims.c_str();
            op.input_types = t_types.c_str();
        } catch (...) {
            op.input_dims = op.input_types = nullptr;
        }
    }
    g_ops->op_begin(&op);
    return 1;
}

extern "C" __attribute__((visibility("default"))) void kvs_torch_ops_py_end(void)
{
    if (g_ops)
        g_ops->op_end();
}
