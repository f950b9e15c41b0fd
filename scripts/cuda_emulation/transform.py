"""Turns a .cu file of cuda/sparse/ into C++ for the host emulation (see README.md).

Kernel launches become emu_launch calls, the cp.async inline assembly becomes emu_* calls and
shared memory becomes static storage. Fails loudly on anything it does not know, so that a
kernel change cannot silently slip past the emulation.

Usage: transform.py FILE.cu > FILE.cpp
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1]).read_text()
src = src.replace('#include <mma.h>\n', '')  # emu_cuda.hpp provides nvcuda::wmma
src = src.replace('__shared__ __align__(128)', 'alignas(128) static')  # alignas must come first
src = src.replace('#include "../../src/sparse/cuda/launch.hpp"', '#include "sparse_launch.hpp"')
src = re.sub(r'asm volatile\("cp\.async\.cg\.shared\.global.*?\);', 'emu_cp_async_16(smem, gmem, src_bytes);',
             src, flags=re.S)
src = re.sub(r'asm volatile\("cp\.async\.commit_group.*?\);', 'emu_commit();', src, flags=re.S)
src = re.sub(r'asm volatile\("cp\.async\.wait_group.*?\);', 'emu_wait(Pending);', src, flags=re.S)
if 'asm' in src:
    sys.exit(f'{sys.argv[1]}: inline assembly the emulation does not know')
src, launches = re.subn(r'([\w:]+(?:<[^<>]*>)?)<<<(.*?), (\S+), 0, stream>>>\((.*?)\);',
                        r'emu_launch(\2, \3, [&] { \1(\4); });', src, flags=re.S)
if launches != 1 or '<<<' in src:
    sys.exit(f'{sys.argv[1]}: expected exactly one launch of the form kernel<<<grid, threads, 0, stream>>>(...)')
sys.stdout.write(src)
