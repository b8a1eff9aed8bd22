"""/proc/cpuinfo texts shared by the machine-record tests (tests/results/test_machine.py,
tests/results/test_host_check.py)."""

AMD = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.406
cache size\t: 512 KB
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512_bf16 sha_ni

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
"""
