"""Build of flux_torch (see pyproject.toml): libflux.so with CMake, then the torch extension.

1. libflux.so. With FLUX_PY_LIBFLUX_DIR set to a configured C++ build directory (scripts/build.sh's, whose
   FLUX_BUILD_SHARED_LIB is ON: the default), its `flux_shared` target is brought up to date there and used:
   the kernels the C++ tree compiled are linked, not compiled a second time (scripts/python_tests.sh does
   this). Otherwise CMake configures the repository into ${FLUX_PY_BUILD_DIR:-build/py} with FLUX_SHARED=ON
   (no tests, no tools) and builds the `flux` target. CUTLASS comes as for every build (the PyPI wheel,
   or FLUX_CUTLASS_DIR; an already unpacked wheel under build/_deps is reused so an offline machine that
   ran scripts/build.sh once needs nothing). FLUX_CMAKE_ARGS adds CMake arguments.
2. torch.utils.cpp_extension compiles python/csrc/flux_torch.cpp against the installed torch into
   flux_torch/_C, linked to libflux.so, which is copied beside it (rpath $ORIGIN).

"The installed torch": with `pip install --no-build-isolation .` it is the one importable here. With
build isolation (plain `pip install .`) the isolated environment has no torch, so this script asks the
interpreter outside it (the same python, without pip's isolation variables) where its torch is and builds
against that one — never a second copy downloaded for the build, whose ABI might differ.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def _find_outer_torch():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    probe = "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"
    for python in (sys.executable, getattr(sys, "_base_executable", sys.executable), shutil.which("python3") or ""):
        if not python:
            continue
        try:
            out = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[-1]
    return None


try:
    import torch  # noqa: F401
except ImportError:
    site = _find_outer_torch()
    if site is None:
        sys.exit("flux_torch: PyTorch is not installed; install it first (e.g. pip install torch==2.11.0), then "
                 "pip install . (or pip install --no-build-isolation . offline)")
    sys.path.append(site)
    import torch  # noqa: F401,E402

from torch.utils.cpp_extension import BuildExtension, CUDAExtension  # noqa: E402


class BuildWithLibflux(BuildExtension):
    def run(self):
        env = dict(os.environ)
        env["PATH"] = env.get("PATH", "") + ":/usr/local/cuda/bin"
        jobs = os.environ.get("MAX_JOBS", str(os.cpu_count() or 2))
        prebuilt = os.environ.get("FLUX_PY_LIBFLUX_DIR", "")
        if prebuilt:
            build = Path(prebuilt).resolve()
            cache = build / "CMakeCache.txt"
            if not cache.exists() or "FLUX_BUILD_SHARED_LIB:BOOL=ON" not in cache.read_text():
                raise RuntimeError(f"flux_torch: FLUX_PY_LIBFLUX_DIR={prebuilt} is not a C++ build directory "
                                   "configured with FLUX_BUILD_SHARED_LIB=ON (run scripts/build.sh there first, "
                                   "or unset FLUX_PY_LIBFLUX_DIR to build libflux.so here)")
            subprocess.run(["cmake", "--build", str(build), "--target", "flux_shared", "-j", jobs], check=True,
                           env=env)
        else:
            build = Path(os.environ.get("FLUX_PY_BUILD_DIR", ROOT / "build" / "py"))
            args = ["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DFLUX_SHARED=ON", "-DFLUX_BUILD_TESTS=OFF", "-DFLUX_BUILD_TOOLS=OFF"]
            unpacked = ROOT / "build" / "_deps" / "cutlass" / "unpacked" / "cutlass_library" / "source"
            if (unpacked / "include" / "cutlass" / "cutlass.h").exists() and "FLUX_CUTLASS_DIR" not in os.environ.get(
                    "FLUX_CMAKE_ARGS", ""):
                args.append(f"-DFLUX_CUTLASS_DIR={unpacked}")
            args += os.environ.get("FLUX_CMAKE_ARGS", "").split()
            subprocess.run(args, check=True, env=env)
            subprocess.run(["cmake", "--build", str(build), "--target", "flux", "-j", jobs], check=True, env=env)
        for ext in self.extensions:
            ext.library_dirs.append(str(build))
        super().run()
        # libflux.so beside the extension (its rpath is $ORIGIN).
        libs = sorted(build.glob("libflux.so*"))
        if not libs:
            raise RuntimeError(f"flux_torch: no libflux.so in {build} after the CMake build")
        dest = Path(self.get_ext_fullpath("flux_torch._C")).parent
        for lib in libs:
            target = dest / lib.name
            if target.exists() or target.is_symlink():
                target.unlink()
            shutil.copy2(lib, target, follow_symlinks=True)


setup(
    ext_modules=[
        CUDAExtension(
            "flux_torch._C",
            ["python/csrc/flux_torch.cpp"],
            include_dirs=[str(ROOT / "include")],
            libraries=["flux"],
            extra_compile_args={"cxx": ["-O2", "-std=c++17"]},
            # -lstdc++ first: the shared C++ runtime, even where the compiler links libstdc++ statically by
            # default (seen on the GPU machine: a private libstdc++ copy inside the extension crashed in
            # std::ostream next to torch's). The version script exports the module init only.
            extra_link_args=["-Wl,-rpath,$ORIGIN", "-lstdc++",
                             f"-Wl,--version-script={ROOT / 'python' / 'csrc' / 'flux_torch.map'}"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibflux},
)
