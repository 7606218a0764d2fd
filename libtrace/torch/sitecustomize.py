# sitecustomize.py — kvscope's PyTorch hook, loaded into a Python program by
# `kvscope capture --torch-ops auto|on` (the launcher puts this folder first
# on PYTHONPATH; Python imports sitecustomize at start-up).
#
# It changes nothing until the program imports torch. Then, once torch's own
# import has finished, it builds kvs_torch_ops.cpp (beside this file) against
# that torch — once, cached in ~/.cache/kvscope/torch-ops/ by torch version,
# library and source — loads it and lets it hand every op PyTorch dispatches
# to kvscope's capture in this process (the injection library named by
# CUDA_INJECTION64_PATH). Any failure is a warning on stderr and the program
# runs on as it would have; it never raises into the program.
#
# Also: this folder leaves sys.path again at once, and a sitecustomize that
# the program would have imported without kvscope is imported as before.
# Environment (set by the launcher): KVS_CAPTURE_TORCH_OPS (auto|on),
# CUDA_INJECTION64_PATH, KVS_CAPTURE_ROOT_PID, KVS_CAPTURE_LOG=debug;
# XDG_CACHE_HOME or HOME for the cache (else a folder of the user's in the
# temporary folder), CXX for the compiler (default c++).

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_MIN_TORCH = (1, 13)  # RecordFunction's observer API as the hook uses it
_state = {"seen": False}


def _say(msg):
    try:
        sys.stderr.write("kvscope capture: torch ops: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def _debug(msg):
    if os.environ.get("KVS_CAPTURE_LOG") == "debug":
        _say(msg)


# ----------------------------------------------------------------------------
# the build, once per torch


def _version_tuple(v):
    out = []
    for part in str(v).split("+")[0].split(".")[:2]:
        digits = ""
        for c in part:
            if not c.isdigit():
                break
            digits += c
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _loaded_lib(stem):
    """The path of a torch library this process has loaded (libc10.so...)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                base = os.path.basename(path)
                if base == stem + ".so" or base.startswith(stem + ".so."):
                    return path
    except OSError:
        pass
    return None


def _build_inputs(torch):
    tdir = os.path.dirname(os.path.realpath(torch.__file__))
    incs = [p for p in (os.path.join(tdir, "include"),
                        os.path.join(tdir, "include", "torch", "csrc", "api", "include"))
            if os.path.isdir(p)]
    libs = []
    for stem in ("libc10", "libtorch_cpu"):
        p = _loaded_lib(stem) or os.path.join(tdir, "lib", stem + ".so")
        if not os.path.exists(p):
            raise RuntimeError("%s.so not found (looked in this process and %s)"
                               % (stem, os.path.join(tdir, "lib")))
        libs.append(os.path.realpath(p))
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    return incs, libs, abi


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kvscope", "torch-ops")


def _build(torch):
    """The hook's shared library for this torch: cached, else compiled."""
    import hashlib
    import subprocess

    incs, libs, abi = _build_inputs(torch)
    cxx = os.environ.get("CXX") or "c++"
    src = os.path.join(_HERE, "kvs_torch_ops.cpp")
    h = hashlib.sha256()
    for part in (torch.__version__, cxx, str(abi)) + tuple(incs) + tuple(libs):
        h.update(part.encode() + b"\0")
    for p in libs:
        st = os.stat(p)
        h.update(("%d %d" % (st.st_size, int(st.st_mtime))).encode())
    for name in ("kvs_torch_ops.cpp", "kvs_torch_ops.h"):
        with open(os.path.join(_HERE, name), "rb") as f:
            h.update(f.read())
    safe_ver = "".join(c if c.isalnum() or c in "._-" else "_" for c in torch.__version__)
    d = os.path.join(_cache_dir(), "torch-%s-%s" % (safe_ver, h.hexdigest()[:16]))
    so, log, failed = (os.path.join(d, n) for n in ("kvs_torch_ops.so", "build.log", "FAILED"))
    if os.path.exists(so):
        return so
    if os.path.exists(failed):
        raise RuntimeError("an earlier build of the hook for torch %s failed (log: %s; remove "
                           "%s to try again)" % (torch.__version__, log, d))
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:  # no writable home: a folder of this user's in the temporary folder
        import tempfile
        d = os.path.join(tempfile.gettempdir(), "kvscope-torch-ops-%d" % os.getuid(),
                         os.path.basename(d))
        so, log, failed = (os.path.join(d, n) for n in ("kvs_torch_ops.so", "build.log", "FAILED"))
        if os.path.exists(so):
            return so
        os.makedirs(d, exist_ok=True)
    import fcntl
    with open(os.path.join(d, "lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)  # another process may be building it
        if os.path.exists(so):
            return so
        _say("building the hook for torch %s (once; cached in %s)" % (torch.__version__, d))
        tmp = "%s.%d.tmp" % (so, os.getpid())
        # -DNDEBUG as torch's own release build: without it RecordFunction has
        # a debug-only member (another layout) that its inline inputs() checks
        cmd = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-w",
               "-DNDEBUG", "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-I" + _HERE]
        cmd += ["-I" + p for p in incs]
        cmd += [src, "-o", tmp] + libs
        cmd += ["-Wl,-rpath," + os.path.dirname(p) for p in libs]
        with open(log, "w") as lf:
            lf.write(" ".join(cmd) + "\n")
            lf.flush()
            try:
                rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
            except OSError as e:
                lf.write("%s\n" % e)
                rc = -1
        if rc != 0 or not os.path.exists(tmp):
            open(failed, "w").close()
            raise RuntimeError("cannot build the hook for torch %s (%s failed; log: %s)"
                               % (torch.__version__, cxx, log))
        os.replace(tmp, so)
    return so


# ----------------------------------------------------------------------------
# after `import torch`


def _install(torch):
    _state["seen"] = True
    ver = getattr(torch, "__version__", "?")
    if _version_tuple(ver) < _MIN_TORCH:
        _say("torch %s is older than %d.%d, which the hook needs: no torch ops in the trace"
             % ((ver,) + _MIN_TORCH))
        return
    lib = os.environ.get("CUDA_INJECTION64_PATH")
    if not lib:
        _say("CUDA_INJECTION64_PATH is not set (not under kvscope capture?): no torch ops")
        return
    try:
        so = _build(torch)
        import ctypes
        hook = ctypes.CDLL(so)
        err = ctypes.create_string_buffer(512)
        if hook.kvs_torch_ops_install(lib.encode(), err, ctypes.c_size_t(len(err))) != 0:
            raise RuntimeError(err.value.decode(errors="replace"))
    except Exception as e:  # never into the program
        _say("%s; the capture goes on without torch ops" % e)
        return
    _debug("hook loaded for torch %s (%s)" % (ver, so))
    _profiler_flag(torch, hook)
    _record_function_fast(torch, hook)


def _profiler_flag(torch, hook):
    """torch.autograd.profiler._is_profiler_enabled reads true while the
    capture records (the hook's kvs_torch_ops_recording_flag) as well as
    while torch.profiler runs: Inductor records each Triton kernel launch
    (its name and arguments' shapes, what torch.profiler's trace shows as
    the kernel's op) and Dynamo its compiled regions as RecordFunction ranges
    only while that module attribute is true. torch.profiler's own setting
    (a write to the module's globals) is kept and read as before; torch
    without the attribute (before 2.1) is left alone, unless
    KVS_TORCH_OPS_FLAG_TEST=1 (the CPU test's torch 1.13)."""
    import ctypes
    import types

    mod = getattr(getattr(torch, "autograd", None), "profiler", None)
    if not isinstance(mod, types.ModuleType) or type(mod) is not types.ModuleType:
        return  # not the plain module this expects: left as it is
    if "_is_profiler_enabled" not in mod.__dict__ and os.environ.get("KVS_TORCH_OPS_FLAG_TEST") != "1":
        return
    try:
        flag = ctypes.c_int.in_dll(hook, "kvs_torch_ops_recording_flag")
    except (ValueError, AttributeError):
        return
    g = mod.__dict__
    g.setdefault("_is_profiler_enabled", False)

    class _ProfilerModule(types.ModuleType):
        # a data descriptor on the module's type: read before the module's
        # dict, which keeps torch.profiler's own value
        @property
        def _is_profiler_enabled(self):
            return bool(g["_is_profiler_enabled"]) or flag.value != 0

        @_is_profiler_enabled.setter
        def _is_profiler_enabled(self, v):
            g["_is_profiler_enabled"] = v

    try:
        mod.__class__ = _ProfilerModule
    except TypeError:
        return
    _debug("torch.autograd.profiler._is_profiler_enabled follows the capture's window")


def _record_function_fast(torch, hook):
    """torch._C._profiler._RecordFunctionFast, which Inductor opens around
    each Triton kernel launch (named after the kernel, with its arguments),
    starts a RecordFunction only while torch.profiler runs, so kvscope's
    observer never sees those ops. A stand-in class of the same signature
    takes its place: while torch.profiler runs, or while the capture does
    not record, it is the original (the same object does the work); while
    the capture records and torch.profiler does not, it hands the op to the
    hook (kvs_torch_ops_py_begin/end) with the arguments torch.profiler
    would keep: tensors' sizes and dtypes, scalars, "" for None and strings.
    torch without the class is left alone, unless KVS_TORCH_OPS_FLAG_TEST=1
    (the CPU test's torch 1.13: a stand-in over a no-op original)."""
    import ctypes

    prof = getattr(getattr(torch, "_C", None), "_profiler", None)
    orig = getattr(prof, "_RecordFunctionFast", None)
    if orig is None and prof is not None and os.environ.get("KVS_TORCH_OPS_FLAG_TEST") == "1":
        class orig(object):  # noqa: N801 (the test's stand-in for torch's class)
            def __init__(self, *args, **kwargs):
                pass

            def __enter__(self):
                return None

            def __exit__(self, *exc):
                return None
    if orig is None:
        return
    try:
        flag = ctypes.c_int.in_dll(hook, "kvs_torch_ops_recording_flag")
        begin = hook.kvs_torch_ops_py_begin
        end = hook.kvs_torch_ops_py_end
    except (ValueError, AttributeError):
        return
    begin.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_int, ctypes.c_int]
    begin.restype = ctypes.c_int
    end.argtypes = []
    end.restype = None
    enabled = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", None)
    if enabled is None:
        enabled = getattr(torch.autograd, "_profiler_enabled", lambda: False)
    tensor = torch.Tensor
    scalar = (bool, int, float)
    # what kvs_torch_ops_py_begin reads for an argument that is not a tensor
    SCALAR, SCALAR_LIST, OTHER = 1, 2, 3
    arrays = {}

    def kind_of(v):
        if isinstance(v, scalar):
            return SCALAR
        if isinstance(v, list):  # torch.profiler's scalar list: at most 30
            return SCALAR_LIST if len(v) <= 30 and all(isinstance(x, scalar) for x in v) else OTHER
        return OTHER if v is None or isinstance(v, (str, tuple)) else 0

    def begin_op(name, vals, kw):
        user = isinstance(kw, dict) and kw.get("scope") == "user_scope"
        if not isinstance(name, str):
            return False
        vals = vals if isinstance(vals, (list, tuple)) and not user else ()
        n = len(vals)
        arr_t = arrays.get(n)
        if arr_t is None:
            arr_t = arrays[n] = ctypes.c_size_t * n
        arr = arr_t()
        for i, v in enumerate(vals):
            arr[i] = v._cdata if isinstance(v, tensor) else kind_of(v)
        return begin(name.encode("utf-8", "replace"), arr, n, 1 if user else 0) == 1

    class _RecordFunctionFast(object):
        __slots__ = ("_inner", "_args", "_kwargs", "_mine")

        def __init__(self, *args, **kwargs):
            self._inner = orig(*args, **kwargs)  # its own checks of the arguments
            self._args = args
            self._kwargs = kwargs
            self._mine = False

        def __enter__(self):
            if flag.value and not enabled():
                a, k = self._args, self._kwargs
                try:
                    self._mine = begin_op(a[0] if a else k.get("name"),
                                          a[1] if len(a) > 1 else k.get("input_values"),
                                          a[2] if len(a) > 2 else k.get("keyword_values"))
                except Exception:  # never into the program
                    self._mine = False
                return None
            return self._inner.__enter__()

        def __exit__(self, *exc):
            if self._mine:
                self._mine = False
                end()
                return None
            return self._inner.__exit__(*exc)

    _RecordFunctionFast.__module__ = getattr(orig, "__module__", __name__)
    _RecordFunctionFast.__doc__ = getattr(orig, "__doc__", None)
    try:
        prof._RecordFunctionFast = _RecordFunctionFast
    except (AttributeError, TypeError):
        return
    _debug("torch._C._profiler._RecordFunctionFast records while the capture does")


class _TorchFinder(object):
    """Finds nothing itself: when `torch` is imported, wraps its loader's
    exec_module (on that loader object only, spec and loader unchanged) so
    that the hook is installed right after torch has been executed."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)  # once; and not found again below
        except ValueError:
            pass
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        inner = getattr(loader, "exec_module", None)
        if inner is None:
            return spec

        def exec_module(module):
            try:
                del loader.exec_module  # the class's own again
            except AttributeError:
                pass
            inner(module)
            try:
                _install(module)
            except Exception as e:
                _say("%s; the capture goes on without torch ops" % e)

        try:
            loader.exec_module = exec_module
        except Exception:
            pass
        return spec


def _at_exit():
    if (not _state["seen"] and os.environ.get("KVS_CAPTURE_TORCH_OPS") == "on" and
            os.environ.get("KVS_CAPTURE_ROOT_PID") == str(os.getpid())):
        _say("--torch-ops on, but the program never imported torch")


# ----------------------------------------------------------------------------
# start-up: leave sys.path as it was, chain the sitecustomize we shadow


def _chain():
    """Import the sitecustomize Python would have imported without this
    folder first (Debian's own, a virtualenv's, the user's), as site.py
    would: a plain .py one is run without importing importlib's helpers, so
    that sys.modules looks as it would have."""
    path = None
    for p in sys.path:
        base = os.path.join(p or os.getcwd(), "sitecustomize")
        if os.path.isfile(base + ".py"):
            path = base + ".py"
            break
        if os.path.isdir(base) or any(os.path.exists(base + ext) for ext in (".pyc", ".so")):
            path = ""  # a package or a compiled module: importlib's way
            break
    if path is None:
        return
    try:
        if path:
            mod = type(sys)("sitecustomize")
            mod.__file__ = path
            sys.modules["sitecustomize"] = mod
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, mod.__dict__)
        else:
            import importlib.machinery
            import importlib.util
            spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
            if spec is not None and spec.loader is not None:
                mod = importlib.util.module_from_spec(spec)
                sys.modules["sitecustomize"] = mod
                spec.loader.exec_module(mod)
    except Exception as e:
        # what site.py prints for a sitecustomize that fails
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                         "%s: %s\n" % (type(e).__name__, e))


def _start():
    def ours(p):
        try:
            return os.path.realpath(p or os.getcwd()) == os.path.realpath(_HERE)
        except OSError:
            return False

    sys.path[:] = [p for p in sys.path if not ours(p)]
    if "torch" in sys.modules:
        _install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())
    if os.environ.get("KVS_CAPTURE_TORCH_OPS") == "on":
        import atexit
        atexit.register(_at_exit)
    _chain()


_start()
